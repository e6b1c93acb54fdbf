"""The OpenAI shapes: Chat Completions and Responses (JSON or events), and the small endpoints
frameworks call beside them (`/responses/input_tokens`, `/models`).

A Responses request that continues a stored response (`previous_response_id`) carries only the
new input; the stand-in's response ids hold their turn's number (`resp_standin003`), so the turn a
continued request is at is read from the id, and the stand-in keeps no state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from harness.upstream._script import Turn, arguments_text, call_id, estimate_tokens
from harness.upstream._shape import Reply, assistant_runs, error, json_reply, sse

__all__ = ["OpenAIChat", "OpenAIResponses"]

_CREATED: Final = 1767225600  # a fixed time: the same answer every run
_ASSISTANT: Final = frozenset({"assistant"})
_RESPONSE_ID: Final = re.compile(r"resp_standin(\d{3})")


def _names(tools: object, *path: str) -> list[str]:
    found = []
    for tool in tools if isinstance(tools, list) else []:
        value: Any = tool
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            found.append(value)
    return found


def _named(turn: Turn, offered: list[str], index: int) -> list[str] | Reply:
    names = []
    for call in turn.calls:
        name = call.name or (offered[0] if offered else None)
        if name is None:
            return error(
                f"the stand-in's turn {index + 1} calls a tool, and the request offers none"
            )
        names.append(name)
    return names


class OpenAIChat:
    name = "openai-chat"

    def claims(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.endswith("/chat/completions") or path.endswith("/models")

    def answered(self, body: Mapping[str, Any]) -> int:
        messages = body.get("messages")
        items = messages if isinstance(messages, list) else []
        roles = (item.get("role") if isinstance(item, dict) else None for item in items)
        return assistant_runs(roles, _ASSISTANT)

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        return _names(body.get("tools"), "function", "name") or _names(
            body.get("functions"), "name"
        )

    def answer(
        self, turn: Turn, index: int, body: Mapping[str, Any], path: str, query: str, size: int
    ) -> Reply:
        if path.endswith("/models"):
            return json_reply(
                {"object": "list", "data": [_model(str(body.get("model") or "gpt-stand-in"))]}
            )
        names = _named(turn, self.offered(body), index)
        if isinstance(names, Reply):
            return names
        calls = [
            {
                "id": call_id("call_", index, position),
                "type": "function",
                "function": {"name": name, "arguments": arguments_text(call)},
            }
            for position, (name, call) in enumerate(zip(names, turn.calls, strict=True))
        ]
        message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        output = estimate_tokens(json.dumps(message))
        usage = {
            "prompt_tokens": size,
            "completion_tokens": output,
            "total_tokens": size + output,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
        finish = "tool_calls" if calls else "stop"
        head = {
            "id": f"chatcmpl-standin{index:03d}",
            "created": _CREATED,
            "model": str(body.get("model") or "gpt-stand-in"),
        }
        if body.get("stream") is not True:
            choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            return json_reply(
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        chunk = {**head, "object": "chat.completion.chunk"}
        events: list[tuple[str | None, object]] = [
            (
                None,
                {
                    **chunk,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": ""},
                            "finish_reason": None,
                        }
                    ],
                },
            )
        ]
        if turn.text:
            events.append(
                (
                    None,
                    {
                        **chunk,
                        "choices": [
                            {"index": 0, "delta": {"content": turn.text}, "finish_reason": None}
                        ],
                    },
                )
            )
        for position, call in enumerate(calls):
            delta = {"tool_calls": [{"index": position, **call}]}
            events.append(
                (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            )
        events.append(
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        )
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            events.append((None, {**chunk, "choices": [], "usage": usage}))
        events.append((None, "[DONE]"))
        return sse(events)


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": _CREATED, "owned_by": "stand-in"}


class OpenAIResponses:
    name = "openai-responses"

    def claims(self, path: str, body: Mapping[str, Any]) -> bool:
        return path.endswith("/responses") or path.endswith("/responses/input_tokens")

    def answered(self, body: Mapping[str, Any]) -> int:
        base = 0
        previous = body.get("previous_response_id")
        if isinstance(previous, str):
            found = _RESPONSE_ID.fullmatch(previous)
            base = int(found.group(1)) + 1 if found else 1
        items = body.get("input")
        entries = items if isinstance(items, list) else []
        return base + assistant_runs((_side(item) for item in entries), _ASSISTANT)

    def offered(self, body: Mapping[str, Any]) -> list[str]:
        return _names(body.get("tools"), "name")

    def answer(
        self, turn: Turn, index: int, body: Mapping[str, Any], path: str, query: str, size: int
    ) -> Reply:
        if path.endswith("/input_tokens"):
            return json_reply({"object": "response.input_tokens", "input_tokens": size})
        names = _named(turn, self.offered(body), index)
        if isinstance(names, Reply):
            return names
        output: list[dict[str, Any]] = []
        if turn.text is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_standin{index:03d}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "output_text",
                            "text": turn.text,
                            "annotations": [],
                            "logprobs": [],
                        }
                    ],
                }
            )
        for position, (name, call) in enumerate(zip(names, turn.calls, strict=True)):
            output.append(
                {
                    "type": "function_call",
                    "id": call_id("fc_", index, position),
                    "call_id": call_id("call_", index, position),
                    "name": name,
                    "arguments": arguments_text(call),
                    "status": "completed",
                }
            )
        produced = estimate_tokens(json.dumps(output))
        response = {
            "id": f"resp_standin{index:03d}",
            "object": "response",
            "created_at": _CREATED,
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "model": str(body.get("model") or "gpt-stand-in"),
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": body.get("previous_response_id"),
            "temperature": 1.0,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_p": 1.0,
            "usage": {
                "input_tokens": size,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": produced,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": size + produced,
            },
        }
        return _events(response) if body.get("stream") is True else json_reply(response)


def _side(item: object) -> str | None:
    if not isinstance(item, dict):
        return None
    if item.get("type") in ("function_call", "reasoning", "custom_tool_call"):
        return "assistant"
    role = item.get("role")
    return role if isinstance(role, str) else None


def _events(response: dict[str, Any]) -> Reply:
    number = 0
    events: list[tuple[str | None, object]] = []

    def add(kind: str, **data: Any) -> None:
        nonlocal number
        events.append((kind, {"type": kind, **data, "sequence_number": number}))
        number += 1

    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    add("response.created", response=opening)
    add("response.in_progress", response=opening)
    for place, item in enumerate(response["output"]):
        if item["type"] == "message":
            part = item["content"][0]
            add(
                "response.output_item.added",
                output_index=place,
                item={**item, "status": "in_progress", "content": []},
            )
            where = {"item_id": item["id"], "output_index": place, "content_index": 0}
            add("response.content_part.added", **where, part={**part, "text": ""})
            add("response.output_text.delta", **where, delta=part["text"], logprobs=[])
            add("response.output_text.done", **where, text=part["text"], logprobs=[])
            add("response.content_part.done", **where, part=part)
        else:
            add(
                "response.output_item.added",
                output_index=place,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            where = {"item_id": item["id"], "output_index": place}
            add("response.function_call_arguments.delta", **where, delta=item["arguments"])
            add(
                "response.function_call_arguments.done",
                **where,
                arguments=item["arguments"],
                name=item["name"],
            )
        add("response.output_item.done", output_index=place, item=item)
    add("response.completed", response=response)
    return sse(events)
