"""Stand-ins for the provider APIs, in process (no network): what the tests' "network" answers.

The answers: `anthropic_message` (the smallest valid Anthropic Messages body), `anthropic_events`
(the same as server-sent events), `chat_completion` and `chat_chunks` (OpenAI Chat Completions,
whole and streamed), `response_object` (OpenAI Responses), for tests that drive a real SDK client
over an in-process transport (`httpx2.MockTransport`).

`Provider` answers each API with those fixed bodies and keeps every request's bytes as sent (the
capture tests compare them with what a cassette holds).

`StandInApi` is for the framework tests that record from it: it answers Anthropic Messages (JSON
or server-sent events, as the request asks), OpenAI Chat Completions and OpenAI Responses like the
real APIs do for a one-tool agent: the first turn calls the first tool the request offers with
`{"city": "Paris"}`, and once a tool result is in the conversation it answers in text. It keeps
every request body it got. `transport()` is what a project's `harness_upstream` fixture returns.

Inner pytest projects import this module as `stand_ins`, with `tests/support` on their path
(`pytester.syspathinsert(SUPPORT)`).
"""

from __future__ import annotations

import json
from typing import Any

import httpx2


def anthropic_message(text: str = "Sunny.") -> dict[str, Any]:
    """A complete Anthropic Messages response holding one text block."""
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }


# -- the capture tests' provider: fixed answers, every request's bytes kept ----------------------


def anthropic_events(text: str = "Sunny today.") -> bytes:
    message = {**anthropic_message(), "content": [], "stop_reason": None}
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


def chat_completion(text: str = "Hello.") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }


def chat_chunks(words: list[str]) -> bytes:
    chunks = []
    for index, word in enumerate(words):
        last = index == len(words) - 1
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-test",
            "choices": [
                {"index": 0, "delta": {"content": word}, "finish_reason": "stop" if last else None}
            ],
        }
        chunks.append(f"data: {json.dumps(chunk)}\n\n")
    return ("".join(chunks) + "data: [DONE]\n\n").encode()


def response_object(text: str = "Done.") -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "model": "gpt-test",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


class Provider:
    """A stand-in for the providers' APIs that keeps every request it got, bytes as sent."""

    def __init__(self, *, extra_headers: dict[str, str] | None = None) -> None:
        self.bodies: list[bytes] = []
        self.extra_headers = extra_headers or {}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(request.content)
        body = json.loads(request.content)
        headers = dict(self.extra_headers)
        if request.url.path.endswith("/messages"):
            if body.get("stream"):
                headers["content-type"] = "text/event-stream"
                return httpx2.Response(200, content=anthropic_events(), headers=headers)
            return httpx2.Response(200, json=anthropic_message(), headers=headers)
        if request.url.path.endswith("/responses"):
            return httpx2.Response(200, json=response_object(), headers=headers)
        if body.get("stream"):
            headers["content-type"] = "text/event-stream"
            return httpx2.Response(200, content=chat_chunks(["Hel", "lo."]), headers=headers)
        return httpx2.Response(200, json=chat_completion(), headers=headers)

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)


# -- the framework tests' API: a one-tool agent's turns ------------------------------------------

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
