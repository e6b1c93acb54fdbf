"""The Bedrock Converse shape: `/model/{id}/converse` (JSON) and `/converse-stream` (the AWS
event stream: each event one binary message with its prelude, headers and CRCs, as botocore
reads it).
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Mapping
from typing import Any, Final

from harness.upstream._script import Turn, call_id, estimate_tokens
from harness.upstream._shape import Reply, assistant_runs, error, json_reply

__all__ = ["BedrockConverse"]

_ASSISTANT: Final = frozenset({"assistant"})
EVENT_STREAM: Final = "application/vnd.amazon.eventstream"


class BedrockConverse:
    name = "bedrock-converse"

    def claims(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.endswith(("/converse", "/converse-stream"))

    def answered(self, body: Mapping[str, Any]) -> int:
        messages = body.get("messages")
        items = messages if isinstance(messages, list) else []
        return assistant_runs(
            (m.get("role") if isinstance(m, dict) else None for m in items), _ASSISTANT
        )

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        config = body.get("toolConfig")
        tools = config.get("tools") if isinstance(config, dict) else None
        names = []
        for tool in tools if isinstance(tools, list) else []:
            spec = tool.get("toolSpec") if isinstance(tool, dict) else None
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                names.append(spec["name"])
        return names

    def answer(
        self, turn: Turn, index: int, body: Mapping[str, Any], path: str, query: str, size: int
    ) -> Reply:
        offered = self.offered(body)
        content: list[dict[str, Any]] = []
        if turn.text is not None:
            content.append({"text": turn.text})
        for position, call in enumerate(turn.calls):
            name = call.name or (offered[0] if offered else None)
            if name is None:
                return error(
                    f"the stand-in's turn {index + 1} calls a tool, and the request offers none"
                )
            use = {
                "toolUseId": call_id("tooluse_", index, position),
                "name": name,
                "input": dict(call.arguments),
            }
            content.append({"toolUse": use})
        produced = estimate_tokens(json.dumps(content))
        usage = {
            "inputTokens": size,
            "outputTokens": produced,
            "totalTokens": size + produced,
            "cacheReadInputTokens": 0,
            "cacheWriteInputTokens": 0,
        }
        stop = "tool_use" if turn.calls else "end_turn"
        if not path.endswith("/converse-stream"):
            return json_reply(
                {
                    "output": {"message": {"role": "assistant", "content": content}},
                    "stopReason": stop,
                    "usage": usage,
                    "metrics": {"latencyMs": 1},
                }
            )
        frames = [frame("messageStart", {"role": "assistant"})]
        for place, block in enumerate(content):
            if "text" in block:
                frames.append(
                    frame(
                        "contentBlockDelta",
                        {"contentBlockIndex": place, "delta": {"text": block["text"]}},
                    )
                )
            else:
                use = block["toolUse"]
                start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
                frames.append(
                    frame("contentBlockStart", {"contentBlockIndex": place, "start": start})
                )
                delta = {"toolUse": {"input": json.dumps(use["input"])}}
                frames.append(
                    frame("contentBlockDelta", {"contentBlockIndex": place, "delta": delta})
                )
            frames.append(frame("contentBlockStop", {"contentBlockIndex": place}))
        frames.append(frame("messageStop", {"stopReason": stop}))
        frames.append(frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
        return Reply(200, EVENT_STREAM, b"".join(frames))


def frame(event: str, payload: object) -> bytes:
    """One AWS event-stream message: prelude (total and header lengths, CRC), headers, payload,
    the message's CRC."""
    headers = b""
    for name, value in (
        (":event-type", event),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        headers += (
            bytes([len(name)])
            + name.encode()
            + b"\x07"
            + struct.pack(">H", len(value))
            + value.encode()
        )
    data = json.dumps(payload).encode("utf-8")
    prelude = struct.pack(">II", 12 + len(headers) + len(data) + 4, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + data
    return message + struct.pack(">I", binascii.crc32(message))
