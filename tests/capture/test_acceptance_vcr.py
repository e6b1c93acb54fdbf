"""vcrpy / pytest-recording on the same test as `header_capture`, every captured client (issue
23's coexistence, attacked again).

Before, aiohttp's captured request went to vcrpy first (both patch `ClientSession._request`,
vcrpy after the capture), which refused it in its default `none` mode
(`CannotOverwriteExistingCassetteException`) and record mode failed. The near misses: a test
vcrpy alone sees still goes to vcrpy, and aiohttp is left as it was after both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

pytest.importorskip("pytest_recording")
pytest.importorskip("aiohttp")
pytest.importorskip("boto3")

CONFTEST = r"""
import os

import httpx2
import pytest

os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

CHAT = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}]}
CONVERSE = {"output": {"message": {"role": "assistant", "content": [{"text": "Sunny."}]}},
            "stopReason": "end_turn", "usage": {"inputTokens": 9, "outputTokens": 1,
                                                "totalTokens": 10}, "metrics": {"latencyMs": 1}}


def answer(request):
    if os.environ.get("STAND_IN_DOWN"):
        raise AssertionError(f"the stand-in was reached: {request.url}")
    if "/converse" in request.url.path:
        return httpx2.Response(200, json=CONVERSE)
    return httpx2.Response(200, json=CHAT)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
"""

TESTS = r"""
import asyncio

import aiohttp
import boto3
import openai
import pytest
import requests
import vcr.errors

BODY = {"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]}
URL = "https://api.openai.com/v1/chat/completions"
ORIGINAL = aiohttp.ClientSession._request


async def ask():
    async with aiohttp.ClientSession() as client:
        async with client.post(URL, json=BODY) as reply:
            return (await reply.json())["id"]


@pytest.mark.vcr
@pytest.mark.header_capture
def test_openai_sdk():
    assert openai.OpenAI(api_key="x").chat.completions.create(**BODY).id == "c1"


@pytest.mark.vcr
@pytest.mark.header_capture
def test_requests():
    assert requests.post(URL, json=BODY).json()["id"] == "c1"


@pytest.mark.vcr
@pytest.mark.header_capture
def test_boto3():
    reply = boto3.client("bedrock-runtime").converse(
        modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert reply["stopReason"] == "end_turn"


@pytest.mark.vcr
@pytest.mark.header_capture
def test_aiohttp():
    assert asyncio.run(ask()) == "c1"


@pytest.mark.vcr
def test_near_miss_vcr_alone_still_sees_aiohttp():
    with pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException):
        asyncio.run(ask())


def test_near_miss_aiohttp_left_as_it_was():
    assert aiohttp.ClientSession._request is ORIGINAL
"""


@pytest.mark.slow
def test_every_client_records_and_replays_under_vcr_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CI", "STAND_IN_DOWN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_vcr=TESTS)
    recorded = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    recorded.assert_outcomes(passed=6)
    assert len(list(Path(pytester.path).rglob("fixtures/cassettes/**/*.json"))) == 4
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=6)
