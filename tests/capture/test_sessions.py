"""Capture sessions through the real SDKs: record and replay, replay errors and modes, cassettes.

Every test runs the real `anthropic` / `openai` clients over a capture transport; "the network"
is an `httpx2.MockTransport` (or a plain `httpx` one) that answers like the provider would
(`tests/support/stand_ins.py`). The provider views of the same bodies are in
`tests/providers/test_request_splits.py`, redaction in `test_redaction.py`, prefix chains in
`test_prefix_breaks.py`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harness._shared._errors import FixtureError
from harness._shared._files import decode
from harness.capture import (
    CaptureError,
    CaptureFile,
    CaptureSession,
    CassetteMismatch,
    CassetteMissing,
    SecretLeak,
    cassette_path_for,
    current_session,
    load_cassette,
)
from harness.capture._cassette import without_timing
from tests.support.sdk import CHAT_URL, SYSTEM, TOOLS, ask_claude, claude, gpt, recorded
from tests.support.stand_ins import Provider, anthropic_events

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
    # the same but for the timing (when the run started, how long each answer took)
    assert without_timing(load_cassette(one)) == without_timing(load_cassette(two))
    again = CaptureSession.for_test(
        one, "record", writes_allowed=True, upstream=Provider().transport()
    )
    ask_claude(again)
    assert again.finish().files == []  # so a re-record leaves the file as it was
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


@pytest.mark.slow
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
