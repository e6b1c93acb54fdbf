"""The clients under capture, attacked a third time (issue 32): urllib3's status retries, a
compressed request body, botocore's retries of a replay mismatch.

Each runs the real library (`requests` over urllib3, boto3 over botocore) under a capture
session against an in-process stand-in (an httpx2 `MockTransport`, or a loopback HTTP server
for the comparison with urllib3 left alone), records, then replays from the written cassette.

Before: a 503 under `Retry(status_forcelist=[503])` reached the caller without a retry (the patch
replaced the `urlopen` that retries); a gzip body was judged as opaque bytes (a correct
conversation broke the gate, and the next run's gzip timestamp broke replay); a replay mismatch
reached boto3's caller as an `HTTPClientError` after three attempts.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureConfig, CaptureSession, CassetteMismatch, load_cassette
from tests.support.inner import inner_pytest
from tests.support.stand_ins import chat_completion

requests = pytest.importorskip("requests")
boto3 = pytest.importorskip("boto3")
from requests.adapters import HTTPAdapter  # noqa: E402
from urllib3.util.retry import Retry  # noqa: E402

CHAT = "https://api.openai.com/v1/chat/completions"
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("a", "b")]
CONVERSE = {
    "output": {"message": {"role": "assistant", "content": [{"text": "Sunny."}]}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 9, "outputTokens": 1, "totalTokens": 10},
    "metrics": {"latencyMs": 1},
}


class Busy:
    """A stand-in that answers `busy` 503s (then 200s), keeping every attempt's body."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(bytes(request.content))
        if len(self.bodies) <= self.busy:
            return httpx2.Response(503, json={"error": {"message": "overloaded"}})
        return httpx2.Response(200, json=chat_completion())


def record(path: Path, run: Callable[[], Any], upstream: Any, **config: Any) -> CaptureSession:
    """`run()` captured in record mode against `upstream`; its cassette written to `path`."""
    session = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=upstream, config=CaptureConfig.of(config)
    )
    with session.intercept():
        run()
    finished = session.finish()
    assert not finished.prefix_breaks, [b.to_text() for b in finished.prefix_breaks]
    path.write_bytes(finished.files[0][1])
    return session


def replay(path: Path, run: Callable[[], Any], **config: Any) -> CaptureSession:
    session = CaptureSession.for_test(
        path, "check", writes_allowed=False, config=CaptureConfig.of(config)
    )
    with session.intercept():
        run()
    assert not session.errors, session.errors
    assert not session.prefix_breaks()
    return session


def retrying(retry: Retry) -> Any:
    client = requests.Session()
    client.mount("https://", HTTPAdapter(max_retries=retry))
    client.mount("http://", HTTPAdapter(max_retries=retry))
    return client


ASK = {"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]}


# -- 1. urllib3's status retries -------------------------------------------------------------


def test_a_503_under_a_status_forcelist_is_retried_recorded_per_attempt_and_replayed(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "retry.json"
    retry = Retry(total=3, status_forcelist=[429, 503], allowed_methods=None)
    statuses: list[int] = []

    def run() -> None:
        statuses.append(retrying(retry).post(CHAT, json=ASK).status_code)

    stand_in = Busy(busy=1)
    recorded = record(cassette, run, httpx2.MockTransport(stand_in))
    assert statuses == [200]
    assert len(stand_in.bodies) == 2 and stand_in.bodies[0] == stand_in.bodies[1]
    assert [e.response.status for e in load_cassette(cassette).exchanges] == [503, 200]
    assert len(recorded.requests) == 2

    replayed = replay(cassette, run)  # no upstream: the cassette answers 503, then 200
    assert statuses == [200, 200]
    assert [r.source for r in replayed.requests] == ["cassette", "cassette"]


def test_near_miss_a_post_urllib3_does_not_retry_gets_its_503_once(tmp_path: Path) -> None:
    # urllib3's default `allowed_methods` leaves POST out: it hands the 503 back, unretried
    statuses: list[int] = []

    def run() -> None:
        statuses.append(
            retrying(Retry(total=3, status_forcelist=[503])).post(CHAT, json=ASK).status_code
        )

    stand_in = Busy(busy=1)
    record(tmp_path / "once.json", run, httpx2.MockTransport(stand_in))
    assert statuses == [503] and len(stand_in.bodies) == 1


def test_spent_status_retries_raise_as_urllib3_raises_them(tmp_path: Path) -> None:
    stand_in = Busy(busy=10)
    session = CaptureSession(upstream=httpx2.MockTransport(stand_in))
    client = retrying(Retry(total=2, status_forcelist=[503], allowed_methods=None))
    with session.intercept(), pytest.raises(requests.exceptions.RetryError, match="503"):
        client.post(CHAT, json=ASK)
    assert len(stand_in.bodies) == 3  # the first attempt and two retries


class _Server(BaseHTTPRequestHandler):
    busy = 2
    seen: list[str]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.seen.append(self.path)
        status = 503 if len(self.seen) <= self.busy else 200
        body = json.dumps(chat_completion()).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that answers two 503s, then 200s: its URL and the paths it got."""
    seen: list[str] = []
    handler = type("Handler", (_Server,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/chat/completions", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_captured_without_an_upstream_the_server_sees_the_attempts_urllib3_sends_alone(
    loopback: tuple[str, list[str]],
) -> None:
    url, seen = loopback
    retry = Retry(total=3, status_forcelist=[503], allowed_methods=None)
    assert retrying(retry).post(url, json=ASK).status_code == 200
    alone = len(seen)
    assert alone == 3
    seen.clear()
    session = CaptureSession(config=CaptureConfig.of({"hosts": ["127.0.0.1"]}))
    with session.intercept():
        assert retrying(retry).post(url, json=ASK).status_code == 200
    assert len(seen) == alone  # not one more: the status retries are not done twice
    assert [r.status for r in session.requests] == [503, 503, 200]


# -- 2. a compressed request body ------------------------------------------------------------


def _zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return bytes(zstandard.ZstdCompressor().compress(data))


COMPRESS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": lambda data, run: gzip.compress(data, compresslevel=run + 5, mtime=run),
    "deflate": lambda data, run: zlib.compress(data, run + 5),
    "zstd": lambda data, run: _zstd(data),
}


def conversation(encoding: str, run: int, swap: bool = False) -> Callable[[], None]:
    """Two turns of a chat, each body compressed (another level and timestamp each `run`)."""

    def send() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather?"}]
        for turn in (1, 2):
            tools = TOOLS[::-1] if swap and turn == 2 else TOOLS
            body = json.dumps({"model": "gpt-test", "tools": tools, "messages": messages})
            headers = {"content-type": "application/json", "content-encoding": encoding}
            reply = requests.post(
                CHAT, data=COMPRESS[encoding](body.encode(), run), headers=headers
            )
            assert reply.status_code == 200
            messages += [
                {"role": "assistant", "content": "Sunny."},
                {"role": "user", "content": "And?"},
            ]

    return send


@pytest.mark.parametrize("encoding", sorted(COMPRESS))
def test_a_compressed_conversation_is_judged_decoded_sent_as_is_and_replayed(
    tmp_path: Path, encoding: str
) -> None:
    cassette = tmp_path / f"{encoding}.json"
    sent: list[bytes] = []

    def stand_in(request: httpx2.Request) -> httpx2.Response:
        sent.append(bytes(request.content))
        return httpx2.Response(200, json=chat_completion())

    session = record(cassette, conversation(encoding, 1), httpx2.MockTransport(stand_in))
    assert [r.provider for r in session.requests] == ["openai-chat", "openai-chat"]
    first = {
        "model": "gpt-test",
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "Weather?"}],
    }
    assert sent[0] == COMPRESS[encoding](json.dumps(first).encode(), 1)  # the bytes, as sent
    stored = load_cassette(cassette).exchanges[0].request
    assert stored.parsed["tools"] == TOOLS  # the body as the provider reads it
    assert "content-encoding" not in dict(stored.headers)
    replay(cassette, conversation(encoding, 2))  # other compressed bytes, the same content


def test_near_miss_a_tool_moved_in_a_gzip_body_breaks_the_gate_as_the_providers_tools(
    tmp_path: Path,
) -> None:
    session = CaptureSession(upstream=httpx2.MockTransport(Busy(busy=0)))
    with session.intercept():
        conversation("gzip", 1, swap=True)()
    (found,) = session.prefix_breaks()
    assert "tools" in found.to_text().splitlines()[0]
    assert session.requests[1].provider == "openai-chat"


@pytest.mark.parametrize(
    ("encoding", "why"), [("br", "brotli"), ("gzip", "do not decompress"), ("snappy", "snappy")]
)
def test_a_body_the_capture_cannot_decode_is_opaque_sent_as_is_with_a_note(
    encoding: str, why: str
) -> None:
    sent: list[bytes] = []

    def stand_in(request: httpx2.Request) -> httpx2.Response:
        sent.append(bytes(request.content))
        return httpx2.Response(200, json=chat_completion())

    body = b"\x8b\x00not what the header says" + json.dumps(ASK).encode()
    session = CaptureSession(upstream=httpx2.MockTransport(stand_in))
    headers = {"content-type": "application/json", "content-encoding": encoding}
    with session.intercept():
        requests.post(CHAT, data=body, headers=headers)
    assert sent == [body]
    (captured,) = session.requests
    assert captured.provider == "opaque" and captured.body == body
    assert any(encoding in note and why in note for note in session.notes), session.notes


# -- 3. botocore and a replay mismatch -------------------------------------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def converse(system: str, mode: str, attempts: list[str]) -> Callable[[], Any]:
    """boto3's Converse under retry `mode`; `attempts` gets one entry per attempt it sends."""
    from botocore.config import Config

    def run() -> Any:
        client = boto3.client("bedrock-runtime", config=Config(retries={"mode": mode}))
        client.meta.events.register("before-send", lambda **_: attempts.append(system))
        return client.converse(
            modelId="anthropic.claude-test",
            system=[{"text": system}],
            messages=[{"role": "user", "content": [{"text": "Weather?"}]}],
        )

    return run


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("mode", ["standard", "legacy", "adaptive"])
def test_a_replay_mismatch_reaches_boto3s_caller_once_unretried(tmp_path: Path, mode: str) -> None:
    cassette = tmp_path / "converse.json"
    attempts: list[str] = []
    answer = httpx2.MockTransport(lambda request: httpx2.Response(200, json=CONVERSE))
    record(cassette, converse("Be brief.", mode, attempts), answer)
    attempts.clear()
    session = CaptureSession.for_test(cassette, "check", writes_allowed=False)
    with session.intercept(), pytest.raises(CassetteMismatch, match="system block first") as error:
        converse("Be long.", mode, attempts)()
    assert attempts == ["Be long."]  # one attempt, no retry
    assert len(session.errors) == 1
    assert "HTTPClientError" not in repr(error.value)

    attempts.clear()
    replay(cassette, converse("Be brief.", mode, attempts))  # the near miss: the same request
    assert attempts == ["Be brief."]


@pytest.mark.usefixtures("aws")
def test_near_miss_a_connection_error_of_the_stand_in_is_still_retried_by_botocore(
    tmp_path: Path,
) -> None:
    calls: list[int] = []

    def flaky(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx2.ConnectError("the stand-in dropped the connection")
        return httpx2.Response(200, json=CONVERSE)

    attempts: list[str] = []
    flaky_upstream = httpx2.MockTransport(flaky)
    record(tmp_path / "flaky.json", converse("Be brief.", "standard", attempts), flaky_upstream)
    assert len(calls) == 2 and len(attempts) == 2


PLUGIN_CONFTEST = r"""
import json
import os

import httpx2
import pytest

os.environ.update(AWS_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE", AWS_DEFAULT_REGION="us-east-1",
                  AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
ANSWER = {"output": {"message": {"role": "assistant", "content": [{"text": "Sunny."}]}},
          "stopReason": "end_turn", "usage": {"inputTokens": 9, "outputTokens": 1,
          "totalTokens": 10}, "metrics": {"latencyMs": 1}}


@pytest.fixture
def harness_upstream():
    def answer(request):
        assert not os.environ.get("STAND_IN_DOWN"), "the stand-in was reached"
        return httpx2.Response(200, json=ANSWER)

    return httpx2.MockTransport(answer)
"""

PLUGIN_TEST = r"""
import os
from pathlib import Path

import boto3
import pytest


@pytest.mark.header_capture
def test_converse():
    client = boto3.client("bedrock-runtime")
    attempts = []
    client.meta.events.register("before-send", lambda **_: attempts.append(1))
    try:
        client.converse(modelId="anthropic.claude-test", system=[{"text": os.environ["SYSTEM"]}],
                        messages=[{"role": "user", "content": [{"text": "Weather?"}]}])
    finally:
        Path("attempts.txt").write_text(str(len(attempts)))
"""


@pytest.mark.slow
def test_a_boto3_replay_mismatch_fails_the_test_once_with_the_drift_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(PLUGIN_CONFTEST)
    pytester.makepyfile(test_boto=PLUGIN_TEST)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("SYSTEM", "Be brief.")
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    monkeypatch.setenv("SYSTEM", "Be long.")
    result = inner_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*does not match exchange 1*system block first*"])
    assert "HTTPClientError" not in result.stdout.str()
    assert (pytester.path / "attempts.txt").read_text() == "1"
