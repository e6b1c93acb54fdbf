"""Capture the request headers real agents send through the `anthropic` and `openai` SDKs.

Most agents do not run the harness's reference runtime: they call a provider SDK, which sends
JSON over `httpx2` (or plain `httpx`). A `CaptureSession` hands out HTTP clients whose transport
records each request's exact body bytes and answers it from a cassette (replay, no network) or
from an upstream transport (record). Every request body is split into the provider's cache
order by `harness.providers` (`split_request`), which says what each provider caches.

Nothing reaches a file without redaction: secret headers and query parameters are replaced by
`[redacted]`, then the bytes about to be written are scanned for key-shaped strings (and for the
values of the redacted headers), and a hit raises `SecretLeak` so nothing is written at all. The
session never writes a file itself: `finish()` returns the files for the caller (the pytest
plugin, on the controller process) to write.
"""

from __future__ import annotations

import base64
import importlib
import itertools
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal, NamedTuple
from urllib.parse import urlsplit

import httpx2
import msgspec

from harness import secrets as _secrets
from harness.drift import CacheView, DriftReport, canonical_bytes, compare
from harness.fixture import Versioned, encode, read
from harness.paths import UnsafeName, file_name_for, safe_component
from harness.providers import (
    Captured,
    PrefixBreak,
    PrefixBroken,
    RequestSplit,
    check_prefix_chain,
    detect_provider,
    split_exchange,
    split_request,
    view_of_body,
)
from harness.secrets import REDACTED, Redaction, SecretFinding, scan_secrets

__all__ = [
    "MODES",
    "REDACTED",
    "CaptureError",
    "CaptureFile",
    "CaptureSession",
    "CaptureTransport",
    "Captured",
    "CassetteMismatch",
    "CassetteMissing",
    "Exchange",
    "Finished",
    "HttpRequest",
    "HttpResponse",
    "PrefixBreak",
    "PrefixBroken",
    "Proof",
    "Redaction",
    "RequestSplit",
    "SecretFinding",
    "SecretLeak",
    "cassette_path_for",
    "check_prefix_chain",
    "current_session",
    "detect_provider",
    "scan_secrets",
    "split_request",
    "view_of_body",
]

Mode = Literal["check", "record", "update", "update-new-only"]
MODES: Final[tuple[str, ...]] = ("check", "record", "update", "update-new-only")

# -- errors -------------------------------------------------------------------------------------


class CaptureError(Exception):
    """A request could not be answered from the cassette, or a cassette could not be written."""


class CassetteMissing(CaptureError):
    """A request has no recorded exchange (no cassette, or more requests than it holds)."""


class CassetteMismatch(CaptureError):
    """A request differs from the recorded one at its place; `report` says where."""

    def __init__(self, message: str, report: DriftReport | None = None) -> None:
        self.report = report
        super().__init__(message if report is None else f"{message}\n\n{report.to_text()}")


class SecretLeak(CaptureError, _secrets.SecretLeak):
    """A capture session refused to write a cassette holding something key-shaped."""


# -- the file format ----------------------------------------------------------------------------


class HttpRequest(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A request as stored: redacted headers as ordered pairs, and the exact body.

    The body is in exactly one of: `json` (the parsed body, when re-encoding it compactly gives
    back the exact bytes sent, which is what the SDKs send: readable and diffable), `text` (UTF-8
    that is not such JSON) or `base64`.
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    json: Any | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def body(self) -> bytes:
        return _body_bytes(self.json, self.text, msgspec.UNSET, self.base64)


class HttpResponse(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A response as stored. Server-sent events are kept as `lines` (joined by "\\n")."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    json: Any | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    lines: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def body(self) -> bytes:
        return _body_bytes(self.json, self.text, self.lines, self.base64)


class Exchange(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    request: HttpRequest
    response: HttpResponse


class Proof(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The exchanges of the first build of one `prove_stable` call (identity order).

    Every other order of that call is answered from them by position, so a shuffled build gets
    the same answers and only its request bytes can differ.
    """

    units: tuple[str, ...] = ()
    exchanges: tuple[Exchange, ...] = ()


class CaptureFile(Versioned, frozen=True, kw_only=True, tag="harness/capture"):
    """A cassette: the test's requests and answers in order, then one entry per prove_stable."""

    exchanges: tuple[Exchange, ...] = ()
    proofs: tuple[Proof, ...] = ()


def _body_fields(data: bytes, *, sse: bool) -> dict[str, Any]:
    if not data:
        return {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    if sse and "\r" not in text:
        return {"lines": tuple(text.split("\n"))}
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return {"text": text}
    if msgspec.json.encode(value) == data:
        return {"json": value}
    return {"text": text}


def _body_bytes(json: Any, text: Any, lines: Any, b64: Any) -> bytes:
    if not isinstance(json, msgspec.UnsetType):
        return msgspec.json.encode(json)
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(lines, tuple | list):
        return "\n".join(lines).encode("utf-8")
    if isinstance(b64, str):
        return base64.b64decode(b64)
    return b""


def _request_record(
    method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
) -> HttpRequest:
    kept = tuple((name, value) for name, value in headers if not _volatile_request_header(name))
    return HttpRequest(method=method, url=url, headers=kept, **_body_fields(body, sse=False))


def _response_record(status: int, headers: Sequence[tuple[str, str]], body: bytes) -> HttpResponse:
    kept = tuple((name.lower(), value) for name, value in headers if name.lower() not in _FRAMING)
    sse = _header(kept, "content-type", "").startswith("text/event-stream")
    return HttpResponse(status=status, headers=kept, **_body_fields(body, sse=sse))


# Transport framing: the stored body is decoded, so these would lie on replay.
_FRAMING: Final = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection"}
)
# Per-machine and per-attempt request headers: dropped so a re-record elsewhere is identical.
_VOLATILE_REQUEST: Final = frozenset(
    {"host", "user-agent", "accept-encoding", "connection", "content-length", "idempotency-key"}
)


def _volatile_request_header(name: str) -> bool:
    lower = name.lower()
    return lower in _VOLATILE_REQUEST or lower.startswith("x-stainless-")


def _header(headers: Sequence[tuple[str, str]], name: str, default: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return default


class Finished(NamedTuple):
    """What `CaptureSession.finish` hands back: files to write, and prefix-break findings."""

    files: list[tuple[Path, bytes]]
    prefix_breaks: list[PrefixBreak]


@dataclass
class _Ticket:
    captured: Captured
    reply: HttpResponse | None = None  # None: forward to the upstream
    store: Callable[[Exchange], None] | None = None


@dataclass
class _ProofState:
    number: int
    units: tuple[str, ...]
    recorded: tuple[Exchange, ...] | None  # the cassette's entry for this call, if any
    out: list[Exchange] = field(default_factory=list)
    reference: list[Exchange] = field(default_factory=list)
    build: int | None = None
    captured: list[Captured] = field(default_factory=list)
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    appended: bool = False  # build 0 recorded an exchange the cassette did not hold


_ACTIVE: list[CaptureSession] = []
_ACTIVE_LOCK = threading.Lock()


def current_session() -> CaptureSession:
    """The session of the prove_stable build running now (module-level builds use it)."""
    with _ACTIVE_LOCK:
        if _ACTIVE:
            return _ACTIVE[-1]
    raise LookupError(
        "no capture session is active: current_session() works inside a build that"
        " prove_stable runs with a capture session (the header_capture fixture)"
    )


class ProofRun:
    """One prove_stable call's builds on a session; see `CaptureSession.proving`."""

    def __init__(self, session: CaptureSession, state: _ProofState) -> None:
        self._session = session
        self._state = state

    @contextmanager
    def build(self, index: int) -> Iterator[list[Captured]]:
        """Run one build: its requests are answered by position and collected in the list."""
        state = self._state
        with self._session._lock:
            state.build = index
            state.captured = []
            state.positions = {}
        collected = state.captured
        with _ACTIVE_LOCK:
            _ACTIVE.append(self._session)
        try:
            yield collected
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.remove(self._session)
            with self._session._lock:
                if index == 0 and not state.reference:
                    state.reference = list(state.out or state.recorded or ())
                state.build = None

    def reference_file(self) -> CaptureFile:
        """The reference exchanges as a one-proof cassette (redacted), for hash-seed children."""
        exchanges = tuple(self._state.reference)
        return self._session._redacted(CaptureFile(proofs=(Proof(units=(), exchanges=exchanges),)))


# -- the session --------------------------------------------------------------------------------


class CaptureSession:
    """Hands out HTTP clients that capture every request and answer it (see the module doc).

    Modes: `check` replays the cassette and fails on any request that does not match its
    recorded place (never writes); `record` forwards every request to the upstream and rewrites
    the cassette; `update` answers from the cassette by position and rewrites the request bytes
    (so a deliberate header change needs no live model), forwarding only requests beyond the
    recording; `update-new-only` checks what is recorded and records only what is not.
    Without a cassette path or a recording the session just forwards and captures.
    """

    def __init__(
        self,
        *,
        cassette: Path | None = None,
        mode: str = "record",
        writes_allowed: bool = True,
        upstream: object | None = None,
        recorded: CaptureFile | None = None,
        redaction: Redaction | None = None,
        record_hint: str = "record it: run the tests in record or update-new-only mode",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown capture mode {mode!r}; expected one of {', '.join(MODES)}")
        self.cassette = cassette
        self.mode: str = mode if writes_allowed else "check"
        self.writes_allowed = writes_allowed
        self.upstream = upstream
        self.redaction = redaction or Redaction()
        self.record_hint = record_hint
        self.moves_header: str | None = None
        self.errors: list[CaptureError] = []
        self.notes: list[str] = []
        if not writes_allowed and mode != "check":
            self.notes.append(f"capture mode {mode} ran as check: writes are not allowed here")
        self._lock = threading.RLock()
        self._recorded = recorded
        if (
            recorded is None
            and cassette is not None
            and self.mode != "record"
            and cassette.exists()
        ):
            self._recorded = read(cassette, CaptureFile)
        self._requests: list[Captured] = []
        self._out: list[Exchange] = []
        self._used: set[int] = set()
        self._positions: dict[tuple[str, str], int] = {}
        self._appended = False
        self._boundaries: list[int] = []
        self._proofs: list[_ProofState] = []
        self._sync_upstream: object | None = None
        self._async_upstream: object | None = None
        if self.mode == "update-new-only" and self._recorded is not None:
            self._out = list(self._recorded.exchanges)

    @classmethod
    def for_test(
        cls,
        cassette_path: Path,
        mode: str,
        *,
        writes_allowed: bool,
        upstream: object | None = None,
        redaction: Redaction | None = None,
        record_hint: str | None = None,
    ) -> CaptureSession:
        """The session of one test: its cassette, the run's mode, and whether writes may happen."""
        session = cls(
            cassette=Path(cassette_path),
            mode=mode,
            writes_allowed=writes_allowed,
            upstream=upstream,
            redaction=redaction,
        )
        if record_hint:
            session.record_hint = record_hint
        return session

    # -- clients --------------------------------------------------------------------------------

    def transport(self) -> CaptureTransport:
        """An `httpx2` transport (sync and async) for `httpx2.Client(transport=...)`."""
        return CaptureTransport(self)

    def httpx_transport(self) -> Any:
        """The same for plain `httpx` clients (needs the `httpx` package)."""
        module = importlib.import_module("httpx")
        return _transport_class(module)(self)

    def httpx2_client(self, **kwargs: Any) -> httpx2.Client:
        """An `httpx2.Client` for `anthropic.Anthropic(http_client=...)` / `openai.OpenAI`."""
        return httpx2.Client(transport=self.transport(), **kwargs)

    def httpx2_async_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=self.transport(), **kwargs)

    def httpx_client(self, **kwargs: Any) -> Any:
        """A plain `httpx.Client` (the openai SDK accepts one; the anthropic SDK does not)."""
        module = importlib.import_module("httpx")
        return module.Client(transport=self.httpx_transport(), **kwargs)

    def httpx_async_client(self, **kwargs: Any) -> Any:
        module = importlib.import_module("httpx")
        return module.AsyncClient(transport=self.httpx_transport(), **kwargs)

    # -- what was captured ----------------------------------------------------------------------

    @property
    def requests(self) -> list[Captured]:
        """The test's own requests in order (prove_stable builds are kept apart)."""
        with self._lock:
            return list(self._requests)

    def views(self) -> list[CacheView]:
        """The cache views of the recognised requests, in order."""
        return [r.split.view for r in self.requests if r.split is not None]

    def new_conversation(self) -> None:
        """Requests from here on start another conversation: no prefix check across the line."""
        with self._lock:
            self._boundaries.append(len(self._requests))

    def prefix_breaks(self) -> list[PrefixBreak]:
        """Every place a request does not extend the previous one's cacheable prefix."""
        requests = self.requests
        with self._lock:
            cuts = sorted({0, *self._boundaries, len(requests)})
        breaks: list[PrefixBreak] = []
        for start, end in itertools.pairwise(cuts):
            breaks.extend(check_prefix_chain(requests[start:end]))
        return breaks

    def assert_prefix_extends(self) -> None:
        """Raise `PrefixBroken` unless each request extends the previous one's cacheable prefix.

        A test marked `moves_header(reason=...)` (the plugin sets `moves_header`) passes, and the
        breaks are kept as notes.
        """
        breaks = self.prefix_breaks()
        if not breaks:
            return
        if self.moves_header is not None:
            self.notes.extend(
                f"expected header move ({self.moves_header}): {item.to_text().splitlines()[0]}"
                for item in breaks
            )
            return
        raise PrefixBroken(breaks)

    # -- prove_stable support -------------------------------------------------------------------

    def proving(self, units: Sequence[str]) -> ProofRun:
        """Start one prove_stable call: its builds get answers by position (see `Proof`)."""
        with self._lock:
            number = len(self._proofs)
            recorded: tuple[Exchange, ...] | None = None
            known = self._recorded.proofs if self._recorded is not None else ()
            if self.mode != "record" and number < len(known):
                recorded = known[number].exchanges or None
            state = _ProofState(number=number, units=tuple(units), recorded=recorded)
            self._proofs.append(state)
        return ProofRun(self, state)

    # -- finishing ------------------------------------------------------------------------------

    def finish(self) -> Finished:
        """The files to write (none in check mode or after a replay error) and the prefix breaks.

        Raises `SecretLeak` (and returns nothing to write) when the cassette would hold a secret.
        """
        breaks = self.prefix_breaks()
        files: list[tuple[Path, bytes]] = []
        if self.cassette is not None and self.mode != "check" and not self.errors:
            data = self.encoded()
            if data is not None:
                try:
                    unchanged = self.cassette.read_bytes() == data
                except OSError:
                    unchanged = False
                if not unchanged:
                    files.append((self.cassette, data))
        return Finished(files, breaks)

    def cassette_file(self) -> CaptureFile | None:
        """The cassette this run would write (unredacted, in memory), or None for nothing new."""
        with self._lock:
            new_proof = any(state.appended for state in self._proofs)
            if self.mode == "update-new-only" and not (self._appended or new_proof):
                return None
            proofs = [
                Proof(units=state.units, exchanges=tuple(state.out or state.recorded or ()))
                for state in self._proofs
            ]
            if self.mode == "update-new-only" and self._recorded is not None:
                proofs += self._recorded.proofs[len(proofs) :]  # never drop what was recorded
            while proofs and not proofs[-1].exchanges:
                proofs.pop()
            if not self._out and not proofs:
                return None
            return CaptureFile(exchanges=tuple(self._out), proofs=tuple(proofs))

    def encoded(self) -> bytes | None:
        """The exact bytes the cassette file would get: redacted, then scanned for secrets."""
        capture = self.cassette_file()
        if capture is None:
            return None
        secrets = self._secret_values(capture)
        data = encode(self._redacted(capture))
        findings = self.redaction.scan(data, secrets)
        if findings:
            raise SecretLeak(self._shown(), findings)
        return data

    def _secret_values(self, capture: CaptureFile) -> list[str]:
        values: list[str] = []
        for exchange in _all_exchanges(capture):
            values += self.redaction.secret_values(exchange.request.headers)
            values += self.redaction.secret_values(exchange.response.headers)
        with self._lock:
            for captured in self._requests:
                values += self.redaction.secret_values(captured.headers)
        return sorted(set(values))

    def _redacted(self, capture: CaptureFile) -> CaptureFile:
        def one(exchange: Exchange) -> Exchange:
            request = msgspec.structs.replace(
                exchange.request,
                url=self.redaction.url(exchange.request.url),
                headers=self.redaction.header_pairs(exchange.request.headers),
            )
            response = msgspec.structs.replace(
                exchange.response, headers=self.redaction.header_pairs(exchange.response.headers)
            )
            return Exchange(request, response)

        return CaptureFile(
            exchanges=tuple(one(e) for e in capture.exchanges),
            proofs=tuple(
                Proof(units=p.units, exchanges=tuple(one(e) for e in p.exchanges))
                for p in capture.proofs
            ),
        )

    def _shown(self) -> str:
        """The cassette's path as messages show it: relative to the working folder if inside."""
        if self.cassette is None:
            return "(in memory)"
        try:
            return str(self.cassette.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            return str(self.cassette)

    # -- the transport's side (sans I/O) --------------------------------------------------------

    def _receive(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> _Ticket:
        with self._lock:
            proof = next((state for state in self._proofs if state.build is not None), None)
            split = split_exchange(method, url, headers, body)
            if proof is not None:
                return self._receive_proof(proof, method, url, tuple(headers), body, split)
            captured = Captured(len(self._requests) + 1, method, url, tuple(headers), body, split)
            self._requests.append(captured)
            try:
                return self._answer(captured)
            except CaptureError as error:
                self._requests.pop()  # an unanswered request is not part of the conversation
                if all(str(error) != str(known) for known in self.errors):  # SDK retries
                    self.errors.append(error)
                raise

    def _answer(self, captured: Captured) -> _Ticket:
        recorded = self._recorded.exchanges if self._recorded is not None else ()
        if self.mode == "record":
            return _Ticket(captured, None, self._out.append)
        if self.mode == "update":
            index = self._next_position(recorded, captured)
            if index is None:
                return _Ticket(captured, None, self._out.append)
            self._out.append(Exchange(self._request_of(captured), recorded[index].response))
            captured.source = "cassette"
            return _Ticket(captured, recorded[index].response)
        index = self._strict_match(recorded, captured)
        if index is not None:
            captured.source = "cassette"
            return _Ticket(captured, recorded[index].response)
        if self.mode == "update-new-only":

            def append(exchange: Exchange) -> None:
                self._out.append(exchange)
                self._appended = True

            return _Ticket(captured, None, append)
        where = (
            f"the cassette {self._shown()} does not exist"
            if self.cassette is not None and self._recorded is None
            else f"the cassette {self._shown()} holds no further"
            f" {captured.method} {captured.path} exchange ({len(recorded)} recorded)"
        )
        raise CassetteMissing(
            f"request {captured.number} ({captured.method} {captured.path}) has no recorded"
            f" answer: {where}; {self.record_hint}"
        )

    def _request_of(self, captured: Captured) -> HttpRequest:
        return _request_record(captured.method, captured.url, captured.headers, captured.body)

    def _next_position(self, recorded: Sequence[Exchange], captured: Captured) -> int | None:
        key = (captured.method, captured.path)
        start = self._positions.get(key, 0)
        for index in range(start, len(recorded)):
            request = recorded[index].request
            if (request.method, urlsplit(request.url).path) == key:
                self._positions[key] = index + 1
                return index
        self._positions[key] = len(recorded)
        return None

    def _strict_match(self, recorded: Sequence[Exchange], captured: Captured) -> int | None:
        candidates = [
            index
            for index, exchange in enumerate(recorded)
            if index not in self._used
            and exchange.request.method == captured.method
            and urlsplit(exchange.request.url).path == captured.path
        ]
        if not candidates:
            return None
        for index in candidates:
            if self._same(recorded[index].request, captured):
                self._used.add(index)
                self._note_raw_difference(recorded[index].request, captured)
                return index
        first = candidates[0]
        raise self._mismatch(first, recorded[first].request, captured)

    def _same(self, request: HttpRequest, captured: Captured) -> bool:
        if self.redaction.url(request.url) != self.redaction.url(captured.url):
            return False
        old = split_exchange(request.method, request.url, request.headers, request.body)
        if old is not None and captured.split is not None:
            return canonical_bytes(old.view) == canonical_bytes(captured.split.view)
        return request.body == captured.body

    def _note_raw_difference(self, request: HttpRequest, captured: Captured) -> None:
        if request.body != captured.body:
            self.notes.append(
                f"request {captured.number}: body bytes differ from the recording outside the"
                " cache view (stream, max_tokens, sampling or key order); update mode rewrites"
                " them"
            )

    def _mismatch(self, index: int, request: HttpRequest, captured: Captured) -> CassetteMismatch:
        old = split_exchange(request.method, request.url, request.headers, request.body)
        head = (
            f"request {captured.number} ({captured.method} {captured.path}) does not match"
            f" exchange {index + 1} of cassette {self._shown()}"
        )
        hint = "if the change is deliberate, run in update mode to rewrite the recorded requests"
        if old is None or captured.split is None:
            offset = _common_prefix(request.body, captured.body)
            return CassetteMismatch(f"{head}: the bodies differ from byte {offset}; {hint}")
        report = compare(old.view, captured.split.view, label_a="recorded", label_b="live")
        severity = ""
        if canonical_bytes(old.prefix) == canonical_bytes(captured.split.prefix):
            severity = " (after the cacheable prefix: the cache is not affected)"
        return CassetteMismatch(f"{head}{severity}: {report.block} block first; {hint}", report)

    def _receive_proof(
        self,
        state: _ProofState,
        method: str,
        url: str,
        headers: tuple[tuple[str, str], ...],
        body: bytes,
        split: RequestSplit | None,
    ) -> _Ticket:
        build = state.build or 0
        captured = Captured(len(state.captured) + 1, method, url, headers, body, split, None)
        captured.source = "proof"
        state.captured.append(captured)
        reference = state.reference if build > 0 else list(state.recorded or ())
        if build == 0 and self.mode == "record":
            return self._proof_forward(state, captured)
        key = (method, captured.path)
        start = state.positions.get(key, 0)
        for index in range(start, len(reference)):
            request = reference[index].request
            if (request.method, urlsplit(request.url).path) == key:
                state.positions[key] = index + 1
                if build == 0 and self.mode == "update":
                    state.out.append(
                        Exchange(self._request_of(captured), reference[index].response)
                    )
                elif build == 0 and self.mode == "update-new-only":
                    state.out.append(reference[index])
                return _Ticket(captured, reference[index].response)
        state.positions[key] = len(reference)
        if build == 0:
            if self.mode == "check":
                error = CassetteMissing(
                    f"prove_stable call {state.number + 1}: request {captured.number}"
                    f" ({method} {captured.path}) has no recorded answer in cassette"
                    f" {self._shown()}; {self.record_hint}"
                )
                self.errors.append(error)
                raise error
            return self._proof_forward(state, captured)
        raise CaptureError(
            f"prove_stable order {build + 1} sent request {captured.number} ({method}"
            f" {captured.path}), but the first order sent no such request at that place: the"
            " number of requests itself depends on the order"
        )

    def _proof_forward(self, state: _ProofState, captured: Captured) -> _Ticket:
        def store(exchange: Exchange) -> None:
            state.out.append(exchange)
            state.appended = True

        return _Ticket(captured, None, store)

    def _complete(
        self, ticket: _Ticket, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> HttpResponse:
        response = _response_record(status, headers, body)
        captured = ticket.captured
        with self._lock:
            captured.status = status
            if not captured.source:
                captured.source = "upstream"
            if ticket.store is not None:
                ticket.store(Exchange(self._request_of(captured), response))
        return response

    def _upstream(self, *, asynchronous: bool) -> object:
        if self.upstream is not None:
            return self.upstream
        with self._lock:
            if asynchronous:
                if self._async_upstream is None:
                    self._async_upstream = httpx2.AsyncHTTPTransport()
                return self._async_upstream
            if self._sync_upstream is None:
                self._sync_upstream = httpx2.HTTPTransport()
            return self._sync_upstream


def _all_exchanges(capture: CaptureFile) -> Iterator[Exchange]:
    yield from capture.exchanges
    for proof in capture.proofs:
        yield from proof.exchanges


def _common_prefix(a: bytes, b: bytes) -> int:
    limit = min(len(a), len(b))
    return next((i for i in range(limit) if a[i] != b[i]), limit)


# -- transports ---------------------------------------------------------------------------------


def _module_of(transport: object) -> Any:
    for cls in type(transport).__mro__:
        top = getattr(cls, "__module__", "").partition(".")[0]
        if top in ("httpx", "httpx2") and top in sys.modules:
            return sys.modules[top]
    return None


def _same_module(a: Any, b: Any) -> bool:
    return a is b or (a is not None and b is not None and a.Request is b.Request)


class _Adapter:
    """The transport logic shared by the `httpx2` and `httpx` flavours."""

    _module: Any = httpx2

    def __init__(self, session: CaptureSession) -> None:
        self.session = session

    def _ticket(self, request: Any, body: bytes) -> _Ticket:
        __tracebackhide__ = True
        headers = [(str(k).lower(), str(v)) for k, v in request.headers.multi_items()]
        try:
            return self.session._receive(str(request.method), str(request.url), headers, body)
        except CaptureError as error:
            raise _surfaced(error) from None

    def _reply(self, request: Any, response: HttpResponse) -> Any:
        headers = [(k, v) for k, v in response.headers if k.lower() not in _FRAMING]
        return self._module.Response(
            response.status, headers=headers, content=response.body, request=request
        )

    def _outgoing(self, request: Any, upstream: object) -> Any:
        module = _module_of(upstream)
        if module is None or _same_module(module, self._module):
            return request
        return module.Request(
            request.method, str(request.url), headers=request.headers.raw, content=request.content
        )

    def handle_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        body = bytes(request.read())
        ticket = self._ticket(request, body)
        reply = ticket.reply
        if reply is None:
            upstream: Any = self.session._upstream(asynchronous=False)
            response = upstream.handle_request(self._outgoing(request, upstream))
            try:
                content = bytes(response.read())
            finally:
                response.close()
            reply = self.session._complete(
                ticket, response.status_code, response.headers.multi_items(), content
            )
        return self._reply(request, reply)

    async def handle_async_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        body = bytes(await request.aread())
        ticket = self._ticket(request, body)
        reply = ticket.reply
        if reply is None:
            upstream: Any = self.session._upstream(asynchronous=True)
            response = await upstream.handle_async_request(self._outgoing(request, upstream))
            try:
                content = bytes(await response.aread())
            finally:
                await response.aclose()
            reply = self.session._complete(
                ticket, response.status_code, response.headers.multi_items(), content
            )
        return self._reply(request, reply)

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


_SDK_ERRORS: Final = (("anthropic", "AnthropicError"), ("openai", "OpenAIError"))
_SURFACED: dict[tuple[type[Any], ...], type[Any]] = {}


def _surfaced(error: CaptureError) -> CaptureError:
    """`error` as an instance that also derives from the loaded SDKs' base errors.

    The SDKs wrap any other transport exception in a connection error and retry it with
    back-off; their own errors they raise as they are. So a cassette error reaches the test
    directly, once, still an instance of its harness class.
    """
    bases: list[type[Any]] = []
    for module_name, class_name in _SDK_ERRORS:
        module = sys.modules.get(module_name)
        base = getattr(module, class_name, None) if module is not None else None
        if isinstance(base, type) and issubclass(base, Exception):
            bases.append(base)
    if not bases:
        return error
    key = (type(error), *bases)
    if key not in _SURFACED:
        cls = type(error)
        _SURFACED[key] = type(cls.__name__, (cls, *bases), {"__module__": cls.__module__})
    made: Any = _SURFACED[key]
    surfaced: CaptureError = made.__new__(made)
    surfaced.__dict__.update(error.__dict__)
    surfaced.args = error.args
    return surfaced


class CaptureTransport(_Adapter, httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """The `httpx2` transport of a `CaptureSession` (sync and async clients alike)."""

    _module = httpx2


_CLASSES: dict[str, type[Any]] = {}


def _transport_class(module: Any) -> type[Any]:
    """The capture transport class for an `httpx`-like module (plain `httpx`, or `httpx2`)."""
    if module is httpx2 or module.BaseTransport is httpx2.BaseTransport:
        return CaptureTransport
    name = module.__name__
    if name not in _CLASSES:
        _CLASSES[name] = type(
            "HttpxCaptureTransport",
            (_Adapter, module.BaseTransport, module.AsyncBaseTransport),
            {"_module": module, "__doc__": f"The `{name}` transport of a CaptureSession."},
        )
    return _CLASSES[name]


# -- where cassettes live -----------------------------------------------------------------------


def cassette_path_for(root: Path, nodeid: str) -> Path:
    """`root/<test file path without .py>/<test name>.json` for a pytest node id.

    Parts that are not safe file names (parametrize ids with brackets, say) become a safe slug
    with a short hash (`harness.paths.file_name_for`), so two tests never share a cassette.
    """
    file_part, _, test_part = nodeid.partition("::")
    folder = Path(root)
    pure = PurePosixPath(file_part.replace("\\", "/"))
    parts = [*pure.parent.parts, pure.stem] if pure.suffix == ".py" else list(pure.parts)
    for part in parts:
        if part in ("", ".", "/"):
            continue
        folder = folder / _safe(part)
    name = test_part.replace("::", ".") or "module"
    return folder / f"{_safe(name)}.json"


_HASHED = re.compile(r".+-[0-9a-f]{10}")


def _safe(name: str) -> str:
    # A safe name that looks like a hashed one goes through the hash too, so a folder literally
    # named like another's hashed name cannot share its cassettes.
    if _HASHED.fullmatch(name):
        return file_name_for(name)
    try:
        return safe_component(name)
    except UnsafeName:
        return file_name_for(name)


def load_cassette(path: Path) -> CaptureFile:
    """Read a cassette strictly (a `FixtureError` names the file and the problem)."""
    return read(path, CaptureFile)
