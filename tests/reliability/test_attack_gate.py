"""The prefix-chain gate on key order and a grown system, per provider (issue 24's defects 2 and 3,
attacked again with other providers and other places).

A tool schema whose `properties` swap order between two turns (Gemini camelCase, Bedrock Converse
and `invoke`, OpenAI Responses, Cohere v2, Claude on Vertex), and a system that gains text
(Gemini snake_case `system_instruction`, Bedrock Converse, Anthropic beside tools, OpenAI
Responses `instructions` and Chat's system message), each over two turns sent with `requests`:
every one fails the gate while recording, and the same conversation unchanged passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

pytest.importorskip("requests")

CONFTEST = r"""
import httpx2
import pytest


def answer(request):
    p = request.url.path
    if "generateContent" in p:
        return httpx2.Response(
            200,
            json={
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "Sunny."}]},
                        "finishReason": "STOP",
                    }
                ]
            },
        )
    if "/converse" in p:
        return httpx2.Response(
            200,
            json={
                "output": {
                    "message": {"role": "assistant", "content": [{"text": "Sunny."}]}
                },
                "stopReason": "end_turn",
                "usage": {"inputTokens": 9, "outputTokens": 1, "totalTokens": 10},
                "metrics": {"latencyMs": 1},
            },
        )
    if "/invoke" in p or p.endswith("/messages"):
        return httpx2.Response(
            200,
            json={
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "c",
                "content": [{"type": "text", "text": "Sunny."}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )
    if p.endswith("/responses"):
        return httpx2.Response(
            200,
            json={
                "id": "r",
                "object": "response",
                "status": "completed",
                "model": "g",
                "output": [],
            },
        )
    if p.endswith("/v2/chat"):
        return httpx2.Response(
            200,
            json={
                "id": "c1",
                "finish_reason": "COMPLETE",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Hello."}],
                },
            },
        )
    return httpx2.Response(
        200,
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "g",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Hello."},
                }
            ],
        },
    )


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
"""

TESTS = r"""
import os
import pytest
import requests

GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/"
GEMINI += "gemini-2.5-flash:generateContent"
VERTEX = (
    "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5"
    "/publishers/anthropic/models/claude-sonnet-4-5:rawPredict"
)
SWAP = os.environ.get("SWAP") == "1"
CITY = {"type": "string"}
DAYS = {"type": "integer"}


def props(turn):
    return (
        {"days": DAYS, "city": CITY}
        if (turn == 2 and SWAP)
        else {"city": CITY, "days": DAYS}
    )


def system(turn, base="You plan trips."):
    return base + (" Be brief." if (turn == 2 and SWAP) else "")


def post(url, body):
    r = requests.post(url, json=body)
    assert r.status_code == 200, r.text


@pytest.mark.header_capture
def test_gemini_key_order():
    contents = [{"role": "user", "parts": [{"text": "Paris?"}]}]
    for turn in (1, 2):
        post(
            GEMINI,
            {
                "contents": contents,
                "systemInstruction": {"parts": [{"text": "You plan trips."}]},
                "tools": [
                    {
                        "functionDeclarations": [
                            {
                                "name": "w",
                                "description": "d",
                                "parameters": {"type": "object", "properties": props(turn)},
                            }
                        ]
                    }
                ],
            },
        )
        contents = contents + [
            {"role": "model", "parts": [{"text": "Sunny."}]},
            {"role": "user", "parts": [{"text": "And?"}]},
        ]


@pytest.mark.header_capture
def test_gemini_system_gains():
    contents = [{"role": "user", "parts": [{"text": "Paris?"}]}]
    for turn in (1, 2):
        post(
            GEMINI,
            {
                "contents": contents,
                "system_instruction": {"parts": [{"text": system(turn)}]},
            },
        )
        contents = contents + [
            {"role": "model", "parts": [{"text": "Sunny."}]},
            {"role": "user", "parts": [{"text": "And?"}]},
        ]


@pytest.mark.header_capture
def test_bedrock_invoke_key_order():
    messages = [{"role": "user", "content": "Paris?"}]
    for turn in (1, 2):
        post(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3/invoke",
            {
                "anthropic_version": "bedrock-2023-05-31",
                "max_tokens": 9,
                "system": "You plan trips.",
                "tools": [
                    {
                        "name": "w",
                        "description": "d",
                        "input_schema": {"type": "object", "properties": props(turn)},
                    }
                ],
                "messages": messages,
            },
        )
        messages = messages + [
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And?"},
        ]


@pytest.mark.header_capture
def test_bedrock_converse_system_gains():
    messages = [{"role": "user", "content": [{"text": "Paris?"}]}]
    for turn in (1, 2):
        post(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3/converse",
            {"system": [{"text": system(turn)}], "messages": messages},
        )
        messages = messages + [
            {"role": "assistant", "content": [{"text": "Sunny."}]},
            {"role": "user", "content": [{"text": "And?"}]},
        ]


@pytest.mark.header_capture
def test_bedrock_converse_key_order():
    messages = [{"role": "user", "content": [{"text": "Paris?"}]}]
    for turn in (1, 2):
        post(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3/converse",
            {
                "system": [{"text": "You plan trips."}],
                "messages": messages,
                "toolConfig": {
                    "tools": [
                        {
                            "toolSpec": {
                                "name": "w",
                                "inputSchema": {
                                    "json": {"type": "object", "properties": props(turn)}
                                },
                            }
                        }
                    ]
                },
            },
        )
        messages = messages + [
            {"role": "assistant", "content": [{"text": "Sunny."}]},
            {"role": "user", "content": [{"text": "And?"}]},
        ]


@pytest.mark.header_capture
def test_anthropic_string_system_gains_with_tools():
    messages = [{"role": "user", "content": "Paris?"}]
    for turn in (1, 2):
        post(
            "https://api.anthropic.com/v1/messages",
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 9,
                "system": system(turn),
                "tools": [
                    {
                        "name": "w",
                        "description": "d",
                        "input_schema": {"type": "object", "properties": props(1)},
                    }
                ],
                "messages": messages,
            },
        )
        messages = messages + [
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And?"},
        ]


@pytest.mark.header_capture
def test_openai_responses_instructions_gain():
    items = [{"role": "user", "content": "Paris?"}]
    for turn in (1, 2):
        post(
            "https://api.openai.com/v1/responses",
            {"model": "gpt-5", "instructions": system(turn), "input": items},
        )
        items = items + [
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And?"},
        ]


@pytest.mark.header_capture
def test_openai_chat_system_gains():
    messages = [
        {"role": "system", "content": "You plan trips."},
        {"role": "user", "content": "Paris?"},
    ]
    for turn in (1, 2):
        if turn == 2 and SWAP:
            messages[0] = {"role": "system", "content": "You plan trips. Be brief."}
        post(
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-5", "messages": messages},
        )
        messages = messages + [
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "And?"},
        ]


@pytest.mark.header_capture
def test_openai_responses_key_order():
    items = [{"role": "user", "content": "Paris?"}]
    for turn in (1, 2):
        post(
            "https://api.openai.com/v1/responses",
            {
                "model": "gpt-5",
                "tools": [
                    {
                        "type": "function",
                        "name": "w",
                        "parameters": {"type": "object", "properties": props(turn)},
                    }
                ],
                "input": items,
            },
        )
        items = items + [
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And?"},
        ]


@pytest.mark.header_capture
def test_cohere_key_order():
    messages = [{"role": "user", "content": "Paris?"}]
    for turn in (1, 2):
        post(
            "https://api.cohere.com/v2/chat",
            {
                "model": "command-a",
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "w",
                            "parameters": {"type": "object", "properties": props(turn)},
                        },
                    }
                ],
                "messages": messages,
            },
        )
        messages = messages + [
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "And?"},
        ]


@pytest.mark.header_capture
def test_vertex_claude_key_order():
    messages = [{"role": "user", "content": "Paris?"}]
    for turn in (1, 2):
        post(
            VERTEX,
            {
                "anthropic_version": "vertex-2023-10-16",
                "max_tokens": 9,
                "system": "You plan trips.",
                "tools": [
                    {
                        "name": "w",
                        "description": "d",
                        "input_schema": {"type": "object", "properties": props(turn)},
                    }
                ],
                "messages": messages,
            },
        )
        messages = messages + [
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And?"},
        ]
"""


@pytest.mark.slow
def test_every_provider_breaks_on_swapped_keys_and_a_grown_system(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ko=TESTS)
    monkeypatch.setenv("SWAP", "1")
    broken = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    broken.assert_outcomes(failed=11)
    assert not list(Path(pytester.path).rglob("*.json"))
    monkeypatch.setenv("SWAP", "0")  # the near miss: the same bytes every turn
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=11)
