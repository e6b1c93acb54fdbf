"""The harness's recording fast paths agree with the plain definitions they replace.

Replay compares recorded bytes before decoding, digests messages incrementally, runs scenarios on
a shared conversation, and compares shuffled runs by their bytes: each is checked on every shipped
scenario against what the full requests, the decoded recording and the plain runs give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.agent import Context, ScriptedAdapter, Session, deep_freeze
from harness.agent._header import TextBlock, header_bytes
from harness.agent._session import AssistantMessage, ToolResult, UserMessage
from harness.scenarios._formats import MessagesDigest, RecordedRequest, find_fixtures, load_fixture
from harness.scenarios._run import run_sync
from tests.support.paths import ROOT


def enc(value: Any) -> bytes:
    return msgspec.json.encode(value)


# -- the harness: recorded digests and whole scenarios -------------------------------------------


def shipped() -> list[Path]:
    return find_fixtures([ROOT / "fixtures"])


@pytest.mark.parametrize("folder", shipped(), ids=lambda p: p.name)
def test_recorded_digests_are_the_digests_of_the_full_requests(folder: Path) -> None:
    fixture = load_fixture(folder)
    assert fixture.answers is not None
    adapter = ScriptedAdapter(fixture.answers.answers)
    run_ = run_sync(fixture.scenario, adapter, keep_requests=True, session_id="s")
    recorded = run_.recorder.dispatched
    assert len(recorded) == len(adapter.requests) == len(run_.recorder.full_requests)
    for record, request in zip(recorded, adapter.requests, strict=True):
        assert record.messages == MessagesDigest.of(request.messages)
    lean_adapter = ScriptedAdapter(fixture.answers.answers, keep_requests=False)
    lean = run_sync(fixture.scenario, lean_adapter, keep_requests=False, session_id="s")
    assert [enc(r) for r in lean.recorder.dispatched] == [enc(r) for r in recorded]
    assert len(lean.recorder.requests) == len(adapter.requests)


def lean_run(fixture: Any, **options: Any) -> Any:
    adapter = ScriptedAdapter(fixture.answers.answers, keep_requests=False)
    return run_sync(fixture.scenario, adapter, keep_requests=False, **options)


@pytest.mark.parametrize("folder", shipped(), ids=lambda p: p.name)
def test_a_shared_conversation_gives_the_run_tuples_give(folder: Path) -> None:
    fixture = load_fixture(folder)
    plain, shared = (
        lean_run(fixture, session_id="s", clock=lambda: "T", share_conversation=flag)
        for flag in (False, True)
    )
    assert enc(shared.recorder.events) == enc(plain.recorder.events)
    assert enc(shared.recorder.dispatched) == enc(plain.recorder.dispatched)
    assert enc(shared.turn_ends) == enc(plain.turn_ends)
    assert [(m.step, header_bytes(m.rebuilt)) for m in shared.rebuilds] == [
        (m.step, header_bytes(m.rebuilt)) for m in plain.rebuilds
    ]


@pytest.mark.parametrize("folder", shipped(), ids=lambda p: p.name)
def test_comparing_recorded_bytes_is_comparing_the_decoded_recording(folder: Path) -> None:
    """Replay's first comparison (bytes, no decoding) gives what normalising and decoding give,
    and replay's own run (tokens for the session id and the time, a shared conversation) gives
    the recording that a run with a real id and clock gives."""
    from harness.scenarios._record import log_of, recorded_bytes, requests_of
    from harness.scenarios._replay import compare_recordings

    fixture = load_fixture(folder)
    plain = lean_run(fixture)
    replayed = lean_run(
        fixture, session_id="{{session_id}}", clock=lambda: "{{time}}", share_conversation=True
    )
    for run_ in (plain, replayed):
        log, requests = recorded_bytes(run_)
        assert log == enc(log_of(run_).events)
        assert requests == enc(requests_of(run_).requests)
    assert recorded_bytes(plain) == recorded_bytes(replayed)
    assert compare_recordings(fixture, replayed) == []
    assert fixture.log is not None and fixture.requests is not None
    events = list(fixture.log.events)
    events[1] = msgspec.structs.replace(events[1], time="moved")
    requests = list(fixture.requests.requests)
    if requests:
        digest = requests[0].messages
        requests[0] = msgspec.structs.replace(
            requests[0], messages=msgspec.structs.replace(digest, count=digest.count + 1)
        )
    else:  # a scenario that fails before its first request: one it did not send
        requests = [
            RecordedRequest(
                provider="p", model="m", messages=MessagesDigest(0, ""), session_id="{{session_id}}"
            )
        ]
    for log_changed, requests_changed in ((True, False), (False, True), (True, True)):
        moved = msgspec.structs.replace(
            fixture,
            log=msgspec.structs.replace(
                fixture.log, events=tuple(events) if log_changed else fixture.log.events
            ),
            requests=msgspec.structs.replace(
                fixture.requests,
                requests=tuple(requests) if requests_changed else fixture.requests.requests,
            ),
        )
        kinds = [finding.kind for finding in compare_recordings(moved, replayed)]
        assert kinds == ["log"] * log_changed + ["requests"] * requests_changed


def test_a_request_whose_messages_came_from_elsewhere_is_digested_from_scratch() -> None:
    from harness.scenarios._run import MessagesDigester

    session = Session(Context(), session_id="s", clock=lambda: "T")
    session.append(UserMessage(text="hi"))
    digester = MessagesDigester()
    own = session.messages()
    other = deep_freeze((*own, *own))
    assert digester.digest(own, session) == MessagesDigest.of(own)
    assert digester.digest(other, session) == MessagesDigest.of(other)
    session.append(AssistantMessage(content=(TextBlock("x"),), stop_reason="end_turn"))
    session.append(ToolResult(tool_use_id="c", name="t", content="r"))
    assert digester.digest(session.messages(), session) == MessagesDigest.of(session.messages())


@pytest.mark.parametrize("folder", shipped(), ids=lambda p: p.name)
def test_comparing_shuffled_runs_is_comparing_their_bytes(folder: Path) -> None:
    from harness.agent import LoadSchedule
    from harness.scenarios._shuffle import _same_bytes, schedules

    fixture = load_fixture(folder)
    assert fixture.answers is not None
    names = [plugin.name for plugin in fixture.scenario.plugins]

    def fingerprint(run_: Any) -> tuple[list[bytes], list[bytes]]:
        return [header_bytes(h) for _, h in run_.headers], [
            enc(r) for r in run_.recorder.full_requests
        ]

    def one(schedule: LoadSchedule) -> Any:
        adapter = ScriptedAdapter(fixture.answers.answers)  # type: ignore[union-attr]
        return run_sync(fixture.scenario, adapter, schedule=schedule, session_id="s")

    runs = [one(schedule) for schedule in schedules(names, 6, seed=3)]
    for other in runs:
        assert _same_bytes(runs[0], other) == (fingerprint(runs[0]) == fingerprint(other))
