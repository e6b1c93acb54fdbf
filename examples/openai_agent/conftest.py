"""Test setup for the support agent.

The `harness` pytest plugin is active as soon as the package is installed (its entry point). It
provides `header_capture` (an HTTP client per test that replays `fixtures/cassettes/...`) and
`prove_stable` (builds the agent under shuffled orders, and under several PYTHONHASHSEED values
when asked, and compares the request bytes).

Recording (`pytest --harness-mode=record`) forwards requests to `harness_upstream`. A real
project leaves that to the network (delete the fixture below and export OPENAI_API_KEY); this
example has no key, so it records from a small stand-in for the Chat Completions API.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest


def fake_chat_completions(request: httpx2.Request) -> httpx2.Response:
    """Search the docs first; once a tool result is in, answer."""
    body = json.loads(request.content)
    turn = sum(1 for message in body["messages"] if message["role"] == "assistant")
    message: dict[str, Any]
    if turn == 0:
        call = {
            "id": "call_01",
            "type": "function",
            "function": {
                "name": "search_docs",
                "arguments": json.dumps({"query": "deploy runbook"}),
            },
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    else:
        text = (
            "The deploy runbook is runbooks/deploy.md; rollback steps are in runbooks/rollback.md."
        )
        message, finish = {"role": "assistant", "content": text}, "stop"
    completion = {
        "id": f"chatcmpl-0{turn + 1}",
        "object": "chat.completion",
        "created": 1767225600,
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 700,
            "completion_tokens": 20,
            "total_tokens": 720,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }
    return httpx2.Response(200, json=completion, headers={"x-request-id": f"req_0{turn + 1}"})


@pytest.fixture
def harness_upstream() -> httpx2.MockTransport:
    """Where record mode sends requests: the stand-in API (a real project: the network)."""
    return httpx2.MockTransport(fake_chat_completions)
