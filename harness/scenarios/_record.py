"""Recording: a run's captured events, requests and replies turned into fixture files.

Normalisation is what makes a recording comparable across runs and hosts: the session id becomes
`{{session_id}}` wherever it appears, every event time becomes `{{time}}`, and when the scenario's
header class is pinned, each header's system text and tools become `{{system}}` / `{{tools}}`
(the pin files hold them once, in a form a reviewer can read).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from harness._shared._errors import FixtureError, SecretLeak
from harness._shared._files import FileContents, Versioned, encode, size_limit, write_files
from harness._shared._paths import ANSWERS_FILE, LOG_FILE, REQUESTS_FILE, pins_root
from harness._shared._secrets import scan_secrets
from harness.agent._header import TextBlock
from harness.agent._llm import Reply, Request, ScriptedAdapter, ScriptedReply, ScriptedToolCall
from harness.agent._session import LogEvent, RequestHeader
from harness.scenarios._formats import (
    SESSION_TOKEN,
    SYSTEM_TOKEN,
    TIME_TOKEN,
    TOOLS_TOKEN,
    AnswersFile,
    Fixture,
    LogFile,
    MessagesDigest,
    RecordedEvent,
    RecordedHeader,
    RecordedRequest,
    RequestsFile,
    Scenario,
)
from harness.scenarios._pins import pin_files, pin_from_headers
from harness.scenarios._run import Run, dispatched_record, run_sync


def _tokens(scenario: Scenario) -> bool:
    return scenario.pin is not None


def _session_replaced(data: bytes, session_id: str) -> bytes:
    if session_id and session_id != SESSION_TOKEN:
        data = data.replace(session_id.encode(), SESSION_TOKEN.encode())
    return data


def _replace_session(value: object, session_id: str, kind: type[object]) -> object:
    return msgspec.json.decode(_session_replaced(_encode(value), session_id), type=kind)


_encode = msgspec.json.Encoder().encode


def _event_values(events: Sequence[LogEvent], pinned: bool) -> list[object]:
    """The events as the log file holds them, before the session id is replaced."""
    normalised: list[object] = []
    for event in events:
        if isinstance(event, RequestHeader):
            header = event.header
            recorded = RecordedHeader(
                config=header.config,
                system=SYSTEM_TOKEN if pinned and isinstance(header.system, str) else header.system,
                tools=TOOLS_TOKEN if pinned and isinstance(header.tools, tuple) else header.tools,
            )
            normalised.append(
                {
                    "type": "request/header",
                    "header": recorded,
                    "reason": event.reason,
                    "time": TIME_TOKEN,
                }
            )
        elif event.time == TIME_TOKEN:
            normalised.append(event)  # stamped by the token clock (replay): nothing to hide
        else:
            normalised.append(msgspec.structs.replace(event, time=TIME_TOKEN))
    return normalised


def normalise_events(
    events: list[LogEvent], session_id: str, pinned: bool
) -> tuple[RecordedEvent, ...]:
    result = _replace_session(_event_values(events, pinned), session_id, tuple[RecordedEvent, ...])
    assert isinstance(result, tuple)
    return result


def _request_values(
    requests: Sequence[Request | RecordedRequest], pinned: bool
) -> list[RecordedRequest]:
    normalised = []
    for r in requests:
        record = (
            r
            if isinstance(r, RecordedRequest)
            else dispatched_record(r, MessagesDigest.of(r.messages))
        )
        if pinned:
            record = msgspec.structs.replace(
                record,
                system=SYSTEM_TOKEN if isinstance(record.system, str) else record.system,
                tools=TOOLS_TOKEN if isinstance(record.tools, tuple) else record.tools,
            )
        normalised.append(record)
    return normalised


def normalise_requests(
    requests: Sequence[Request | RecordedRequest], session_id: str, pinned: bool
) -> tuple[RecordedRequest, ...]:
    """Requests as the requests file stores them (a Recorder's `dispatched` come digested)."""
    values = _request_values(requests, pinned)
    result = _replace_session(values, session_id, tuple[RecordedRequest, ...])
    assert isinstance(result, tuple)
    return result


def recorded_bytes(run: Run) -> tuple[bytes, bytes]:
    """The JSON of `log_of(run).events` and of `requests_of(run).requests`, without decoding
    them into the files' types first.

    Equal bytes are equal recordings: when these equal the JSON of a recording's events and
    requests, decoding them would give that recording's values. Replay compares these first
    and takes the decoding path (and its drift report) only when they differ.
    """
    pinned = _tokens(run.scenario)
    events = _encode(_event_values(run.recorder.events, pinned))
    requests = _encode(_request_values(run.recorder.dispatched, pinned))
    return _session_replaced(events, run.session_id), _session_replaced(requests, run.session_id)


def answer_of(reply: Reply | str | None) -> ScriptedReply:
    """What the model answered, in the form replay feeds back."""
    if reply is None:
        return ScriptedReply(error="the model gave no reply")
    if isinstance(reply, str):
        return ScriptedReply(error=reply)
    text = "".join(block.text for block in reply.content if isinstance(block, TextBlock))
    calls = tuple(ScriptedToolCall(c.id, c.name, dict(c.input)) for c in reply.tool_calls)
    default = "tool_use" if calls else "end_turn"
    stop = reply.stop_reason if reply.stop_reason != default else msgspec.UNSET
    return ScriptedReply(text=text, tool_calls=calls, stop_reason=stop)


def log_of(run: Run) -> LogFile:
    return LogFile(
        scenario=run.scenario.name,
        registration_order=tuple(run.registration_order),
        events=normalise_events(run.recorder.events, run.session_id, _tokens(run.scenario)),
    )


def requests_of(run: Run) -> RequestsFile:
    return RequestsFile(
        scenario=run.scenario.name,
        requests=normalise_requests(run.recorder.dispatched, run.session_id, _tokens(run.scenario)),
    )


def recording_of(run: Run) -> tuple[LogFile, RequestsFile, AnswersFile]:
    answers = tuple(answer_of(r) for r in run.recorder.replies)
    return log_of(run), requests_of(run), AnswersFile(scenario=run.scenario.name, answers=answers)


def recording_files(
    folder: Path, run: Run, *, answers: bool = True, pins: Path | None = None
) -> list[FileContents]:
    """The files a recording consists of (and the pin, when this scenario owns it)."""
    log, requests, recorded_answers = recording_of(run)
    files = [_bounded(folder / LOG_FILE, log), _bounded(folder / REQUESTS_FILE, requests)]
    if answers:
        files.append(_bounded(folder / ANSWERS_FILE, recorded_answers))
    pin = run.scenario.pin
    if pin is not None and pin.owner and run.headers:
        root = pins if pins is not None else pins_root(folder)
        files += pin_files(root, pin.name, pin_from_headers(run.headers))
    for path, data in files:  # a recording holding a secret is refused whole
        findings = scan_secrets(data)
        if findings:
            raise SecretLeak(str(path), findings)
    return files


def _bounded(path: Path, value: Versioned) -> FileContents:
    """`value`'s bytes for `path`; a `FixtureError` naming it if the reader would refuse them."""
    data = encode(value)
    limit = size_limit(type(value))
    if len(data) > limit:
        raise FixtureError(
            path,
            f"would be {len(data):,} bytes, over the {limit:,}-byte limit it is read with,"
            " so the recording is not written",
            "record fewer steps in one scenario (split it)",
        )
    return path, data


def write_recording(folder: Path, run: Run, *, answers: bool = True) -> list[Path]:
    """Write the recording; return the files whose bytes changed."""
    return write_files(recording_files(folder, run, answers=answers))


def record_fixture(fixture: Fixture) -> list[Path]:
    """Run the scenario against its stand-in live model (the scenario's script) and record it."""
    adapter = ScriptedAdapter(fixture.scenario.script, keep_requests=False)
    run = run_sync(fixture.scenario, adapter, keep_requests=False, share_conversation=True)
    return write_recording(fixture.folder, run)
