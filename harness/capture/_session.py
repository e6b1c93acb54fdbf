"""The capture session: one test's requests, answered from its cassette or an upstream, recorded.

A `CaptureSession` hands out HTTP clients whose transport (`harness.capture._transport`) records
each request's exact body bytes and asks the session what to do: answer from the cassette
(replay, no network) or forward to the upstream (record). The session is sans-I/O: `receive`
decides, `complete` records what the upstream answered, so sync and async clients share it all.

Nothing reaches a file without redaction: secret headers and query parameters are replaced by
`[redacted]`, then the bytes about to be written are scanned for key-shaped strings (and for the
values of the redacted headers), and so is what each body says once decoded
(`harness._shared._body_text`: decompressed, base64 and JSON escapes undone, streamed deltas
joined); a
hit raises `SecretLeak` so nothing is written at all. The
session never writes a file itself: `finish()` returns the files for the caller (the pytest
plugin, on the controller process) to write.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import msgspec

from harness._shared import _printer
from harness._shared._errors import CaptureError, CassetteMissing
from harness._shared._files import read
from harness._shared._record_mode import RecordMode
from harness._shared._secret_shapes import SECRET_PATTERNS
from harness._shared._secrets import Redaction
from harness._shared._views import CacheView
from harness.capture._captured import Bodies, Captured
from harness.capture._cassette import (
    CaptureFile,
    Exchange,
    HttpRequest,
    HttpResponse,
    Proof,
    response_record,
)
from harness.capture._config import CaptureConfig
from harness.capture._intercept import intercepting
from harness.capture._matching import (
    CacheViewMatcher,
    Matcher,
    positions,
    strict_match,
)
from harness.capture._prefix import PrefixBreak, PrefixBroken, PrefixChain, prefix_chain
from harness.capture._proof import ProofRun, ProofState, Ticket
from harness.capture._recording import Recording
from harness.capture._timing import Clock, same_but_timing, stored_order
from harness.capture._transport import client_for, transport_for
from harness.capture._writing import cassette_bytes

__all__ = ["CaptureSession", "Finished", "current_session"]

_ACTIVE: list[CaptureSession] = []  # sessions whose prove_stable build runs now, innermost last
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


class Finished(NamedTuple):
    """What `CaptureSession.finish` hands back: files to write, and prefix-break findings."""

    files: list[tuple[Path, bytes]]
    prefix_breaks: list[PrefixBreak]


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
        mode: RecordMode | str = RecordMode.RECORD,
        writes_allowed: bool = True,
        upstream: object | None = None,
        recorded: CaptureFile | None = None,
        redaction: Redaction | None = None,
        matcher: Matcher | None = None,
        record_hint: str = "record it: run the tests in record or update-new-only mode",
        config: CaptureConfig | None = None,
    ) -> None:
        wanted = RecordMode.parse(mode, what="capture mode")
        self.config = config or CaptureConfig()
        self.cassette = cassette
        self.mode = wanted if writes_allowed else RecordMode.CHECK
        self.writes_allowed = writes_allowed
        self.upstream = upstream
        self.redaction = redaction or self.config.redaction()
        # Whatever the session refuses to write, the printer refuses to print (defect 1 of
        # issue 24): the project's patterns and allowed values now, each redacted header's
        # value as requests and answers pass (`receive`, `complete`).
        _printer.extend(
            patterns=[p for p in self.redaction.patterns if p not in SECRET_PATTERNS],
            allow=self.redaction.allow,
        )
        self.matcher: Matcher = matcher or self.config.matcher or CacheViewMatcher()
        self.record_hint = record_hint
        self.moves_header: str | None = None
        self.test: str | None = None  # the test's id, as messages name it (the plugin sets it)
        self.errors: list[CaptureError] = []
        self.notes: list[str] = []
        if not writes_allowed and wanted.writes:
            self.notes.append(f"capture mode {mode} ran as check: writes are not allowed here")
        self.lock = threading.RLock()
        self._recorded = recorded
        if (
            recorded is None
            and cassette is not None
            and self.mode is not RecordMode.RECORD
            and cassette.exists()
        ):
            self._recorded = read(cassette, CaptureFile)
        self._requests: list[Captured] = []
        self._bodies = Bodies()
        self._out: list[Exchange] = []
        self._used: set[int] = set()
        self._positions: dict[tuple[str, str], int] = {}
        self._appended = False
        self._boundaries: list[int] = []
        self._proofs: list[ProofState] = []
        self.hosts_seen: set[str] = set()  # every request's host, prove_stable builds' too
        self._open: list[Recording] = []  # forwarded answers still streaming
        self._default_upstreams: dict[tuple[str, bool], object] = {}
        given: str | None = None
        if self.mode is RecordMode.UPDATE_NEW_ONLY and self._recorded is not None:
            self._out = list(self._recorded.exchanges)
            given = self._recorded.started or None  # what it adds counts from the same zero
        self.clock = Clock(given)

    @classmethod
    def for_test(
        cls,
        cassette_path: Path,
        mode: str,
        *,
        writes_allowed: bool,
        upstream: object | None = None,
        redaction: Redaction | None = None,
        matcher: Matcher | None = None,
        record_hint: str | None = None,
        config: CaptureConfig | None = None,
    ) -> CaptureSession:
        """The session of one test: its cassette, the run's mode, and whether writes may happen."""
        session = cls(
            cassette=Path(cassette_path),
            mode=mode,
            writes_allowed=writes_allowed,
            upstream=upstream,
            redaction=redaction,
            matcher=matcher,
            config=config,
        )
        if record_hint:
            session.record_hint = record_hint
        return session

    # -- clients --------------------------------------------------------------------------------

    def transport(self) -> Any:
        """An `httpx2` transport (sync and async) for `httpx2.Client(transport=...)`."""
        return transport_for(self, "httpx2")

    def httpx_transport(self) -> Any:
        """The same for plain `httpx` clients (needs the `httpx` package)."""
        return transport_for(self, "httpx")

    def httpx2_client(self, **kwargs: Any) -> Any:
        """An `httpx2.Client` for `anthropic.Anthropic(http_client=...)` / `openai.OpenAI`."""
        return client_for(self, "httpx2", asynchronous=False, **kwargs)

    def httpx2_async_client(self, **kwargs: Any) -> Any:
        return client_for(self, "httpx2", asynchronous=True, **kwargs)

    def httpx_client(self, **kwargs: Any) -> Any:
        """A plain `httpx.Client` (the openai SDK accepts one; the anthropic SDK does not)."""
        return client_for(self, "httpx", asynchronous=False, **kwargs)

    def httpx_async_client(self, **kwargs: Any) -> Any:
        return client_for(self, "httpx", asynchronous=True, **kwargs)

    @contextmanager
    def intercept(self) -> Iterator[CaptureSession]:
        """While inside, every `httpx`/`httpx2` client, made before or during the block, sends
        requests to the hosts a provider answers on (and the config's `hosts`) through this
        session; other hosts pass through untouched. See `harness.capture._intercept`."""
        with intercepting(self, self.config):
            yield self

    # -- what was captured ----------------------------------------------------------------------

    @property
    def requests(self) -> list[Captured]:
        """The test's own requests in order (prove_stable builds are kept apart)."""
        with self.lock:
            return list(self._requests)

    def views(self) -> list[CacheView]:
        """The cache views of the recognised requests, in order."""
        return [r.split.view for r in self.requests if r.split is not None]

    def new_conversation(self) -> None:
        """Requests from here on start another conversation: no prefix check across the line."""
        with self.lock:
            self._boundaries.append(len(self._requests))

    def segments(self) -> list[list[Captured]]:
        """The test's requests, one list per conversation group (each prove_stable call's run
        is one of its own)."""
        requests = self.requests
        with self.lock:
            cuts = sorted({0, *self._boundaries, len(requests)})
        return [requests[start:end] for start, end in itertools.pairwise(cuts)]

    def prefix_chain(self) -> PrefixChain:
        """The prefix-chain gate over the test's requests: breaks and coverage, per endpoint."""
        chain = PrefixChain()
        for segment in self.segments():
            chain.add(prefix_chain(segment))
        return chain

    def prefix_breaks(self) -> list[PrefixBreak]:
        """Every place a request does not extend the cacheable prefix of the one it continues."""
        return self.prefix_chain().breaks

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

    @property
    def proving_calls(self) -> int:
        """How many prove_stable calls this session served."""
        with self.lock:
            return len(self._proofs)

    @contextmanager
    def active(self) -> Iterator[CaptureSession]:
        """While inside, `current_session()` is this session (a prove_stable build runs)."""
        with _ACTIVE_LOCK:
            _ACTIVE.append(self)
        try:
            yield self
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.remove(self)

    def proving(self, units: Sequence[str]) -> ProofRun:
        """Start one prove_stable call: its builds get answers by position (see `Proof`)."""
        with self.lock:
            number = len(self._proofs)
            recorded: tuple[Exchange, ...] | None = None
            known = self._recorded.proofs if self._recorded is not None else ()
            if self.mode is not RecordMode.RECORD and number < len(known):
                recorded = known[number].exchanges or None
            state = ProofState(number=number, units=tuple(units), recorded=recorded)
            self._proofs.append(state)
        return ProofRun(self, state)

    # -- finishing ------------------------------------------------------------------------------

    def finish(self) -> Finished:
        """The files to write (none in check mode or after a replay error) and the prefix breaks.

        Raises `SecretLeak` (and returns nothing to write) when the cassette would hold a secret.
        """
        self._end_open_recordings()
        breaks = self.prefix_breaks()
        files: list[tuple[Path, bytes]] = []
        if self.cassette is not None and self.mode is not RecordMode.CHECK and not self.errors:
            data = self.encoded()
            if data is not None and not same_but_timing(self.cassette, data):
                files.append((self.cassette, data))
        return Finished(files, breaks)

    def cassette_file(self) -> CaptureFile | None:
        """The cassette this run would write (unredacted, in memory), or None for nothing new."""
        self._end_open_recordings()
        with self.lock:
            new_proof = any(state.appended for state in self._proofs)
            if self.mode is RecordMode.UPDATE_NEW_ONLY and not (self._appended or new_proof):
                return None
            proofs = [
                Proof(units=state.units, exchanges=tuple(state.out or state.recorded or ()))
                for state in self._proofs
            ]
            if self.mode is RecordMode.UPDATE_NEW_ONLY and self._recorded is not None:
                proofs += self._recorded.proofs[len(proofs) :]  # never drop what was recorded
            while proofs and not proofs[-1].exchanges:
                proofs.pop()
            if not self._out and not proofs:
                return None
            moves = self.moves_header if self.moves_header is not None else msgspec.UNSET
            proofs = [Proof(units=p.units, exchanges=stored_order(p.exchanges)) for p in proofs]
            return CaptureFile(
                started=self.clock.started or msgspec.UNSET,
                exchanges=stored_order(self._out),
                proofs=tuple(proofs),
                moves_header=moves,
            )

    def encoded(self) -> bytes | None:
        """The exact bytes the cassette file would get: redacted, then scanned for secrets."""
        capture = self.cassette_file()
        if capture is None:
            return None
        with self.lock:
            secrets = [v for c in self._requests for v in self.redaction.secret_values(c.headers)]
        return cassette_bytes(capture, self.redaction, secrets, self.shown())

    def shown(self) -> str:
        """The cassette's path as messages show it: relative to the working folder if inside."""
        if self.cassette is None:
            return "(in memory)"
        try:
            return str(self.cassette.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            return str(self.cassette)

    # -- the transport's side (sans I/O) --------------------------------------------------------

    def receive(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> Ticket:
        """Decide what happens to one request: an answer from the cassette, or forward it."""
        _printer.extend(secrets=self.redaction.secret_values(headers))
        sent = self.clock.now()
        with self.lock:
            proof = next((state for state in self._proofs if state.build is not None), None)
            number = len(self._requests) + 1
            captured = self._bodies.captured(number, method, url, tuple(headers), body)
            captured.sent_ns = sent
            self.hosts_seen.add((urlsplit(url).hostname or "").lower())
            if proof is not None:
                try:
                    return proof.receive(captured, self)
                except CassetteMissing as error:
                    if all(str(error) != str(known) for known in self.errors):  # SDK retries
                        self.errors.append(error)
                    raise
            self._requests.append(captured)
            try:
                return self._answer(captured)
            except CaptureError as error:
                self._requests.pop()  # an unanswered request is not part of the conversation
                if all(str(error) != str(known) for known in self.errors):  # SDK retries
                    self.errors.append(error)
                raise

    def recording(
        self, ticket: Ticket, status: int, headers: Sequence[tuple[str, str]]
    ) -> Recording:
        """Start recording what the upstream answers a forwarded request, as it streams
        (`harness.capture._recording`): the transport feeds it each chunk it hands the client."""
        _printer.extend(secrets=self.redaction.secret_values(headers))
        recording = Recording(ticket, status, headers, self._recorded_answer)
        with self.lock:
            ticket.captured.status = status
            if not ticket.captured.source:
                ticket.captured.source = "upstream"
            self._open.append(recording)
        return recording

    def complete(
        self, ticket: Ticket, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> HttpResponse:
        """Record what the upstream answered a forwarded request, whole."""
        recording = self.recording(ticket, status, headers)
        recording.feed(body)
        answered = recording.end()
        assert answered is not None  # fed and ended here: never abandoned
        return answered

    def _recorded_answer(self, recording: Recording, body: bytes | None) -> HttpResponse | None:
        """A recording ended (`body`) or was abandoned (None): store its exchange."""
        response = (
            None if body is None else response_record(recording.status, recording.headers, body)
        )
        ticket = recording.ticket
        ended = self.clock.now()
        with self.lock:
            if recording in self._open:
                self._open.remove(recording)
            if response is not None and ticket.store is not None:
                ticket.store(self.exchange_of(ticket.captured, response, ended))
        return response

    def _end_open_recordings(self) -> None:
        """Answers still streaming when the session finishes are stored as far as they came."""
        with self.lock:
            still_open = list(self._open)
        for recording in still_open:
            recording.end()

    def upstream_for(self, module: Any, *, asynchronous: bool) -> object:
        """Where forwarded requests go: the session's upstream, else the network through
        `module`'s (httpx or httpx2) own transport."""
        if self.upstream is not None:
            return self.upstream
        key = (module.__name__, asynchronous)
        with self.lock:
            if key not in self._default_upstreams:
                kind = module.AsyncHTTPTransport if asynchronous else module.HTTPTransport
                self._default_upstreams[key] = kind()
            return self._default_upstreams[key]

    def request_of(self, captured: Captured) -> HttpRequest:
        return captured.stored()

    def exchange_of(
        self, captured: Captured, response: HttpResponse, ended: int | None = None
    ) -> Exchange:
        """The exchange to store, with its timing (an answer from the cassette took none)."""
        timing = self.clock.timing(captured.sent_ns, captured.sent_ns if ended is None else ended)
        return Exchange(self.request_of(captured), response, timing)

    def _answer(self, captured: Captured) -> Ticket:
        recorded = self._recorded.exchanges if self._recorded is not None else ()
        if self.mode is RecordMode.RECORD:
            return Ticket(captured, None, self._out.append)
        if self.mode is RecordMode.UPDATE:
            key = (captured.method, captured.path)
            index = positions(recorded, captured, self._positions.get(key, 0))
            self._positions[key] = len(recorded) if index is None else index + 1
            if index is None:
                return Ticket(captured, None, self._out.append)
            self._out.append(self.exchange_of(captured, recorded[index].response))
            captured.source = "cassette"
            return Ticket(captured, recorded[index].response)
        index = strict_match(
            recorded, captured, self._used, self.matcher, self.redaction, self.shown()
        )
        if index is not None:
            if recorded[index].request.body != captured.body:
                self.notes.append(
                    f"request {captured.number}: body bytes differ from the recording outside"
                    " the cache view (stream, max_tokens, sampling or key order); update"
                    " mode rewrites them"
                )
            captured.source = "cassette"
            return Ticket(captured, recorded[index].response)
        if self.mode is RecordMode.UPDATE_NEW_ONLY:

            def append(exchange: Exchange) -> None:
                self._out.append(exchange)
                self._appended = True

            return Ticket(captured, None, append)
        where = (
            f"the cassette {self.shown()} does not exist"
            if self.cassette is not None and self._recorded is None
            else f"the cassette {self.shown()} holds no further"
            f" {captured.method} {captured.path} exchange ({len(recorded)} recorded)"
        )
        raise CassetteMissing(
            f"request {captured.number} ({captured.method} {captured.path}) has no recorded"
            f" answer: {where}; {self.record_hint}"
        )
