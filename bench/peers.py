"""The peer pipeline: what a "vcrpy cassettes + syrupy snapshots" suite does with a transcript.

The cassette holds one interaction per model request: the request body as an SDK sends it (the
Anthropic Messages shape: model, max_tokens, system, tools, messages) and the model's answer as
the response, written and read with vcrpy's own persister and YAML serializer. The check decodes
each recorded body and compares it with the expected request through syrupy's default (amber)
serializer, both sides serialized, string equality: what `assert body == snapshot` does.

The peer is given its expected requests for free (built before the clock starts) and re-runs no
agent, no rebuild and no invariant; the comparison is generous to it on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from syrupy.extensions.amber import AmberDataSerializer
from vcr.persisters.filesystem import FilesystemPersister
from vcr.request import Request as VcrRequest
from vcr.serializers import yamlserializer

from bench.timing import timed
from harness.agent.llm import Request, ScriptedAdapter, ScriptedReply
from harness.agent.session import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResult,
    ToolResultBlock,
    UserMessage,
)
from harness.fixture import Fixture
from harness.pins import Pin
from harness.scenario import run_sync

URL = "https://api.anthropic.com/v1/messages"
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01"}


def request_body(request: Request) -> dict[str, Any]:
    """The request as the Anthropic SDK would send it."""
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    if isinstance(request.system, str):
        body["system"] = request.system
    if isinstance(request.tools, tuple):
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    body["messages"] = msgspec.to_builtins(request.messages)
    # Plain JSON values (tuples become lists), as json.loads gives them back.
    return json.loads(json.dumps(body))  # type: ignore[no-any-return]


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


def write_cassette(path: Path, bodies: Sequence[dict[str, Any]], fixture: Fixture) -> int:
    """Write the cassette with vcrpy's persister; return its size in bytes."""
    assert fixture.answers is not None
    requests = [VcrRequest("POST", URL, json.dumps(body), dict(HEADERS)) for body in bodies]
    responses = [
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": json.dumps(response_body(answer, i))},
        }
        for i, answer in enumerate(fixture.answers.answers[: len(bodies)])
    ]
    FilesystemPersister.save_cassette(
        path, {"requests": requests, "responses": responses}, yamlserializer
    )
    return path.stat().st_size


def load_cassette(path: Path) -> tuple[list[VcrRequest], list[dict[str, Any]]]:
    loaded = FilesystemPersister.load_cassette(path, yamlserializer)
    return loaded[0], loaded[1]


def check(requests: Sequence[VcrRequest], expected: Sequence[dict[str, Any]]) -> int:
    """Compare each recorded body with its expected request through syrupy; return the count."""
    if len(requests) != len(expected):
        raise AssertionError(f"{len(requests)} recorded requests, {len(expected)} expected")
    for index, (recorded, wanted) in enumerate(zip(requests, expected, strict=True)):
        body = json.loads(recorded.body)
        if AmberDataSerializer.serialize(body) != AmberDataSerializer.serialize(wanted):
            raise AssertionError(f"request {index + 1} differs from its snapshot")
    return len(requests)


@dataclass(frozen=True)
class PeerFigure:
    steps: int
    cassette_bytes: int
    load_s: float  # vcrpy persister + YAML
    check_s: float  # json + syrupy on every request

    @property
    def total_s(self) -> float:
        return self.load_s + self.check_s

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.total_s


def measure(cassette: Path, expected: Sequence[dict[str, Any]], repeats: int) -> PeerFigure:
    best: PeerFigure | None = None
    for _ in range(max(repeats, 1)):
        load_s, (requests, _) = timed(lambda: load_cassette(cassette))
        check_s, count = timed(lambda: check(requests, expected))  # noqa: B023 - called at once
        figure = PeerFigure(count, cassette.stat().st_size, load_s, check_s)
        if best is None or figure.total_s < best.total_s:
            best = figure
    assert best is not None
    return best


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
