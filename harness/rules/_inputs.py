"""What `harness lint` reads: cassettes, folders of them, request bodies and session files.

- a cassette (a `.json` file of kind `harness/capture`; format 2 keeps each exchange's timing,
  which the cost model reads): the test's exchanges are one session,
  each `prove_stable` call's recorded build another; a finding's `request` counts the file's
  exchanges in that order (the test's first, then each call's); a test marked `moves_header`
  has its prefix breaks as `info`, expected;
- a folder: every cassette under it (hidden and virtual-environment folders skipped);
- a provider request body (any other `.json`): one request, as sent; a recorded request
  (`{"method", "url", "json"}`) or a session line's object (`{"url", "body"}`) too;
- a session (`.jsonl`): one request a line, a bare body or an object with `url`, `body` and
  optional `headers`, `method`, `time` and `response` (so a proxy log or a trace export can be
  linted; a `body` given as JSON text is decoded); blank lines are skipped, and `request`
  counts requests, not lines. A line no provider recognises is counted as not judged (`harness
  lint` says how many); a file of which no line is recognised is bad input.

Every file is read strictly: anything else is a `FixtureError`, one line naming the file (and
the line) and what it should be; the CLI exits 2.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from harness._shared import _printer
from harness._shared._body_text import response_events
from harness._shared._errors import FixtureError
from harness._shared._files import read_checked, with_position
from harness.cache._analysis import LintRequest
from harness.cache._timing import Timing, timing_of
from harness.capture._cassette import CaptureFile, Exchange, load_cassette
from harness.capture._found import find_cassettes, request_of
from harness.capture._judged import refuse_bodiless
from harness.rules._engine import Session

__all__ = ["cassette_sessions", "requests_of_exchanges", "sessions_of"]

_WRAPPED: Final = frozenset({"url", "body", "time", "response", "headers", "method"})
_WHAT: Final = "pass a cassette, a folder of cassettes, a request body .json or a session .jsonl"
_URL: Final = (
    'give the request as sent with its URL, {"url": ..., "body": ...} (the provider is known by'
    " its URL: a body alone is often ambiguous)"
)


def sessions_of(paths: Sequence[Path]) -> list[Session]:
    """The sessions the paths hold, in the order given (a folder's cassettes sorted). The
    printer learns what their requests' headers and URLs hide (`_printer.learn`): what is
    printed of them is redacted as a capture session's printing is."""
    sessions = _sessions_of(paths)
    requests = [request for session in sessions for request in session.requests]
    _printer.learn(
        headers=[pair for request in requests for pair in request.headers],
        urls=[request.url for request in requests],
    )
    return sessions


def _sessions_of(paths: Sequence[Path]) -> list[Session]:
    sessions: list[Session] = []
    for path in paths:
        if not path.exists():
            raise FixtureError(path, "does not exist", "check the path")
        if path.is_dir():
            cassettes = find_cassettes([path])
            logs = sorted(path.rglob("*.jsonl"))  # sessions: a folder of proxy logs
            if not cassettes and not logs:
                raise FixtureError(path, "holds no cassettes and no sessions (.jsonl)", _WHAT)
            for cassette in cassettes:
                sessions += _cassette(cassette)
            sessions += _sessions_of(logs)
        elif path.suffix == ".jsonl":
            session = Session(str(path), list(_lines(path)))
            if not any(analysis is not None for analysis in session.analyses):
                urls = any(request.url for request in session.requests)
                raise FixtureError(
                    path,
                    "holds no request body any provider recognises",
                    "its URLs are none of the providers' message endpoints" if urls else _URL,
                )
            sessions.append(session)
        else:
            sessions += _json_file(path)
    return sessions


_BOM: Final = b"\xef\xbb\xbf"  # a byte order mark some exporters write (RFC 8259 lets it go)


def _json_file(path: Path) -> list[Session]:
    data = read_checked(path, missing_hint="check the path").removeprefix(_BOM)
    value = _decode(data, path)
    kind = value.get("kind") if isinstance(value, dict) else None
    if kind == "harness/capture":
        return _cassette(path)
    if isinstance(kind, str) and kind.startswith("harness/"):
        raise FixtureError(path, f"is a {kind} file, not a cassette or a request body", _WHAT)
    request = _request(value, 0, str(path))
    if request.split is None:
        raise FixtureError(path, "is not a request body any provider recognises", _URL)
    return [Session(str(path), [request])]


def _cassette(path: Path) -> list[Session]:
    capture = load_cassette(path)
    refuse_bodiless(path, capture)  # nothing to judge is no pass
    return cassette_sessions(path, capture)


def cassette_sessions(path: Path, capture: CaptureFile) -> list[Session]:
    """The sessions of a cassette already read: the test's exchanges, then each prove_stable
    call's (what `harness check` shares between the rules and the cost model)."""
    moves = capture.moves_header if isinstance(capture.moves_header, str) else ""
    started = getattr(capture, "started", None)  # format 2 (issue 24): the recording's start
    try:
        found = requests_of_exchanges(capture.exchanges, started)
        sessions = [Session(str(path), found, moves_header=moves)]
        offset = len(capture.exchanges)
        for proof in capture.proofs:
            found = requests_of_exchanges(proof.exchanges, started)
            sessions.append(Session(str(path), found, offset=offset, moves_header=moves))
            offset += len(proof.exchanges)
    except ValueError as error:  # a timing out of range (`started` in the year 9999)
        raise FixtureError(path, f"its timing: {error}", "re-record it") from None
    return sessions


def requests_of_exchanges(exchanges: Sequence[Exchange], started: Any = None) -> list[LintRequest]:
    """Recorded exchanges as requests to judge, with the responses they got and, in a format-2
    cassette, when they ran (`timing` in ms from `started`, the recording's wall-clock start)."""
    found = []
    for index, exchange in enumerate(exchanges):
        request = exchange.request
        body = request.json if isinstance(request.json, dict) else _json_of(request.body)
        answer = exchange.response
        events = response_events(answer.json, answer.text, answer.lines)
        response: Any = events[0] if len(events) == 1 else events or None
        found.append(
            LintRequest(
                index,
                body,
                url=request.url,
                headers=tuple(request.headers),
                method=request.method,
                response=response,
                time=_timing(exchange, started),
            )
        )
    return found


def _timing(exchange: Exchange, started: Any) -> Timing | None:
    """An exchange's recorded timing (a format-2 cassette's), as the cost model reads time."""
    timing = getattr(exchange, "timing", None)
    start = getattr(timing, "start_ms", None)
    if start is None:
        return None
    wall = started if isinstance(started, str) else None
    return Timing.of_cassette(start, getattr(timing, "end_ms", None), wall)


def _json_of(data: bytes) -> dict[str, Any]:
    """A body stored as text (JSON that is not compact): decoded, or {} when it is not JSON."""
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _lines(path: Path) -> Iterator[LintRequest]:
    data = read_checked(path, missing_hint="check the path").removeprefix(_BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FixtureError(path, f"is not valid UTF-8 at byte {error.start}") from None
    index = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        value = _decode(line.encode("utf-8"), where)
        yield _request(value, index, where)
        index += 1
    if index == 0:
        raise FixtureError(path, "holds no requests (one JSON object a line)", _WHAT)


def _decode(data: bytes, where: Path | str) -> Any:
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise FixtureError(where, f"is not valid JSON: {with_position(data, str(error))}") from None
    except RecursionError:
        raise FixtureError(where, "nests too deeply to be read") from None


def _request(value: Any, index: int, where: str) -> LintRequest:
    """A body, a session line's object, or a recorded request, as a request to judge."""
    if not isinstance(value, dict):
        raise FixtureError(
            where, f"holds a JSON {type(value).__name__}, not an object", "one request an object"
        )
    recorded = request_of(value)
    if recorded is not None and isinstance(recorded.parsed, dict):
        return LintRequest(
            index,
            recorded.parsed,
            url=recorded.url,
            headers=recorded.headers,
            method=recorded.method,
        )
    if isinstance(value.get("body"), str) and set(value) <= _WRAPPED:  # a log's body as text
        body = _decode(value["body"].encode("utf-8"), f"{where}: its body")
        if not isinstance(body, dict):
            raise FixtureError(where, "its body is not a JSON object", "one request an object")
        value = {**value, "body": body}
    if isinstance(value.get("body"), dict) and set(value) <= _WRAPPED:
        url = value.get("url")
        method = value.get("method", "POST")
        return LintRequest(
            index,
            value["body"],
            url=url if isinstance(url, str) else None,
            headers=_headers(value.get("headers"), where),
            method=method if isinstance(method, str) else "POST",
            time=_time(value.get("time"), where),
            response=value.get("response"),
        )
    return LintRequest(index, value)


def _time(value: Any, where: str) -> Timing | None:
    """A session line's `time`, read now: one out of range (a negative number, `1e308`) is one
    line naming the line, not a traceback when the cost model reads it."""
    if value is None:
        return None
    try:
        return timing_of(value)
    except ValueError as error:
        raise FixtureError(where, f"its time: {error}") from None


def _headers(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        pairs = [(p[0], p[1]) for p in value]
    else:
        raise FixtureError(where, "headers must be an object or a list of [name, value] pairs")
    return tuple((str(name).lower(), str(item)) for name, item in pairs)
