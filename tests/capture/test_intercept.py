"""Interception: every httpx and httpx2 client sends through the capture session, code untouched.

The clients here are made the way agent code makes them: before the capture starts or inside it,
sync and async, by the SDKs themselves (`anthropic.Anthropic()` with no `http_client`), with
transports of their own. "The network" is the client's own mock transport or `harness_upstream`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from harness._shared._errors import UsageError
from harness.capture import (
    CaptureConfig,
    CaptureSession,
    CassetteMismatch,
    CassetteMissing,
    ExactBodyMatcher,
)
from tests.support.stand_ins import anthropic_message, chat_completion

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
CHAT_URL = "https://api.openai.com/v1/chat/completions"


class Upstream:
    """A provider stand-in that counts what reached it (sync and async, httpx2 or httpx)."""

    def __init__(self, module: Any = httpx2) -> None:
        self.module = module
        self.seen: list[str] = []

    def __call__(self, request: Any) -> Any:
        self.seen.append(f"{request.method} {request.url.host}{request.url.path}")
        if request.url.path.endswith("/messages"):
            return self.module.Response(200, json=anthropic_message())
        if request.url.path.endswith("/chat/completions"):
            return self.module.Response(200, json=chat_completion())
        return self.module.Response(200, json={"elsewhere": True})

    def transport(self) -> Any:
        return self.module.MockTransport(self)


def ask(client: anthropic.Anthropic, tools: tuple[str, ...] = ("bash", "grep")) -> str:
    reply = client.messages.create(
        model="claude-test",
        max_tokens=64,
        system="You are careful.",
        tools=[{"name": n, "input_schema": {"type": "object"}} for n in tools],  # type: ignore[misc]
        messages=[{"role": "user", "content": "Weather?"}],
    )
    return reply.content[0].text  # type: ignore[union-attr]


def record(path: Path, run: Any, **config: Any) -> None:
    """Run `run()` intercepted in record mode against a stand-in, and write the cassette."""
    session = CaptureSession.for_test(
        path,
        "record",
        writes_allowed=True,
        upstream=Upstream().transport(),
        config=CaptureConfig.of(config),
    )
    with session.intercept():
        run()
    path.write_bytes(session.finish().files[0][1])


@pytest.mark.slow
def test_an_sdk_client_made_before_the_capture_is_captured_and_replayed(tmp_path: Path) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test")  # built before, no http_client passed
    path = tmp_path / "turn.json"
    record(path, lambda: ask(client))

    replay = CaptureSession.for_test(path, "check", writes_allowed=False)
    with replay.intercept():
        assert ask(client) == "Sunny."
    assert [r.source for r in replay.requests] == ["cassette"]
    assert replay.requests[0].split is not None
    assert replay.requests[0].split.provider == "anthropic"

    again = CaptureSession.for_test(path, "check", writes_allowed=False)
    with again.intercept(), pytest.raises(CassetteMismatch, match="tools block first"):
        ask(anthropic.Anthropic(api_key="sk-ant-test"), tools=("grep", "bash"))


def test_the_patches_are_undone_after_the_block_also_when_it_fails() -> None:
    originals = (
        httpx2.Client._transport_for_url,
        httpx2.AsyncClient._transport_for_url,
        httpx.Client._transport_for_url,
        httpx.AsyncClient._transport_for_url,
    )
    session = CaptureSession(upstream=Upstream().transport())
    with pytest.raises(RuntimeError), session.intercept():
        assert httpx2.Client._transport_for_url is not originals[0]
        raise RuntimeError("the test failed")
    assert (
        httpx2.Client._transport_for_url,
        httpx2.AsyncClient._transport_for_url,
        httpx.Client._transport_for_url,
        httpx.AsyncClient._transport_for_url,
    ) == originals


def test_hosts_no_provider_answers_on_pass_through_untouched() -> None:
    own = Upstream()
    client = httpx2.Client(transport=own.transport())
    session = CaptureSession(upstream=Upstream().transport())
    with session.intercept():
        assert client.get("https://example.test/data").json() == {"elsewhere": True}
        client.post(CHAT_URL, json={"model": "m", "messages": []})
    assert own.seen == ["GET example.test/data"]  # the chat request went to the session
    assert [r.url for r in session.requests] == [CHAT_URL]


def test_without_an_upstream_the_clients_own_transport_is_the_network() -> None:
    own = Upstream()
    client = openai.OpenAI(api_key="sk-test", http_client=httpx2.Client(transport=own.transport()))
    session = CaptureSession()  # record, no harness_upstream
    with session.intercept():
        reply = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content == "Hello."
    assert own.seen == ["POST api.openai.com/v1/chat/completions"]
    assert session.requests[0].source == "upstream"


def test_async_clients_and_plain_httpx_clients_are_captured(tmp_path: Path) -> None:
    plain = Upstream(httpx)
    client = openai.AsyncOpenAI(
        api_key="sk-test", http_client=httpx.AsyncClient(transport=plain.transport())
    )

    async def chat() -> str:
        reply = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
        return reply.choices[0].message.content or ""

    path = tmp_path / "async.json"
    record(path, lambda: asyncio.run(chat()))
    assert plain.seen == []  # recorded from harness_upstream, never the client's own transport

    replay = CaptureSession.for_test(path, "check", writes_allowed=False)
    with replay.intercept():
        assert asyncio.run(chat()) == "Hello."
        raw = httpx.Client(transport=plain.transport())
        with pytest.raises(CassetteMissing):  # a second request the cassette does not hold
            raw.post(CHAT_URL, content=b'{"model":"gpt-test","messages":[]}')


def test_a_client_already_on_a_capture_transport_is_captured_once() -> None:
    session = CaptureSession(upstream=Upstream().transport())
    with session.intercept():
        ask(anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client()))
    assert len(session.requests) == 1


def test_config_hosts_add_and_ignore_hosts_remove(tmp_path: Path) -> None:
    own = Upstream()
    client = httpx2.Client(transport=own.transport())
    config = CaptureConfig.of({"hosts": ["llm.internal:8080"], "ignore_hosts": ["api.openai.com"]})
    session = CaptureSession(upstream=Upstream().transport(), config=config)
    with session.intercept():
        client.post("http://llm.internal:8080/v1/chat/completions", json={"messages": []})
        client.post(CHAT_URL, json={"model": "m", "messages": []})
    assert [r.url for r in session.requests] == ["http://llm.internal:8080/v1/chat/completions"]
    assert own.seen == ["POST api.openai.com/v1/chat/completions"]


def test_nested_interception_captures_in_the_innermost_session() -> None:
    outer = CaptureSession(upstream=Upstream().transport())
    inner = CaptureSession(upstream=Upstream().transport())
    client = anthropic.Anthropic(api_key="sk-ant-test")
    with outer.intercept():
        ask(client)
        with inner.intercept():
            ask(client)
        ask(client)
    assert (len(outer.requests), len(inner.requests)) == (2, 1)


def test_threads_send_through_the_session_too() -> None:
    import concurrent.futures

    session = CaptureSession(upstream=Upstream().transport())
    client = anthropic.Anthropic(api_key="sk-ant-test")
    with session.intercept(), concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: ask(client), range(2)))
    assert len(session.requests) == 2


def test_the_config_is_read_strictly() -> None:
    config = CaptureConfig.of(
        {
            "redact_headers": ["X-Tenant-Token"],
            "redact_query": ["session"],
            "secret_patterns": [r"acme_live_[0-9a-f]{8}"],
            "allow": ["sk-test-fake"],
            "matcher": "exact_body",
        }
    )
    assert isinstance(config.matcher, ExactBodyMatcher)
    redaction = config.redaction()
    assert "x-tenant-token" in redaction.headers and "authorization" in redaction.headers
    assert redaction.scan(b'{"k": "acme_live_0123abcd"}')
    with pytest.raises(UsageError, match="unknown key 'hostz'; the valid keys are"):
        CaptureConfig.of({"hostz": ["x"]})
    with pytest.raises(UsageError, match="unknown matcher 'fuzzy'; expected one of"):
        CaptureConfig.of({"matcher": "fuzzy"})
    with pytest.raises(UsageError, match="hosts takes a list of strings"):
        CaptureConfig.of({"hosts": "llm.internal"})
    with pytest.raises(UsageError, match="must return a dict"):
        CaptureConfig.of(["hosts"])


def test_redaction_from_the_config_reaches_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "redacted.json"

    def run() -> None:
        client = httpx2.Client(headers={"x-tenant-token": "tenant-0123456789"})
        client.post(f"{ANTHROPIC_URL}?session=abcdef123456", json={"messages": [], "system": "s"})

    record(path, run, redact_headers=["x-tenant-token"], redact_query=["session"])
    text = path.read_text()
    assert "tenant-0123456789" not in text and "abcdef123456" not in text
    assert "session=[redacted]" in text
    assert json.loads(text)["exchanges"][0]["request"]["headers"][-1][1] != "tenant-0123456789"
