"""Capture: cache views of provider bodies, record and replay through the real SDKs, redaction.

Every test runs the real `anthropic` / `openai` clients over a capture transport; "the network"
is an `httpx2.MockTransport` (or a plain `httpx` one) that answers like the provider would.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import msgspec
import openai
import pytest
from stand_ins import anthropic_message

from harness import CacheView
from harness._errors import FixtureError
from harness._files import decode
from harness.capture import (
    REDACTED,
    CaptureError,
    CaptureFile,
    CaptureSession,
    CassetteMismatch,
    CassetteMissing,
    PrefixBroken,
    Redaction,
    SecretLeak,
    cassette_path_for,
    check_prefix_chain,
    current_session,
    scan_secrets,
)
from harness.providers import detect_provider, split_request, view_of_body

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"

# -- stand-in provider answers ------------------------------------------------------------------


def anthropic_events(text: str = "Sunny today.") -> bytes:
    message = {**anthropic_message(), "content": [], "stop_reason": None}
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


def chat_completion(text: str = "Hello.") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }


def chat_chunks(words: list[str]) -> bytes:
    chunks = []
    for index, word in enumerate(words):
        last = index == len(words) - 1
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-test",
            "choices": [
                {"index": 0, "delta": {"content": word}, "finish_reason": "stop" if last else None}
            ],
        }
        chunks.append(f"data: {json.dumps(chunk)}\n\n")
    return ("".join(chunks) + "data: [DONE]\n\n").encode()


def response_object(text: str = "Done.") -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "model": "gpt-test",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


class Provider:
    """A stand-in for the providers' APIs that keeps every request it got, bytes as sent."""

    def __init__(self, *, extra_headers: dict[str, str] | None = None) -> None:
        self.bodies: list[bytes] = []
        self.extra_headers = extra_headers or {}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(request.content)
        body = json.loads(request.content)
        headers = dict(self.extra_headers)
        if request.url.path.endswith("/messages"):
            if body.get("stream"):
                headers["content-type"] = "text/event-stream"
                return httpx2.Response(200, content=anthropic_events(), headers=headers)
            return httpx2.Response(200, json=anthropic_message(), headers=headers)
        if request.url.path.endswith("/responses"):
            return httpx2.Response(200, json=response_object(), headers=headers)
        if body.get("stream"):
            headers["content-type"] = "text/event-stream"
            return httpx2.Response(200, content=chat_chunks(["Hel", "lo."]), headers=headers)
        return httpx2.Response(200, json=chat_completion(), headers=headers)

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)


def tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


def function_tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": f"The {name} tool.", "parameters": {}},
    }


TOOLS = [tool("bash"), tool("grep"), tool("read_file")]
SYSTEM = "You are a careful agent."


def claude(session: CaptureSession) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())


def gpt(session: CaptureSession) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", http_client=session.httpx2_client())


def ask_claude(session: CaptureSession, tools: list[dict[str, Any]] = TOOLS, **extra: Any) -> Any:
    return claude(session).messages.create(
        model="claude-test",
        max_tokens=64,
        system=SYSTEM,
        tools=tools,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "Weather?"}],
        **extra,
    )


def recorded(tmp_path: Path, run: Any, *, name: str = "cassette.json") -> Path:
    """Record `run(session)` against the stand-in provider and write the cassette."""
    path = tmp_path / name
    session = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=Provider().transport()
    )
    run(session)
    files, _ = session.finish()
    assert [target for target, _ in files] == [path]
    path.write_bytes(files[0][1])
    return path


# -- provider views ------------------------------------------------------------------------------


def test_anthropic_body_splits_into_tools_system_messages_with_cache_keying_settings() -> None:
    body = {
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
        "model": "claude-test",
        "metadata": {"user_id": "u1"},
        "stream": True,
        "system": SYSTEM,
        "temperature": 0.2,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "auto"},
        "tools": TOOLS,
    }
    split = split_request(body, url=ANTHROPIC_URL, headers={"anthropic-beta": "b-2, b-1"})

    assert split is not None and split.provider == "anthropic"
    assert list(split.view.blocks) == ["tools", "system", "messages"]
    assert split.view.settings == {
        "anthropic-beta": ["b-2", "b-1"],
        "model": "claude-test",
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "auto"},
    }
    assert split.rule == "automatic"  # no cache_control: tools and system are the prefix
    assert list(split.prefix.blocks) == ["tools", "system"]


def test_anthropic_prefix_ends_at_the_last_cache_control_breakpoint() -> None:
    mark = {"type": "ephemeral"}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "one", "cache_control": mark}]},
        {"role": "assistant", "content": "two"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "three", "cache_control": mark},
                {"type": "text", "text": "after the breakpoint"},
            ],
        },
    ]
    body = {"model": "m", "system": [{"type": "text", "text": SYSTEM}], "tools": TOOLS}
    split = split_request({**body, "messages": messages}, url=ANTHROPIC_URL)

    assert split is not None
    assert split.rule == "breakpoint"
    assert split.breakpoint == "/messages/2/content/0/cache_control"
    assert split.prefix.blocks["messages"][2]["content"] == [messages[2]["content"][0]]
    assert split.prefix_bytes < len(msgspec.json.encode(split.view.blocks))

    whole = split_request({**body, "messages": messages, "cache_control": mark}, url=ANTHROPIC_URL)
    assert whole is not None and whole.rule == "whole-request"
    assert whole.prefix == whole.view


def test_openai_chat_order_is_tools_schemas_then_leading_system_messages() -> None:
    body = {
        "model": "gpt-test",
        "messages": [
            {"role": "developer", "content": "rules"},
            {"role": "system", "content": "more rules"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "a late system message stays in place"},
        ],
        "tools": [function_tool("b"), function_tool("a")],
        "response_format": {"type": "json_object"},
        "reasoning_effort": "low",
        "prompt_cache_key": "agent-1",
        "service_tier": "priority",
        "max_completion_tokens": 100,
        "stream": True,
        "user": "u1",
    }
    split = split_request(body, url=CHAT_URL)

    assert split is not None and split.provider == "openai-chat"
    assert list(split.view.blocks) == ["tools", "response_format", "system", "messages"]
    assert [m["role"] for m in split.view.blocks["system"]] == ["developer", "system"]
    assert len(split.view.blocks["messages"]) == 2
    assert split.view.settings == {
        "model": "gpt-test",
        "prompt_cache_key": "agent-1",
        "reasoning_effort": "low",
        "service_tier": "priority",
    }
    assert split.prefix == split.view  # exact-prefix caching: the whole request


def test_deepseek_puts_system_before_tools_and_responses_use_their_own_blocks() -> None:
    body = {"model": "deepseek-chat", "messages": [{"role": "system", "content": "s"}], "tools": []}
    deepseek = split_request(body, url="https://api.deepseek.com/chat/completions")
    assert deepseek is not None and list(deepseek.view.blocks) == ["system", "tools", "messages"]

    responses = {
        "model": "gpt-test",
        "input": [{"role": "user", "content": "hi"}],
        "instructions": "be brief",
        "tools": [{"type": "function", "name": "f", "parameters": {}}],
        "text": {"format": {"type": "text"}},
        "reasoning": {"effort": "high"},
        "previous_response_id": "resp_0",
    }
    split = split_request(responses, url=RESPONSES_URL)
    assert split is not None and split.provider == "openai-responses"
    assert list(split.view.blocks) == ["tools", "response_format", "instructions", "input"]
    assert split.view.settings == {"model": "gpt-test", "reasoning": {"effort": "high"}}


def test_bodies_are_recognised_by_shape_without_a_url_and_unknown_ones_give_none() -> None:
    assert detect_provider({"system": "s", "messages": []}) == "anthropic"
    assert detect_provider({"messages": [{"role": "developer", "content": "x"}]}) == "openai-chat"
    assert detect_provider({"input": "hi"}) == "openai-responses"
    assert detect_provider({"messages": [{"role": "user", "content": "hi"}]}) is None
    assert view_of_body({"input": "text", "model": "e"}, url="https://x/v1/embeddings") is None
    assert view_of_body({"messages": []}, url=f"{ANTHROPIC_URL}/count_tokens") is None
    view = view_of_body({"system": "s", "messages": [], "model": "m"})
    assert isinstance(view, CacheView) and view.provider == "anthropic"


# -- record and replay with the real SDKs --------------------------------------------------------


def test_anthropic_sdk_records_exact_body_bytes_and_replays_without_network(
    tmp_path: Path,
) -> None:
    provider = Provider()
    path = tmp_path / "turn.json"
    session = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=provider.transport()
    )
    first = ask_claude(session)
    files, breaks = session.finish()

    assert breaks == []
    assert session.requests[0].body == provider.bodies[0]  # exactly what the SDK sent
    cassette = decode(files[0][1], CaptureFile, path)
    assert cassette.exchanges[0].request.body == provider.bodies[0]
    assert cassette.exchanges[0].request.json["tools"][0]["name"] == "bash"  # readable
    path.write_bytes(files[0][1])

    replay = CaptureSession.for_test(path, "check", writes_allowed=True)  # no upstream at all
    again = ask_claude(replay)
    assert again.content[0].text == first.content[0].text == "Sunny."
    assert replay.requests[0].source == "cassette"
    assert replay.finish() == ([], [])


def test_rerecording_the_same_conversation_gives_identical_bytes(tmp_path: Path) -> None:
    one = recorded(tmp_path, ask_claude, name="one.json")
    two = recorded(tmp_path, ask_claude, name="two.json")
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes().endswith(b"\n")
    assert b"x-stainless" not in one.read_bytes()  # per-machine headers are dropped


def test_anthropic_stream_replays_server_sent_events(tmp_path: Path) -> None:
    def stream(session: CaptureSession) -> str:
        with claude(session).messages.stream(
            model="claude-test",
            max_tokens=64,
            system=SYSTEM,
            messages=[{"role": "user", "content": "Weather?"}],
        ) as events:
            return "".join(events.text_stream)

    path = recorded(tmp_path, stream)
    text = path.read_text()
    assert '"lines": [' in text and '"event: message_start",' in text  # one line per SSE line
    cassette = decode(path.read_bytes(), CaptureFile, path)
    assert cassette.exchanges[0].response.body == anthropic_events()

    assert stream(CaptureSession.for_test(path, "check", writes_allowed=True)) == "Sunny today."


def test_openai_chat_stream_and_async_anthropic_replay(tmp_path: Path) -> None:
    def chat(session: CaptureSession) -> str:
        chunks = gpt(session).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        return "".join(chunk.choices[0].delta.content or "" for chunk in chunks)

    path = recorded(tmp_path, chat, name="chat.json")
    assert chat(CaptureSession.for_test(path, "check", writes_allowed=True)) == "Hello."

    path = recorded(tmp_path, ask_claude, name="async.json")
    session = CaptureSession.for_test(path, "check", writes_allowed=True)

    async def ask() -> str:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test", http_client=session.httpx2_async_client()
        )
        reply = await client.messages.create(
            model="claude-test",
            max_tokens=64,
            system=SYSTEM,
            tools=TOOLS,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "Weather?"}],
        )
        return reply.content[0].text  # type: ignore[union-attr]

    assert asyncio.run(ask()) == "Sunny."


def test_openai_responses_api_is_captured_in_its_cache_order(tmp_path: Path) -> None:
    session = CaptureSession(upstream=Provider().transport())
    reply = gpt(session).responses.create(
        model="gpt-test",
        instructions="be brief",
        input="hi",
        tools=[{"type": "function", "name": "f", "parameters": {}, "strict": True}],
        reasoning={"effort": "low"},
        prompt_cache_key="k",
    )
    assert reply.output_text == "Done."
    split = session.requests[0].split
    assert split is not None and split.provider == "openai-responses"
    assert list(split.view.blocks) == ["tools", "instructions", "input"]
    assert split.view.settings["prompt_cache_key"] == "k"


def test_anthropic_beta_header_is_a_cache_setting(tmp_path: Path) -> None:
    session = CaptureSession(upstream=Provider().transport())
    claude(session).beta.messages.create(
        model="claude-test",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        betas=["context-1m-2025-08-07"],
    )
    view = session.views()[0]
    assert view.settings["anthropic-beta"] == ["context-1m-2025-08-07"]


def test_plain_httpx_clients_and_transports_work_too(tmp_path: Path) -> None:
    httpx = pytest.importorskip("httpx")
    if httpx.Client is httpx2.Client:
        pytest.skip("httpx is aliased to httpx2 in this process")
    provider = Provider()

    def plain_upstream(request: Any) -> Any:  # an httpx (not httpx2) mock of the provider
        answer = provider(httpx2.Request(request.method, str(request.url), content=request.content))
        return httpx.Response(
            answer.status_code, headers=answer.headers.raw, content=answer.content
        )

    # an httpx2 client forwarding to a plain httpx upstream
    session = CaptureSession(upstream=httpx.MockTransport(plain_upstream))
    assert ask_claude(session).content[0].text == "Sunny."

    # the openai SDK over a plain httpx client, recorded then replayed
    path = tmp_path / "plain.json"
    recording = CaptureSession.for_test(
        path, "record", writes_allowed=True, upstream=httpx.MockTransport(plain_upstream)
    )
    client = openai.OpenAI(api_key="sk-test", http_client=recording.httpx_client())
    client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
    path.write_bytes(recording.finish().files[0][1])

    replay = CaptureSession.for_test(path, "check", writes_allowed=True)
    raw = replay.httpx_client().post(CHAT_URL, content=provider.bodies[-1])
    assert raw.json()["choices"][0]["message"]["content"] == "Hello."
    assert isinstance(replay.httpx_transport(), httpx.BaseTransport)


# -- replay errors and modes ---------------------------------------------------------------------


def test_a_reordered_request_fails_replay_naming_the_cassette_and_the_block(tmp_path: Path) -> None:
    path = recorded(tmp_path, ask_claude)
    replay = CaptureSession.for_test(path, "check", writes_allowed=True)

    with pytest.raises(CassetteMismatch) as caught:  # raised as itself: no SDK wrapping or retry
        ask_claude(replay, tools=list(reversed(TOOLS)))

    message = str(caught.value)
    assert str(path) in message and "tools block first" in message
    assert caught.value.report is not None and caught.value.report.tool == "read_file"
    assert replay.errors and replay.finish().files == []
    assert isinstance(caught.value, anthropic.AnthropicError)  # why the SDK lets it through


def test_a_change_after_the_breakpoint_is_named_as_such(tmp_path: Path) -> None:
    mark = {"type": "ephemeral"}

    def run(session: CaptureSession, text: str = "tail") -> None:
        claude(session).messages.create(
            model="claude-test",
            max_tokens=64,
            system=[{"type": "text", "text": SYSTEM, "cache_control": mark}],
            messages=[{"role": "user", "content": text}],
        )

    path = recorded(tmp_path, run)
    with pytest.raises(CassetteMismatch, match="after the cacheable prefix"):
        run(CaptureSession.for_test(path, "check", writes_allowed=True), "another tail")


def test_missing_cassettes_and_extra_requests_are_errors_in_check_mode(tmp_path: Path) -> None:
    missing = CaptureSession.for_test(tmp_path / "none.json", "check", writes_allowed=True)
    with pytest.raises(CassetteMissing, match="does not exist"):
        ask_claude(missing)

    path = recorded(tmp_path, ask_claude)
    replay = CaptureSession.for_test(path, "check", writes_allowed=True)
    ask_claude(replay)
    with pytest.raises(CassetteMissing, match="holds no further POST /v1/messages"):
        ask_claude(replay)


def test_update_mode_rewrites_requests_and_keeps_recorded_answers(tmp_path: Path) -> None:
    path = recorded(tmp_path, ask_claude)
    before = decode(path.read_bytes(), CaptureFile, path)
    session = CaptureSession.for_test(path, "update", writes_allowed=True)  # no upstream needed
    ask_claude(session, tools=list(reversed(TOOLS)))

    files, _ = session.finish()
    after = decode(files[0][1], CaptureFile, path)
    assert [t["name"] for t in after.exchanges[0].request.json["tools"]] == [
        "read_file",
        "grep",
        "bash",
    ]
    assert after.exchanges[0].response == before.exchanges[0].response

    unchanged = CaptureSession.for_test(path, "update", writes_allowed=True)
    ask_claude(unchanged)
    assert unchanged.finish().files == []  # same bytes: nothing to write


def test_update_new_only_appends_what_is_missing_and_never_rewrites(tmp_path: Path) -> None:
    path = recorded(tmp_path, ask_claude)
    session = CaptureSession.for_test(
        path, "update-new-only", writes_allowed=True, upstream=Provider().transport()
    )
    ask_claude(session)
    assert session.finish().files == []

    session = CaptureSession.for_test(
        path, "update-new-only", writes_allowed=True, upstream=Provider().transport()
    )
    ask_claude(session)
    ask_claude(session, tools=TOOLS[:1])  # a request the cassette does not hold
    files, _ = session.finish()
    assert len(decode(files[0][1], CaptureFile, path).exchanges) == 2


def test_no_writes_where_writes_are_not_allowed(tmp_path: Path) -> None:
    session = CaptureSession.for_test(
        tmp_path / "c.json", "record", writes_allowed=False, upstream=Provider().transport()
    )
    assert session.mode == "check" and session.notes
    with pytest.raises(CassetteMissing):
        ask_claude(session)
    assert session.finish().files == []


def test_unknown_mode_and_corrupt_cassette_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown capture mode"):
        CaptureSession(mode="sometimes")
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "harness/capture", "format": 1, "exchanges": [')
    with pytest.raises(FixtureError, match=r"bad\.json: is not valid JSON"):
        CaptureSession.for_test(bad, "check", writes_allowed=True)


# -- redaction -----------------------------------------------------------------------------------

REAL_LOOKING_KEY = "sk-ant-api03-" + "Ab3xK9" * 12


def test_secret_headers_and_query_parameters_never_reach_the_bytes(tmp_path: Path) -> None:
    provider = Provider(extra_headers={"set-cookie": "session=abc123secretcookie"})
    session = CaptureSession.for_test(
        tmp_path / "c.json", "record", writes_allowed=True, upstream=provider.transport()
    )
    client = anthropic.Anthropic(
        api_key="my-own-key-0123456789",
        http_client=session.httpx2_client(
            headers={"cookie": "sid=cookie-value-0123", "x-portkey-api-key": "portkey-0123456789"}
        ),
    )
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    session.httpx2_client().post(
        "https://api.anthropic.com/v1/messages?key=query-secret-0123&beta=true",
        json={"model": "m", "messages": [], "system": "s"},
    )
    data = session.finish().files[0][1]

    for secret in (
        "my-own-key-0123456789",
        "cookie-value-0123",
        "portkey-0123456789",
        "abc123secretcookie",
        "query-secret-0123",
    ):
        assert secret.encode() not in data
    assert data.count(REDACTED.encode()) >= 5
    assert b"key=[redacted]&beta=true" in data


def test_a_key_shaped_string_in_a_body_fails_the_recording_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    session = CaptureSession.for_test(
        tmp_path / "leak.json", "record", writes_allowed=True, upstream=Provider().transport()
    )
    claude(session).messages.create(
        model="claude-test",
        max_tokens=8,
        messages=[{"role": "user", "content": f"my key is {REAL_LOOKING_KEY}, keep it safe"}],
    )
    with pytest.raises(SecretLeak) as caught:
        session.finish()

    message = str(caught.value)
    assert "leak.json" in message and "Anthropic API key" in message
    assert REAL_LOOKING_KEY not in message and REAL_LOOKING_KEY[:20] not in message
    assert not (tmp_path / "leak.json").exists()


def test_the_value_of_a_redacted_header_is_caught_anywhere_else(tmp_path: Path) -> None:
    session = CaptureSession.for_test(
        tmp_path / "echo.json", "record", writes_allowed=True, upstream=Provider().transport()
    )
    key = "plain-looking-key-42"
    client = anthropic.Anthropic(api_key=key, http_client=session.httpx2_client())
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"echo {key}"}]
    )
    with pytest.raises(SecretLeak, match="the value of a redacted header"):
        session.finish()

    allowed = CaptureSession.for_test(
        tmp_path / "echo.json",
        "record",
        writes_allowed=True,
        upstream=Provider().transport(),
        redaction=Redaction(allow=frozenset({key})),
    )
    client = anthropic.Anthropic(api_key=key, http_client=allowed.httpx2_client())
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"echo {key}"}]
    )
    assert allowed.finish().files


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("sk-proj-" + "a1B2c3D4" * 4, "secret key"),
        ("Authorization: Bearer " + "abcDEF123456ghiJKL789", "bearer token"),
        ("AKIA" + "ABCDEFGHIJ234567", "AWS access key"),
        ("ghp_" + "a" * 36, "GitHub token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private key"),
        ('"api_key": "' + "f" * 40 + '"', "credential after a key-like name"),
    ],
)
def test_scan_finds_key_shaped_strings_by_position(text: str, kind: str) -> None:
    findings = scan_secrets(f'{{\n  "x": "{text}"\n}}'.encode())
    assert findings and kind in findings[0].kind
    assert findings[0].line == 2


def test_scan_leaves_ordinary_cassette_content_alone() -> None:
    text = '{"usage": {"cache_read_input_tokens": 1200}, "id": "toolu_01ABC", "sk-ant-test": 1}'
    assert scan_secrets(text.encode()) == []
    assert scan_secrets(b"Bearer [redacted]") == []


# -- cache prefix chains -------------------------------------------------------------------------


def anthropic_body(messages: list[Any], tools: list[Any] = TOOLS, **extra: Any) -> dict[str, Any]:
    mark = {"type": "ephemeral"}
    return {
        "model": "claude-test",
        "system": [{"type": "text", "text": SYSTEM, "cache_control": mark}],
        "tools": tools,
        "messages": messages,
        **extra,
    }


def turn(text: str, *, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": [block]}


def test_a_conversation_that_moves_its_breakpoint_forward_extends_its_prefix() -> None:
    first = anthropic_body([turn("one", marked=True)])
    second = anthropic_body(
        [turn("one"), {"role": "assistant", "content": "ok"}, turn("two", marked=True)]
    )
    assert check_prefix_chain([first, second]) == []


def test_a_break_names_the_block_the_tool_and_the_prefix_bytes_lost() -> None:
    first = anthropic_body([turn("one", marked=True)])
    reordered = anthropic_body([turn("one"), turn("two", marked=True)], tools=TOOLS[::-1])
    edited = anthropic_body([turn("ONE"), turn("two", marked=True)])
    other_model = anthropic_body([turn("one"), turn("two")], model="claude-other")

    (tools_break,) = check_prefix_chain([first, reordered])
    assert tools_break.block == "tools" and tools_break.index == 2 and tools_break.previous == 1
    assert tools_break.report.tool == "read_file"
    assert 0 < tools_break.bytes_lost <= tools_break.prefix_bytes
    assert "the tools block broke first" in tools_break.to_text()

    (messages_break,) = check_prefix_chain([first, edited])
    assert messages_break.block == "messages"
    assert messages_break.bytes_lost < tools_break.bytes_lost  # tools and system stay cached

    (settings_break,) = check_prefix_chain([first, other_model])
    assert settings_break.block == "settings"
    assert settings_break.bytes_lost == settings_break.prefix_bytes


def test_openai_chain_needs_the_previous_messages_first() -> None:
    base = {"model": "gpt-test", "tools": [function_tool("f")]}
    one = {
        **base,
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}],
    }
    two = {**one, "messages": [*one["messages"], {"role": "assistant", "content": "b"}]}
    rewritten = {**one, "messages": [{"role": "system", "content": "s2"}]}
    assert check_prefix_chain([one, two]) == []
    assert [b.block for b in check_prefix_chain([one, rewritten])] == ["system"]

    stored = {"model": "gpt-test", "input": "next", "previous_response_id": "resp_1"}
    assert check_prefix_chain([{"model": "gpt-test", "input": "first"}, stored]) == []


def test_session_prefix_assertion_marker_and_conversation_boundaries(tmp_path: Path) -> None:
    session = CaptureSession(upstream=Provider().transport())
    ask_claude(session)
    ask_claude(session, tools=TOOLS[::-1])
    with pytest.raises(PrefixBroken, match="tools block broke first"):
        session.assert_prefix_extends()

    session.moves_header = "the tool set is reordered on purpose"
    session.assert_prefix_extends()
    assert any("expected header move" in note for note in session.notes)

    fresh = CaptureSession(upstream=Provider().transport())
    ask_claude(fresh)
    fresh.new_conversation()
    ask_claude(fresh, tools=TOOLS[::-1])
    assert fresh.prefix_breaks() == []
    assert fresh.finish().prefix_breaks == []


# -- odds and ends -------------------------------------------------------------------------------


def test_cassette_paths_follow_the_node_id() -> None:
    root = Path("fixtures/cassettes")
    assert cassette_path_for(root, "tests/test_agent.py::test_turn") == (
        root / "tests" / "test_agent" / "test_turn.json"
    )
    assert (
        cassette_path_for(root, "test_a.py::TestX::test_y") == root / "test_a" / "TestX.test_y.json"
    )
    one = cassette_path_for(root, "tests/test_a.py::test_p[a/b]")
    two = cassette_path_for(root, "tests/test_a.py::test_p[a_b]")
    assert one != two and one.parent == two.parent == root / "tests" / "test_a"
    assert "/" not in one.name and ".." not in one.name


def test_bodies_that_are_not_json_are_stored_exactly(tmp_path: Path) -> None:
    session = CaptureSession.for_test(
        tmp_path / "raw.json",
        "record",
        writes_allowed=True,
        upstream=httpx2.MockTransport(lambda request: httpx2.Response(200, content=b"\xff\x00ok")),
    )
    client = session.httpx2_client()
    client.post("https://example.test/upload", content=b"\x00\x01binary")
    client.post("https://example.test/text", content=b'{"a": 1}')  # JSON, but not compact
    data = session.finish().files[0][1]
    cassette = decode(data, CaptureFile, "raw.json")
    assert cassette.exchanges[0].request.body == b"\x00\x01binary"
    assert cassette.exchanges[0].response.body == b"\xff\x00ok"
    assert cassette.exchanges[1].request.text == '{"a": 1}'


def test_current_session_exists_only_inside_a_proof_build() -> None:
    with pytest.raises(LookupError, match="no capture session is active"):
        current_session()
    session = CaptureSession(upstream=Provider().transport())
    run = session.proving(["only"])
    with run.build(0):
        assert current_session() is session
    with pytest.raises(LookupError):
        current_session()


def test_capture_errors_are_capture_errors() -> None:
    assert issubclass(CassetteMismatch, CaptureError)
    assert issubclass(CassetteMissing, CaptureError)
    assert issubclass(SecretLeak, CaptureError)
