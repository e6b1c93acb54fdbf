"""Test setup for the support desk: the only harness-specific lines of the project.

The `harness` pytest plugin is active as soon as the package is installed. A test marked
`@pytest.mark.header_capture` sends every request the agent makes (openai-agents builds its own
OpenAI client) through its capture session: replayed from `fixtures/cassettes/...` in CI,
recorded with `pytest --harness-mode=record`, and gated on the cached prefix either way.

Two lines every openai-agents project wants in its tests: tracing off (the trace exporter would
post spans to api.openai.com from a background thread), and a placeholder key for replay (the
recorded `authorization` header is `[redacted]`). Recording forwards requests to
`harness_upstream`: a real project deletes that fixture and records from the API with a real
key; this example records from a small stand-in for the Responses API.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx2
import pytest
from agents import set_tracing_disabled

os.environ.setdefault("OPENAI_API_KEY", "sk-placeholder")
set_tracing_disabled(True)


def fake_responses_api(request: httpx2.Request) -> httpx2.Response:
    """Search the docs first; once the tool's output is in, answer."""
    body = json.loads(request.content)
    items = body["input"] if isinstance(body["input"], list) else []
    answered = any(item.get("type") == "function_call_output" for item in items)
    output: list[dict[str, Any]]
    if not answered:
        call = {"type": "function_call", "id": "fc_01", "call_id": "call_01"}
        arguments = json.dumps({"query": "deploy runbook"})
        output = [{**call, "name": "search_docs", "arguments": arguments, "status": "completed"}]
    else:
        text = "The deploy runbook is runbooks/deploy.md; rollback is runbooks/rollback.md."
        content = [{"type": "output_text", "text": text, "annotations": []}]
        output = [
            {
                "type": "message",
                "id": "msg_01",
                "status": "completed",
                "role": "assistant",
                "content": content,
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
        "tools": body.get("tools", []),
        "usage": {
            "input_tokens": 600,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 620,
        },
    }
    return httpx2.Response(200, json=response, headers={"x-request-id": "req_01"})


@pytest.fixture
def harness_upstream() -> httpx2.MockTransport:
    """Where record mode sends requests: the stand-in API (a real project: the network)."""
    return httpx2.MockTransport(fake_responses_api)
