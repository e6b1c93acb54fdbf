"""Capture beyond httpx (issue 23): boto3, requests, urllib, aiohttp, code untouched.

A user's project as it is: boto3's `bedrock-runtime` client (Converse, and ConverseStream with
the AWS event-stream framing), `requests`, `urllib.request` and aiohttp to an OpenAI URL, with
`harness_upstream` a one-transport httpx stand-in. Recorded, replayed under CI with the stand-in
down, and broken on purpose (a tool reordered between turns): the test fails with the report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

pytest.importorskip("boto3")
pytest.importorskip("requests")
pytest.importorskip("aiohttp")

CONFTEST = r'''
import binascii
import json
import os
import struct

import httpx2
import pytest

os.environ.update(
    AWS_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE",
    AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    AWS_SESSION_TOKEN="FwoGZXIvYXdzEXAMPLESESSIONTOKEN0123456789",
    AWS_DEFAULT_REGION="us-east-1",
)


def frame(event, payload):
    """One AWS event-stream message (prelude, headers, payload, CRCs)."""
    headers = b""
    for name, value in ((":event-type", event), (":content-type", "application/json"),
                        (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07"
        headers += struct.pack(">H", len(value)) + value.encode()
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def converse_stream():
    yield frame("messageStart", {"role": "assistant"})
    yield frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Sunny"}})
    yield frame("contentBlockStop", {"contentBlockIndex": 0})
    yield frame("messageStop", {"stopReason": "end_turn"})
    yield frame("metadata", {"usage": {"inputTokens": 9, "outputTokens": 1, "totalTokens": 10},
                             "metrics": {"latencyMs": 1}})


def answer(request):
    if os.environ.get("STAND_IN_DOWN"):
        raise AssertionError(f"the stand-in was reached: {request.url}")
    path = request.url.path
    if path.endswith("/converse-stream"):
        return httpx2.Response(200, headers={"content-type": "application/vnd.amazon.eventstream"},
                               content=converse_stream())
    if path.endswith("/converse"):
        return httpx2.Response(200, json={
            "output": {"message": {"role": "assistant", "content": [{"text": "Sunny."}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 9, "outputTokens": 1, "totalTokens": 10},
            "metrics": {"latencyMs": 1}})
    return httpx2.Response(200, json={
        "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
'''

TESTS = r"""
import os

import asyncio
import json
import urllib.request

import aiohttp
import boto3
import pytest
import requests

TOOLS = ["weather", "search", "calendar"]


def tools(turn):
    names = list(TOOLS)
    if turn == 2 and os.environ.get("REORDER"):
        names[0], names[1] = names[1], names[0]
    return {"tools": [{"toolSpec": {"name": n, "inputSchema": {"json": {"type": "object"}}}}
                      for n in names]}


@pytest.mark.header_capture
def test_bedrock_converse_two_turns():
    client = boto3.client("bedrock-runtime")
    messages = [{"role": "user", "content": [{"text": "Weather?"}]}]
    for turn in (1, 2):
        reply = client.converse(modelId="anthropic.claude-test", system=[{"text": "Be brief."}],
                                toolConfig=tools(turn), messages=messages)
        assert reply["output"]["message"]["content"][0]["text"] == "Sunny."
        messages += [reply["output"]["message"], {"role": "user", "content": [{"text": "And?"}]}]


@pytest.mark.header_capture
def test_bedrock_converse_stream():
    client = boto3.client("bedrock-runtime")
    reply = client.converse_stream(modelId="anthropic.claude-test", toolConfig=tools(1),
                                   messages=[{"role": "user", "content": [{"text": "Hi"}]}])
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in reply["stream"]
                   if "contentBlockDelta" in e)
    assert text == "Sunny"


@pytest.mark.header_capture
def test_requests_chat_completions():
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]}
    reply = requests.post("https://api.openai.com/v1/chat/completions", json=body,
                          headers={"authorization": "Bearer sk-test-not-a-real-key-0123456789"})
    assert reply.json()["choices"][0]["message"]["content"] == "Hello."


@pytest.mark.header_capture
def test_urllib_chat_completions():
    body = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]})
    sent = urllib.request.Request("https://api.openai.com/v1/chat/completions",
                                  data=body.encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(sent) as reply:
        assert json.loads(reply.read())["choices"][0]["message"]["content"] == "Hello."


@pytest.mark.header_capture
def test_aiohttp_chat_completions():
    async def ask():
        body = {"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]}
        async with aiohttp.ClientSession() as client:
            async with client.post("https://api.openai.com/v1/chat/completions", json=body) as r:
                return (await r.json())["choices"][0]["message"]["content"]

    assert asyncio.run(ask()) == "Hello."
"""


@pytest.mark.slow
def test_boto3_and_requests_are_recorded_replayed_and_gated(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_clients=TESTS)
    monkeypatch.delenv("CI", raising=False)
    recorded = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    recorded.assert_outcomes(passed=5)
    cassettes = sorted(Path(pytester.path).rglob("*.json"))
    assert len(cassettes) == 5, cassettes
    written = "".join(path.read_text() for path in cassettes)
    for never in ("AWS4-HMAC", "x-amz-date", "amz-sdk-invocation-id", "FwoGZXIvYXdz", "sk-test"):
        assert never not in written, never
    assert "application/vnd.amazon.eventstream" in written  # the event stream, recorded whole

    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=5)

    monkeypatch.setenv("REORDER", "1")  # a tool moved between turns: replay refuses it
    broken = inner_pytest(pytester, "-p", "no:randomly", "-k", "two_turns")
    broken.assert_outcomes(failed=1)
    broken.stdout.fnmatch_lines(["*does not match exchange 2*tools block first*"])
    broken.stdout.fnmatch_lines(["*tools reordered*"])


@pytest.mark.slow
def test_a_tool_reordered_between_boto3_turns_fails_the_gate_while_recording(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_clients=TESTS)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("REORDER", "1")
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record", "-k", "two")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*prefix-chain gate failed*", "*tools reordered*"])
    assert not list(Path(pytester.path).rglob("*.json"))  # nothing is written

    monkeypatch.delenv("REORDER")  # the near miss: the same order on both turns passes
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record", "-k", "two")


GENAI_CONFTEST = r"""
import json
import os

import httpx2
import pytest

ANSWER = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny."}]},
                          "finishReason": "STOP"}],
          "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1,
                            "totalTokenCount": 6}}


def answer(request):
    if os.environ.get("STAND_IN_DOWN"):
        raise AssertionError(f"the stand-in was reached: {request.url}")
    if "streamGenerateContent" in request.url.path:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=f"data: {json.dumps(ANSWER)}\r\n\r\n".encode())
    return httpx2.Response(200, json=ANSWER)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
"""

GENAI_TESTS = r"""
import asyncio
import os

import pytest
from google import genai
from google.genai import types


def config(turn):
    names = ["weather", "search", "calendar"]
    if turn == 2 and os.environ.get("REORDER"):
        names[0], names[1] = names[1], names[0]
    declarations = [types.FunctionDeclaration(name=n, description=n) for n in names]
    return types.GenerateContentConfig(system_instruction="Be brief.",
                                       tools=[types.Tool(function_declarations=declarations)])


@pytest.mark.header_capture
def test_genai_aio_two_turns_and_a_stream():
    async def run():
        client = genai.Client(api_key="AIzaSy-test-not-a-real-key-0000000000")
        contents = [types.Content(role="user", parts=[types.Part(text="Weather?")])]
        for turn in (1, 2):
            reply = await client.aio.models.generate_content(
                model="gemini-test", contents=contents, config=config(turn))
            assert reply.text == "Sunny."
            contents += [reply.candidates[0].content,
                         types.Content(role="user", parts=[types.Part(text="And?")])]
        stream = await client.aio.models.generate_content_stream(
            model="gemini-test", contents=contents, config=config(1))
        assert "".join([chunk.text async for chunk in stream]) == "Sunny."

    asyncio.run(run())
"""


@pytest.mark.slow
def test_google_genai_aio_over_aiohttp_is_recorded_replayed_and_gated(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("google.genai")
    pytester.makeconftest(GENAI_CONFTEST)
    pytester.makepyfile(test_genai=GENAI_TESTS)
    monkeypatch.delenv("CI", raising=False)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    written = "".join(path.read_text() for path in Path(pytester.path).rglob("*.json"))
    assert "generateContent" in written
    assert "AIzaSy-test" not in written
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=1)
    monkeypatch.setenv("REORDER", "1")
    broken = inner_pytest(pytester, "-p", "no:randomly")
    broken.assert_outcomes(failed=1)
    broken.stdout.fnmatch_lines(["*does not match exchange 2*", "*tools reordered*"])
