"""aiohttp under capture, attacked (issue 32): every body aiohttp takes, its client middlewares,
its trace configs and its redirects.

Each runs a real `aiohttp.ClientSession` under a capture session: against a loopback HTTP server,
compared with what the server gets from aiohttp alone, or against an in-process stand-in (an
httpx2 `MockTransport`), recorded and replayed from the written cassette.

Before: a body aiohttp reads as a stream (an async generator, `io.BytesIO`, an open file, a
`MultipartWriter`, a `StreamReader`, a `Payload`) was sent upstream and recorded as its `str()`
(`<async_generator object ... at 0x...>`), a `FormData` with a file likewise; the session's
middlewares did not run (a header one adds was neither sent nor recorded, a retry one did not
retry), no trace config heard of the request, and a captured redirect reached the caller
unfollowed. The capture replaced `ClientSession._request`, which does all of that.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureConfig, CaptureSession, load_cassette
from tests.reliability.conftest import ANTHROPIC_KEY
from tests.support.stand_ins import chat_completion

aiohttp = pytest.importorskip("aiohttp")
from aiohttp import payload as aiohttp_payload  # noqa: E402
from aiohttp.base_protocol import BaseProtocol  # noqa: E402

CHAT = "https://api.openai.com/v1/chat/completions"
ASK = {"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]}

Seen = tuple[str, str, str, bytes]  # method, path, content type, body (its boundary named)


class _Server(BaseHTTPRequestHandler):
    """Keeps each request's method, path, content type and body (chunked framing undone)."""

    protocol_version = "HTTP/1.1"
    seen: list[Seen]

    def do_POST(self) -> None:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
        kind = self.headers.get("content-type", "")
        boundary = re.search(r"boundary=\"?([^\";]+)", kind)
        if boundary is not None:  # aiohttp draws a new one each time: named, not compared
            body = body.replace(boundary.group(1).encode(), b"BOUNDARY")
            kind = kind.replace(boundary.group(1), "BOUNDARY")
        self.seen.append((self.command, self.path, kind, body))
        out = json.dumps(chat_completion()).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[Seen]]]:
    """A loopback HTTP server: its URL and what it got."""
    seen: list[Seen] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Server,), {"seen": seen}))
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/upload?x=1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- 1. every body aiohttp takes --------------------------------------------------------------


async def _numbers() -> Any:
    for part in (b"one ", b"two ", b"three"):
        yield part


def _stream_reader() -> Any:
    reader = aiohttp.StreamReader(BaseProtocol(asyncio.get_running_loop()), 2**16)
    reader.feed_data(b"streamed ")
    reader.feed_data(b"bytes")
    reader.feed_eof()
    return reader


def _form_with_a_file() -> Any:
    form = aiohttp.FormData()
    form.add_field("purpose", "fine-tune")
    form.add_field("file", io.BytesIO(b'{"prompt": "x"}\n'), filename="train.jsonl")
    return form


def _multipart() -> Any:
    writer = aiohttp.MultipartWriter("mixed", boundary="fixed-boundary")
    writer.append("text part")
    writer.append_json({"a": 1})
    return writer


def _file(tmp_path: Path) -> Any:
    path = tmp_path / "body.bin"
    path.write_bytes(bytes(range(256)) * 4)
    return path.open("rb")


BODIES: dict[str, Callable[[Path], dict[str, Any]]] = {
    "bytes": lambda _: {"data": b"raw bytes"},
    "str": lambda _: {"data": "text \u00e9"},
    "dict": lambda _: {"data": {"a": "1", "b": "x y"}},
    "pairs": lambda _: {"data": [("a", "1"), ("a", "2")]},
    "json": lambda _: {"json": ASK},
    "form_fields": lambda _: {"data": aiohttp.FormData({"k": "v"})},
    "form_with_a_file": lambda _: {"data": _form_with_a_file()},
    "bytes_io": lambda _: {"data": io.BytesIO(b"from BytesIO")},
    "string_io": lambda _: {"data": io.StringIO("from StringIO")},
    "open_file": lambda tmp_path: {"data": _file(tmp_path)},
    "async_generator": lambda _: {"data": _numbers()},
    "bytes_payload": lambda _: {"data": aiohttp_payload.BytesPayload(b"a payload")},
    "json_payload": lambda _: {"data": aiohttp_payload.JsonPayload({"b": [1, 2]})},
    "multipart": lambda _: {"data": _multipart()},
    "stream_reader": lambda _: {"data": _stream_reader()},
    "chunked_bytes": lambda _: {"data": b"sent chunked", "chunked": True},
    "deflated": lambda _: {"data": b"squeezed " * 50, "compress": "deflate"},
}


async def _post(url: str, body: Callable[[], dict[str, Any]], **session: Any) -> int:
    """POST the body `body()` makes (in the loop: a `StreamReader` belongs to one) to `url`."""
    async with aiohttp.ClientSession(**session) as client, client.post(url, **body()) as response:
        await response.read()
        return int(response.status)


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_every_body_reaches_the_server_as_aiohttp_alone_sends_it_and_is_recorded_as_sent(
    kind: str, loopback: tuple[str, list[Seen]], tmp_path: Path
) -> None:
    url, seen = loopback
    assert asyncio.run(_post(url, lambda: BODIES[kind](tmp_path))) == 200
    alone = seen.pop()
    session = CaptureSession(config=CaptureConfig.of({"hosts": ["127.0.0.1"]}))
    with session.intercept():
        assert asyncio.run(_post(url, lambda: BODIES[kind](tmp_path))) == 200
    captured = seen.pop()
    assert captured == alone  # the same method, path, content type and body bytes
    assert not seen
    (request,) = session.requests
    if kind == "deflated":  # judged and recorded decoded (decision 0029), sent as it was
        assert request.body == b"squeezed " * 50
    else:
        boundary = _boundary(request.headers)
        body = request.body if boundary is None else request.body.replace(boundary, b"BOUNDARY")
        assert body == alone[3]
    assert b"object at 0x" not in request.body


def _boundary(headers: tuple[tuple[str, str], ...]) -> bytes | None:
    kind = dict(headers).get("content-type", "")
    found = re.search(r"boundary=\"?([^\";]+)", kind)
    return found.group(1).encode() if found else None


def test_a_sync_generator_aiohttp_refuses_is_refused_alike_and_nothing_is_sent(
    loopback: tuple[str, list[Seen]],
) -> None:
    def numbers() -> Iterator[bytes]:
        yield b"one"

    url, seen = loopback
    with pytest.raises(TypeError) as alone:
        asyncio.run(_post(url, lambda: {"data": numbers()}))
    session = CaptureSession(config=CaptureConfig.of({"hosts": ["127.0.0.1"]}))
    with session.intercept(), pytest.raises(TypeError) as captured:
        asyncio.run(_post(url, lambda: {"data": numbers()}))
    assert str(captured.value).split(", got")[0] == str(alone.value).split(", got")[0]
    assert not seen and not session.requests


# -- 2. middlewares, traces and redirects -----------------------------------------------------


class Stand:
    """An httpx2 stand-in answering 503 `busy` times, then 200; every request kept."""

    def __init__(self, busy: int = 0) -> None:
        self.busy = busy
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if len(self.requests) <= self.busy:
            return httpx2.Response(503, json={"error": {"message": "overloaded"}})
        return httpx2.Response(200, json=chat_completion())


async def _signed(request: Any, handler: Any) -> Any:
    request.headers["X-Trace-Id"] = "trace-7"
    request.headers["X-Api-Key"] = ANTHROPIC_KEY
    return await handler(request)


async def _retrying(request: Any, handler: Any) -> Any:
    response = await handler(request)
    while response.status == 503:
        response.release()
        response = await handler(request)
    return response


async def _chat(**session: Any) -> tuple[int, str]:
    async with aiohttp.ClientSession(**session) as client, client.post(CHAT, json=ASK) as response:
        answer = await response.json()
        return int(response.status), answer["choices"][0]["message"]["content"]


def _record(path: Path, upstream: Any, run: Callable[[], Any]) -> CaptureSession:
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream)
    with session.intercept():
        run()
    finished = session.finish()
    path.write_bytes(finished.files[0][1])
    return session


def _replay(path: Path, run: Callable[[], Any]) -> CaptureSession:
    session = CaptureSession.for_test(path, "check", writes_allowed=False)
    with session.intercept():
        run()
    assert not session.errors, session.errors
    return session


def test_a_middleware_header_is_sent_recorded_redacted_and_replayed(tmp_path: Path) -> None:
    cassette = tmp_path / "signed.json"
    stand = Stand()
    answers: list[tuple[int, str]] = []

    def run() -> None:
        answers.append(asyncio.run(_chat(middlewares=(_signed,))))

    _record(cassette, httpx2.MockTransport(stand), run)
    assert answers == [(200, "Hello.")]
    (sent,) = stand.requests
    assert sent.headers["x-trace-id"] == "trace-7"
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY
    (exchange,) = load_cassette(cassette).exchanges
    headers = dict(exchange.request.headers)
    assert headers["x-trace-id"] == "trace-7"
    assert headers["x-api-key"] != ANTHROPIC_KEY and "redacted" in headers["x-api-key"]
    assert ANTHROPIC_KEY not in cassette.read_text()

    replayed = _replay(cassette, run)
    assert answers[-1] == (200, "Hello.")
    assert [r.source for r in replayed.requests] == ["cassette"]
    assert dict(replayed.requests[0].headers)["x-trace-id"] == "trace-7"


def test_a_retrying_middleware_retries_each_attempt_recorded_and_replayed(tmp_path: Path) -> None:
    cassette = tmp_path / "retried.json"
    stand = Stand(busy=2)
    answers: list[tuple[int, str]] = []

    def run() -> None:
        answers.append(asyncio.run(_chat(middlewares=(_retrying,))))

    recorded = _record(cassette, httpx2.MockTransport(stand), run)
    assert answers == [(200, "Hello.")]
    assert len(stand.requests) == 3
    assert [r.status for r in recorded.requests] == [503, 503, 200]
    assert [e.response.status for e in load_cassette(cassette).exchanges] == [503, 503, 200]

    replayed = _replay(cassette, run)  # the cassette answers 503, 503, then 200
    assert answers[-1] == (200, "Hello.")
    assert [r.source for r in replayed.requests] == ["cassette"] * 3


def test_near_miss_without_middlewares_the_503_reaches_the_caller(tmp_path: Path) -> None:
    stand = Stand(busy=1)
    session = CaptureSession(upstream=httpx2.MockTransport(stand))

    async def chat() -> int:
        async with aiohttp.ClientSession() as client, client.post(CHAT, json=ASK) as response:
            return int(response.status)

    with session.intercept():
        assert asyncio.run(chat()) == 503
    assert len(stand.requests) == 1


REQUEST_EVENTS = (
    "on_request_start",
    "on_request_headers_sent",
    "on_request_chunk_sent",
    "on_response_chunk_received",
    "on_request_end",
)


def _traced(events: list[str]) -> Any:
    config = aiohttp.TraceConfig()
    for name in REQUEST_EVENTS:

        async def heard(session: Any, context: Any, params: Any, name: str = name) -> None:
            events.append(name)

        getattr(config, name).append(heard)
    return config


def test_trace_configs_hear_the_request_as_they_do_without_capture(
    loopback: tuple[str, list[Seen]],
) -> None:
    url, seen = loopback
    alone: list[str] = []
    asyncio.run(_post(url, lambda: {"data": b"x" * 10}, trace_configs=[_traced(alone)]))
    assert "on_request_start" in alone and "on_request_end" in alone
    captured: list[str] = []
    session = CaptureSession(config=CaptureConfig.of({"hosts": ["127.0.0.1"]}))
    with session.intercept():
        asyncio.run(_post(url, lambda: {"data": b"x" * 10}, trace_configs=[_traced(captured)]))
    assert captured == alone
    assert len(seen) == 2


def test_a_captured_redirect_is_followed_as_aiohttp_follows_it(tmp_path: Path) -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/old":
            return httpx2.Response(307, headers={"location": "/v1/chat/completions"})
        return httpx2.Response(200, json=chat_completion())

    session = CaptureSession(upstream=httpx2.MockTransport(answer))

    async def chat() -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as client,
            client.post("https://api.openai.com/v1/old", json=ASK) as response,
        ):
            return int(response.status), str(response.url)

    with session.intercept():
        assert asyncio.run(chat()) == (200, CHAT)
    assert [(r.status, r.url) for r in session.requests] == [
        (307, "https://api.openai.com/v1/old"),
        (200, CHAT),
    ]
    assert session.requests[0].body == session.requests[1].body == json.dumps(ASK).encode()
