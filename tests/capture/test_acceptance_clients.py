"""Acceptance attacks on issue 23's clients, written from the issue as a user's project meets it.

boto3's `invoke_model` (an Anthropic body on Bedrock), `http.client` by hand, a `requests.Session`
that streams, and aiohttp over two turns: recorded against a one-transport `harness_upstream`,
replayed under CI with the stand-in down (and the AWS credentials changed, so every SigV4
signature and date differs), then broken on purpose (a tool moved between turns).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

pytest.importorskip("boto3")
pytest.importorskip("requests")
pytest.importorskip("aiohttp")

CONFTEST = r"""
import json
import os

import httpx2
import pytest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

CHAT = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
CLAUDE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
          "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2}}


def answer(request):
    if os.environ.get("STAND_IN_DOWN"):
        raise AssertionError(f"the stand-in was reached: {request.url}")
    if "/invoke" in request.url.path:
        return httpx2.Response(200, json=CLAUDE)
    body = json.loads(request.content)
    if body.get("stream"):
        chunk = {**CHAT, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": {"content": "Hello."},
                              "finish_reason": "stop"}]}
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
    return httpx2.Response(200, json=CHAT)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
"""

TESTS = r"""
import asyncio
import http.client
import json
import os

import aiohttp
import boto3
import pytest
import requests

NAMES = ["weather", "search", "calendar"]


def names(turn):
    names = list(NAMES)
    if turn == 2 and os.environ.get("REORDER"):
        names[0], names[2] = names[2], names[0]
    return names


def chat_tools(turn):
    return [{"type": "function", "function": {"name": n, "description": n, "parameters": {}}}
            for n in names(turn)]


@pytest.mark.header_capture
def test_bedrock_invoke_model_two_turns():
    client = boto3.client("bedrock-runtime")
    messages = [{"role": "user", "content": "Weather?"}]
    for turn in (1, 2):
        body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
                "system": "Be brief.",
                "tools": [{"name": n, "description": n, "input_schema": {"type": "object"}}
                          for n in names(turn)],
                "messages": messages}
        reply = client.invoke_model(modelId="anthropic.claude-test", body=json.dumps(body))
        answer = json.loads(reply["body"].read())
        assert answer["content"][0]["text"] == "Sunny."
        messages = [*messages, {"role": "assistant", "content": "Sunny."},
                    {"role": "user", "content": "And?"}]


@pytest.mark.header_capture
def test_http_client_two_turns():
    messages = [{"role": "user", "content": "Hi"}]
    for turn in (1, 2):
        connection = http.client.HTTPSConnection("api.openai.com")
        body = json.dumps({"model": "gpt-test", "tools": chat_tools(turn), "messages": messages})
        connection.request("POST", "/v1/chat/completions", body=body,
                           headers={"content-type": "application/json",
                                    "authorization": "Bearer sk-proj-notarealkey00000000000000"})
        reply = connection.getresponse()
        assert reply.status == 200
        assert json.loads(reply.read())["choices"][0]["message"]["content"] == "Hello."
        connection.close()
        messages = [*messages, {"role": "assistant", "content": "Hello."},
                    {"role": "user", "content": "More"}]


@pytest.mark.header_capture
def test_requests_session_streams_two_turns():
    session = requests.Session()
    messages = [{"role": "user", "content": "Hi"}]
    for turn in (1, 2):
        body = {"model": "gpt-test", "stream": True, "tools": chat_tools(turn),
                "messages": messages}
        with session.post("https://api.groq.com/openai/v1/chat/completions", json=body,
                          stream=True) as reply:
            lines = [line for line in reply.iter_lines() if line]
        assert lines[-1] == b"data: [DONE]"
        messages = [*messages, {"role": "assistant", "content": "Hello."},
                    {"role": "user", "content": "More"}]


@pytest.mark.header_capture
def test_aiohttp_two_turns():
    async def run():
        messages = [{"role": "user", "content": "Hi"}]
        async with aiohttp.ClientSession() as client:
            for turn in (1, 2):
                body = {"model": "gpt-test", "tools": chat_tools(turn), "messages": messages}
                async with client.post("https://api.mistral.ai/v1/chat/completions",
                                       json=body) as reply:
                    answer = await reply.json()
                assert answer["choices"][0]["message"]["content"] == "Hello."
                messages = [*messages, {"role": "assistant", "content": "Hello."},
                            {"role": "user", "content": "More"}]

    asyncio.run(run())
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("REORDER", raising=False)
    monkeypatch.delenv("STAND_IN_DOWN", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_more_clients=TESTS)
    return pytester


@pytest.mark.slow
def test_each_client_is_recorded_then_replayed_offline_with_other_signatures(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=4)
    cassettes = sorted(Path(project.path).rglob("*.json"))
    assert len(cassettes) == 4, cassettes
    written = "".join(path.read_text() for path in cassettes)
    for never in ("AWS4-HMAC", "AKIAIOSFODNN7EXAMPLE", "sk-proj-notarealkey"):
        assert never not in written, never
    assert "api.groq.com" in written and "api.mistral.ai" in written

    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAI44QH8DHBEXAMPLE")  # another signature
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY")
    inner_pytest(project, "-p", "no:randomly").assert_outcomes(passed=4)


@pytest.mark.slow
def test_a_tool_reordered_between_turns_fails_each_client_while_recording(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REORDER", "1")
    result = inner_pytest(project, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=4)
    assert result.stdout.str().count("prefix-chain gate failed") >= 4, result.stdout.str()
    assert "same tool names in the same order" not in result.stdout.str()
    assert not list(Path(project.path).rglob("*.json"))


@pytest.mark.slow
def test_a_tool_reordered_after_recording_fails_replay_in_ci(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=4)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    monkeypatch.setenv("REORDER", "1")
    result = inner_pytest(project, "-p", "no:randomly")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*tools reordered*"])
    assert "the stand-in was reached" not in result.stdout.str()
