"""The Gemini shape: `:generateContent`, `:streamGenerateContent` (server-sent events with
`alt=sse`, else one JSON array), `:countTokens`; camelCase or snake_case bodies, on the Gemini
API's paths and Vertex AI's alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from harness.upstream._script import Turn, estimate_tokens
from harness.upstream._shape import Reply, assistant_runs, error, json_reply, sse

__all__ = ["Gemini"]

_MODEL: Final = frozenset({"model"})


class Gemini:
    name = "gemini"

    def claims(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.endswith((":generateContent", ":streamGenerateContent", ":countTokens"))

    def answered(self, body: Mapping[str, Any]) -> int:
        contents = body.get("contents")
        items = contents if isinstance(contents, list) else []
        return assistant_runs(
            (c.get("role") if isinstance(c, dict) else None for c in items), _MODEL
        )

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        tools = body.get("tools")
        names = []
        for tool in tools if isinstance(tools, list) else []:
            if not isinstance(tool, dict):
                continue
            declared = tool.get("functionDeclarations", tool.get("function_declarations"))
            for function in declared if isinstance(declared, list) else []:
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    names.append(function["name"])
        return names

    def answer(
        self, turn: Turn, index: int, body: Mapping[str, Any], path: str, query: str, size: int
    ) -> Reply:
        if path.endswith(":countTokens"):
            return json_reply({"totalTokens": size})
        offered = self.offered(body)
        parts: list[dict[str, Any]] = []
        if turn.text is not None:
            parts.append({"text": turn.text})
        for call in turn.calls:
            name = call.name or (offered[0] if offered else None)
            if name is None:
                return error(
                    f"the stand-in's turn {index + 1} calls a tool, and the request offers none"
                )
            parts.append({"functionCall": {"name": name, "args": dict(call.arguments)}})
        produced = estimate_tokens(json.dumps(parts))
        model = path.rsplit("/", 1)[-1].split(":", 1)[0] or "gemini-stand-in"
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": size,
                "candidatesTokenCount": produced,
                "totalTokenCount": size + produced,
                "cachedContentTokenCount": 0,
            },
            "modelVersion": model,
            "responseId": f"standin{index:03d}",
        }
        if not path.endswith(":streamGenerateContent"):
            return json_reply(answer)
        if "alt=sse" in query:
            return sse([(None, answer)])
        return json_reply([answer])
