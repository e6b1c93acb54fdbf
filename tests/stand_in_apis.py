"""In-process stand-ins for the provider APIs the framework tests record from (no network).

`StandInApi` answers Anthropic Messages (JSON or server-sent events, as the request asks), OpenAI
Chat Completions and OpenAI Responses like the real APIs do for a one-tool agent: the first turn
calls the first tool the request offers with `{"city": "Paris"}`, and once a tool result is in
the conversation it answers in text. It keeps every request body it got. `transport()` is what a
project's `harness_upstream` fixture returns.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

ANSWER = "Paris is sunny: a good day for a walk."
ARGUMENTS = {"city": "Paris"}


class StandInApi:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        path = request.url.path
        if path.endswith("/messages"):
            return anthropic_answer(body)
        if path.endswith("/chat/completions"):
            return chat_answer(body)
        if path.endswith("/responses"):
            return responses_answer(body)
        return httpx2.Response(404, json={"error": {"message": f"no stand-in for {path}"}})


def _first_tool(body: dict[str, Any]) -> str | None:
    for tool in body.get("tools") or ():
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if isinstance(name, str):
            return name
    return None


# -- Anthropic Messages --------------------------------------------------------------------------


def anthropic_answer(body: dict[str, Any]) -> httpx2.Response:
    answered = any(
        isinstance(block, dict) and block.get("type") == "tool_result"
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )
    tool = _first_tool(body)
    if tool is not None and not answered:
        blocks: list[dict[str, Any]] = [
            {"type": "tool_use", "id": "toolu_01", "name": tool, "input": ARGUMENTS}
        ]
        stop = "tool_use"
    else:
        blocks, stop = [{"type": "text", "text": ANSWER}], "end_turn"
    usage = {"input_tokens": 400, "output_tokens": 12, "cache_read_input_tokens": 0}
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return httpx2.Response(200, json=message)
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {**message, "content": [], "stop_reason": None},
            },
        )
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
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
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 12},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx2.Response(
        200, content=text.encode(), headers={"content-type": "text/event-stream"}
    )


# -- OpenAI Chat Completions ---------------------------------------------------------------------


def chat_answer(body: dict[str, Any]) -> httpx2.Response:
    answered = any(message.get("role") == "tool" for message in body["messages"])
    tool = _first_tool(body)
    if tool is not None and not answered:
        call = {
            "id": "call_01",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(ARGUMENTS)},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": ANSWER}, "stop"
    completion = {
        "id": "chatcmpl-01",
        "object": "chat.completion",
        "created": 1767225600,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 400,
            "completion_tokens": 12,
            "total_tokens": 412,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }
    if not body.get("stream"):
        return httpx2.Response(200, json=completion)
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **call} for call in delta["tool_calls"]]
    chunk = {
        **completion,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    text = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
    return httpx2.Response(
        200, content=text.encode(), headers={"content-type": "text/event-stream"}
    )


# -- OpenAI Responses ----------------------------------------------------------------------------


def responses_answer(body: dict[str, Any]) -> httpx2.Response:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    answered = any(
        isinstance(item, dict) and item.get("type") == "function_call_output" for item in items
    )
    tool = _first_tool(body)
    if tool is not None and not answered:
        output: list[dict[str, Any]] = [
            {
                "type": "function_call",
                "id": "fc_01",
                "call_id": "call_01",
                "name": tool,
                "arguments": json.dumps(ARGUMENTS),
                "status": "completed",
            }
        ]
    else:
        output = [
            {
                "type": "message",
                "id": "msg_01",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        ]
    response = {
        "id": "resp_01",
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "model": body["model"],
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": 400,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 12,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 412,
        },
    }
    return httpx2.Response(200, json=response)
