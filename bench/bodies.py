"""What the peers are handed: a transcript's requests as an SDK sends them, and its header.

Every peer checks the same transcript our pipeline replays: the model requests the recorded
scenario dispatches, as Anthropic Messages bodies (model, max_tokens, system, tools, messages),
with the model's answers as responses. The bodies are made once, outside any timing, by running
the scenario on its recorded answers without the harness's checks; the expected header comes from
the pin, as ours does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec

from harness.agent import (
    AssistantMessage,
    Message,
    Request,
    ScriptedAdapter,
    ScriptedReply,
    TextBlock,
    ToolResult,
    ToolResultBlock,
    UserMessage,
)
from harness.scenarios._formats import Fixture
from harness.scenarios._pins import Pin
from harness.scenarios._run import run_sync

URL = "https://api.anthropic.com/v1/messages"
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
HEADER_KEYS = ("model", "max_tokens", "system", "tools")  # the cached prefix of a body


def header_fields(request: Request, pin: Pin | None = None) -> dict[str, Any]:
    """The header part of a body: the request's, or its model settings with the pin's system
    text and tools (what the transcript is expected to send)."""
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    system = pin.system if pin is not None else request.system
    tools = pin.tools.initial if pin is not None else request.tools
    if isinstance(system, str) and system:
        body["system"] = system
    if isinstance(tools, tuple) and tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
    # Plain JSON values (tuples become lists, frozen dicts dicts), as json.loads gives them back.
    return json.loads(msgspec.json.encode(body))  # type: ignore[no-any-return]


def request_body(request: Request) -> dict[str, Any]:
    """The request as the Anthropic SDK would send it."""
    body = header_fields(request)
    body["messages"] = json.loads(msgspec.json.encode(list(request.messages)))
    return body


def response_body(answer: ScriptedReply, index: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.input)}
        for c in answer.tool_calls
    ]
    return {
        "id": f"msg_{index:06d}",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": answer.resolved_stop_reason(),
    }


def dispatched_requests(fixture: Fixture) -> list[Request]:
    """Every request the transcript sends, in full (replayed once, outside any timing)."""
    assert fixture.answers is not None
    adapter = ScriptedAdapter(fixture.answers.answers)
    run_sync(fixture.scenario, adapter, rebuild=False, keep_requests=False)
    return adapter.requests


def encoded_bodies(requests: list[Request]) -> Iterator[bytes]:
    """Each request's body as compact JSON, one at a time (a long transcript's bodies together
    would not fit in memory as Python values: each holds the whole conversation so far)."""
    encode = msgspec.json.Encoder().encode
    made: tuple[object, ...] = ()
    head = b""
    for request in requests:
        parts = (request.model, request.max_tokens, request.system, request.tools)
        if len(made) != len(parts) or not all(a is b for a, b in zip(made, parts, strict=True)):
            made, head = parts, encode(header_fields(request))[:-1]
        yield head + b',"messages":' + encode(list(request.messages)) + b"}"


def body_bytes(fixture: Fixture, pin: Pin) -> int:
    """The request bodies a cassette of this transcript must hold at least, in compact JSON.

    Computed from the log without building any request: every request carries the whole header
    and the whole conversation so far, so the total grows with steps x (header + conversation).
    A YAML cassette adds quoting, indentation, responses and HTTP headers on top.
    """
    assert fixture.log is not None and fixture.requests is not None
    first = fixture.requests.requests[0]
    fields: dict[str, Any] = {"model": first.model, "max_tokens": first.max_tokens}
    if pin.system:
        fields["system"] = pin.system
    if pin.tools.initial:
        fields["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in pin.tools.initial
        ]
    header = msgspec.json.encode(fields)
    head = len(header) + len(',"messages":[]')
    committed = 0  # bytes of committed messages, each followed by a comma
    count = 0
    results: list[ToolResultBlock] = []
    total = 0

    def size(message: Message) -> int:
        return len(msgspec.json.encode(message))

    def flush() -> None:
        nonlocal committed, count
        if results:
            committed += size(Message("user", tuple(results))) + 1
            count += 1
            results.clear()

    for event in fixture.log.events:
        if isinstance(event, AssistantMessage):
            # The request went out just before its answer was logged.
            pending = size(Message("user", tuple(results))) + 1 if results else 0
            total += head + committed + pending - (1 if committed or pending else 0)
            flush()
            committed += size(Message("assistant", event.content)) + 1
            count += 1
        elif isinstance(event, UserMessage):
            flush()
            committed += size(Message("user", (TextBlock(event.text),))) + 1
            count += 1
        elif isinstance(event, ToolResult):
            results.append(ToolResultBlock(event.tool_use_id, event.content, event.is_error))
    return total
