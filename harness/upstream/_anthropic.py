"""The Anthropic Messages shape: `/v1/messages` (JSON or events), `/v1/messages/count_tokens`.

Also Claude on Vertex (`:rawPredict`, `:streamRawPredict`) and on Bedrock's `/invoke`, which take
the same body and answer the same message. A request that continues a server-held thread
(`"thread": {"type": "continue", "previous_message_id": ...}`, the anthropic SDK's tool runner
default since 2.17) carries only its new turn; the stand-in's message ids hold their turn's
number (`msg_standin003`), so the turn it gets still depends on the request alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from harness.upstream._script import Turn, call_id, estimate_tokens
from harness.upstream._shape import Reply, assistant_runs, error, json_reply, sse

__all__ = ["AnthropicMessages"]

_ASSISTANT: Final = frozenset({"assistant"})
_MESSAGE_ID: Final = re.compile(r"msg_standin(\d{3})")


class AnthropicMessages:
    name = "anthropic-messages"

    def claims(self, path: str, body: Mapping[str, Any]) -> bool:
        if path.endswith("/v1/messages/count_tokens"):
            return True
        return (
            path.endswith("/messages")
            or path.endswith(":rawPredict")
            or path.endswith(":streamRawPredict")
            or (path.endswith("/invoke") and "anthropic_version" in body)
        )

    def answered(self, body: Mapping[str, Any]) -> int:
        messages = body.get("messages")
        items = messages if isinstance(messages, list) else []
        return _held(body) + assistant_runs((_role(message) for message in items), _ASSISTANT)

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        tools = body.get("tools")
        return [
            tool["name"]
            for tool in (tools if isinstance(tools, list) else [])
            if isinstance(tool, dict) and isinstance(tool.get("name"), str)
        ]

    def answer(
        self, turn: Turn, index: int, body: Mapping[str, Any], path: str, query: str, size: int
    ) -> Reply:
        if path.endswith("/count_tokens"):
            return json_reply({"input_tokens": size})
        offered = self.offered(body)
        blocks: list[dict[str, Any]] = []
        if turn.text is not None:
            blocks.append({"type": "text", "text": turn.text})
        for position, call in enumerate(turn.calls):
            name = call.name or (offered[0] if offered else None)
            if name is None:
                return error(
                    f"the stand-in's turn {index + 1} calls a tool, and the request offers none"
                )
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call_id("toolu_", index, position),
                    "name": name,
                    "input": dict(call.arguments),
                }
            )
        output = estimate_tokens(json.dumps(blocks))
        message = {
            "id": f"msg_standin{index:03d}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or "claude-stand-in"),
            "content": blocks,
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": size,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": output,
            },
        }
        streamed = body.get("stream") is True or path.endswith(":streamRawPredict")
        return _events(message) if streamed else json_reply(message)


def _held(body: Mapping[str, Any]) -> int:
    """How many answers the server holds for a thread this request continues: up to and
    including the message it names (one, for an id that is not the stand-in's)."""
    thread = body.get("thread")
    if not isinstance(thread, Mapping):
        return 0
    previous = thread.get("previous_message_id")
    if not isinstance(previous, str):
        return 0
    found = _MESSAGE_ID.fullmatch(previous)
    return int(found.group(1)) + 1 if found else 1


def _role(message: object) -> str | None:
    return message.get("role") if isinstance(message, dict) else None


def _events(message: dict[str, Any]) -> Reply:
    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str | None, object]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)
