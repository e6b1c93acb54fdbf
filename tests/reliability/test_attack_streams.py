"""Streams through every client while recording (issue 24's defect 7, attacked again beyond httpx).

One stand-in, as the README says (`harness_upstream`, a sync `MockTransport` whose answers are
generators), serves `requests`, `urllib.request`, `http.client` and aiohttp: an endless event
stream is read as far as the client goes and recorded that far, and a stream's first event
reaches the client before the stand-in writes the next (it waits until the client saw it).

Before: aiohttp failed on the stand-in's sync stream ("Attempted to call an async iterator on a
sync stream"), and once past that kept feeding an endless stream after the client left and
recorded nothing; `requests` got nothing of a stream until 512 bytes had come (urllib3 filled
its `amt`, where a chunked answer off the wire is yielded chunk by chunk).
"""

from __future__ import annotations

import json

import pytest

from tests.support.inner import inner_pytest

pytest.importorskip("requests")
pytest.importorskip("aiohttp")

CONFTEST = r"""
import threading
import httpx2
import pytest

GATE = threading.Event()

def endless():
    number = 0
    while True:
        number += 1
        yield f"event: ping\ndata: {number}\n\n".encode()

def gated():
    yield b"data: first\n\n"
    yield b"data: saw-it\n\n" if GATE.wait(timeout=15) else b"data: buffered\n\n"
    yield b"data: [DONE]\n\n"

def answer(request):
    content = endless() if request.url.path == "/sse" else gated()
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)

@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)

@pytest.fixture
def harness_capture_config():
    return {"hosts": ["*"], "block_network": "none"}
"""

TESTS = r"""
import asyncio
import http.client
import urllib.request

import aiohttp
import pytest
import requests

from conftest import GATE

URL = "http://mcp.local:8000/sse"
CHAT = "http://mcp.local:8000/v1/chat/completions"


def first_three(lines):
    events = []
    for line in lines:
        line = line.decode() if isinstance(line, bytes) else line
        if line.startswith("data:"):
            events.append(line.strip())
        if len(events) == 3:
            break
    return events


@pytest.mark.header_capture
def test_requests_endless():
    with requests.get(URL, stream=True) as r:
        assert first_three(r.iter_lines()) == ["data: 1", "data: 2", "data: 3"]


@pytest.mark.header_capture
def test_urllib_endless():
    with urllib.request.urlopen(URL) as r:
        assert first_three(iter(r.readline, b"")) == ["data: 1", "data: 2", "data: 3"]


@pytest.mark.header_capture
def test_http_client_endless():
    c = http.client.HTTPConnection("mcp.local", 8000)
    c.request("GET", "/sse")
    r = c.getresponse()
    assert first_three(iter(r.readline, b"")) == ["data: 1", "data: 2", "data: 3"]
    c.close()


@pytest.mark.header_capture
def test_aiohttp_endless():
    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.get(URL) as r:
                events = []
                async for line in r.content:
                    if line.startswith(b"data:"):
                        events.append(line.strip().decode())
                    if len(events) == 3:
                        return events
    assert asyncio.run(go()) == ["data: 1", "data: 2", "data: 3"]


@pytest.mark.header_capture
def test_requests_gated():
    GATE.clear()
    seen = []
    with requests.post(CHAT, json={"model": "m", "stream": True, "messages": []}, stream=True) as r:
        for line in r.iter_lines():
            if line:
                seen.append(line)
                GATE.set()
    assert b"data: saw-it" in seen


@pytest.mark.header_capture
def test_aiohttp_gated():
    GATE.clear()
    async def go():
        seen = []
        async with aiohttp.ClientSession() as s:
            async with s.post(CHAT, json={"model": "m", "stream": True, "messages": []}) as r:
                async for line in r.content:
                    if line.strip():
                        seen.append(line.strip())
                        GATE.set()
        return seen
    assert b"data: saw-it" in asyncio.run(go())


@pytest.mark.header_capture
def test_urllib_gated():
    GATE.clear()
    seen = []
    req = urllib.request.Request(CHAT, data=b'{"model": "m", "stream": true, "messages": []}',
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        for line in iter(r.readline, b""):
            if line.strip():
                seen.append(line.strip())
                GATE.set()
    assert b"data: saw-it" in seen
"""


@pytest.mark.slow
def test_every_client_streams_while_recording_and_replays(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(conftest=CONFTEST, test_stream=TESTS)
    recorded = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-mode=record", subprocess=True, timeout=120
    )
    recorded.assert_outcomes(passed=7)
    folder = pytester.path / "fixtures" / "cassettes" / "test_stream"
    for name in ("requests", "urllib", "http_client", "aiohttp"):
        cassette = json.loads((folder / f"test_{name}_endless.json").read_text())
        lines = cassette["exchanges"][0]["response"]["lines"]
        assert "data: 3" in lines and len(lines) < 2000, name
    for name in ("requests", "urllib", "aiohttp"):
        assert "saw-it" in (folder / f"test_{name}_gated.json").read_text(), name
    replayed = inner_pytest(pytester, "-p", "no:randomly", subprocess=True, timeout=120)
    replayed.assert_outcomes(passed=7)
