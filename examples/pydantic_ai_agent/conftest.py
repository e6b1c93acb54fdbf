"""Test setup for the day planner: the only harness-specific lines of the project.

The `harness` pytest plugin is active as soon as the package is installed. A test marked
`@pytest.mark.header_capture` sends every request the agent makes (pydantic-ai builds its own
Anthropic client) through its capture session: replayed from `fixtures/cassettes/...` in CI,
recorded with `pytest --harness-mode=record`, and gated on the cached prefix either way.

Recording forwards requests to `harness_upstream`. A real project leaves that to the network
(delete the fixture below and export ANTHROPIC_API_KEY); this example has no key, so it records
from a small stand-in for the Messages API. Replaying needs no key at all: the recorded key
header is `[redacted]`, so any placeholder does.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx2
import pytest

os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-placeholder")


def _events(message: dict[str, Any], blocks: list[dict[str, Any]]) -> bytes:
    """A streamed Messages API answer: the server-sent events the real API sends."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message}),
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
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
    stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
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
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def fake_messages_api(request: httpx2.Request) -> httpx2.Response:
    """Check the weather first; once a tool result is in, answer."""
    body = json.loads(request.content)
    answered = any(
        block.get("type") == "tool_result"
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    )
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 480, "output_tokens": 1, "cache_read_input_tokens": 0},
    }
    if not answered:
        call = {"type": "tool_use", "id": "toolu_01", "name": "get_weather"}
        blocks = [{**call, "input": {"city": "Paris"}}]
    else:
        text = "Paris is dry and 21C with lunch at 12:30: walk in the Luxembourg gardens first."
        blocks = [{"type": "text", "text": text}]
    headers = {"content-type": "text/event-stream", "request-id": "req_01"}
    return httpx2.Response(200, content=_events(message, blocks), headers=headers)


@pytest.fixture
def harness_upstream() -> httpx2.MockTransport:
    """Where record mode sends requests: the stand-in API (a real project: the network)."""
    return httpx2.MockTransport(fake_messages_api)
