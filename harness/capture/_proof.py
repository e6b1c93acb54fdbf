"""prove_stable's bookkeeping on a capture session: every order answered like the first one.

One `prove_stable` call runs its build under many orders. The first build (identity order) is
answered as the session's mode says (from the cassette's `Proof` entry, or the upstream when
recording); every later build is answered by position from the first build's answers, so a
shuffled build gets the same answers and only its request bytes can differ: each request is
answered by the first build's exchange on its route that it matches (independent requests sent
concurrently may come in another order), else by the next unused one on its route. A build that
sends more requests on a route than the first build did is an error: the number of requests
itself depends on the order.

Replaying (check mode, and the recorded part in update-new-only), the first build's requests are
also compared with the recorded ones at their places, through the session's matcher: a header
that is stable under every order but differs from the recording (a tool renamed since it was
recorded) is a `CassetteMismatch` with the drift report. It is kept in `session.errors`, not
raised, and the build goes on with the recorded answer: when the shuffle then finds drift, that
report (which names the orders, the cause) is the failure; when it does not, the plugin fails the
test on the mismatch after the test body, as it does for every replay error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from harness._shared._errors import CaptureError, CassetteMissing
from harness._shared._record_mode import RecordMode
from harness.capture._captured import Captured
from harness.capture._cassette import CaptureFile, Exchange, HttpResponse, Proof, redacted
from harness.capture._matching import describe_mismatch, same_route

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness._shared._secrets import Redaction
    from harness.capture._matching import Matcher

__all__ = ["ProofHost", "ProofRun", "ProofState", "Ticket"]


class ProofHost(Protocol):
    """The capture session as a prove_stable call sees it (what it reads and calls; the session,
    which owns the proof, is the one there is: nothing here names its class)."""

    mode: RecordMode
    errors: list[CaptureError]
    matcher: Matcher
    redaction: Redaction
    record_hint: str

    @property
    def lock(self) -> AbstractContextManager[object]: ...

    def shown(self) -> str: ...

    def exchange_of(
        self, captured: Captured, response: HttpResponse, ended: int | None = None
    ) -> Exchange: ...

    def active(self) -> AbstractContextManager[object]:
        """While inside, `current_session()` is this session (a build is running)."""
        ...


@dataclass
class Ticket:
    """What the session decided for one request: answer it (`reply`) or forward it."""

    captured: Captured
    reply: HttpResponse | None = None  # None: forward to the upstream
    store: Callable[[Exchange], None] | None = None


@dataclass
class ProofState:
    number: int
    units: tuple[str, ...]
    recorded: tuple[Exchange, ...] | None  # the cassette's entry for this call, if any
    out: list[Exchange] = field(default_factory=list)
    reference: list[Exchange] = field(default_factory=list)
    build: int | None = None
    captured: list[Captured] = field(default_factory=list)
    used: set[int] = field(default_factory=set)  # reference exchanges this build was answered by
    appended: bool = False  # build 0 recorded an exchange the cassette did not hold

    def receive(self, captured: Captured, session: ProofHost) -> Ticket:
        """Answer one request of the build running now."""
        build = self.build or 0
        captured.number = len(self.captured) + 1
        captured.source = "proof"
        self.captured.append(captured)
        reference = self.reference if build > 0 else list(self.recorded or ())
        if build == 0 and session.mode is RecordMode.RECORD:
            return self._forward(captured)
        index = self._pick(reference, captured, session)
        if index is not None:
            self.used.add(index)
            recorded = reference[index].request
            if (
                build == 0
                and session.mode in (RecordMode.CHECK, RecordMode.UPDATE_NEW_ONLY)
                and not session.matcher.matches(recorded, captured, session.redaction)
            ):
                error = describe_mismatch(
                    index,
                    recorded,
                    captured,
                    session.shown(),
                    entry=f"prove_stable call {self.number + 1}",
                )
                if all(str(error) != str(known) for known in session.errors):
                    session.errors.append(error)
            if build == 0 and session.mode is RecordMode.UPDATE:
                self.out.append(session.exchange_of(captured, reference[index].response))
            elif build == 0 and session.mode is RecordMode.UPDATE_NEW_ONLY:
                self.out.append(reference[index])
            return Ticket(captured, reference[index].response)
        if build == 0:
            if session.mode is RecordMode.CHECK:
                raise CassetteMissing(
                    f"prove_stable call {self.number + 1}: request {captured.number}"
                    f" ({captured.method} {captured.path}) has no recorded answer in cassette"
                    f" {session.shown()}; {session.record_hint}"
                )
            return self._forward(captured)
        raise CaptureError(
            f"prove_stable order {build + 1} sent request {captured.number} ({captured.method}"
            f" {captured.path}), but the first order sent no such request at that place: the"
            " number of requests itself depends on the order"
        )

    def _pick(
        self, reference: list[Exchange], captured: Captured, session: ProofHost
    ) -> int | None:
        """The reference exchange that answers `captured`: the first unused one on its route
        that the matcher accepts (concurrent requests may come in another order than the first
        build sent them), else the first unused one on its route."""
        candidates = [
            index
            for index in range(len(reference))
            if index not in self.used and same_route(reference[index].request, captured)
        ]
        for index in candidates:
            if session.matcher.matches(reference[index].request, captured, session.redaction):
                return index
        return candidates[0] if candidates else None

    def _forward(self, captured: Captured) -> Ticket:
        def store(exchange: Exchange) -> None:
            self.out.append(exchange)
            self.appended = True

        return Ticket(captured, None, store)


class ProofRun:
    """One prove_stable call's builds on a session; see `CaptureSession.proving`."""

    def __init__(self, session: ProofHost, state: ProofState) -> None:
        self._session = session
        self._state = state

    @contextmanager
    def build(self, index: int) -> Iterator[list[Captured]]:
        """Run one build: its requests are answered by position and collected in the list."""
        state = self._state
        with self._session.lock:
            state.build = index
            state.captured = []
            state.used = set()
        collected = state.captured
        try:
            with self._session.active():
                yield collected
        finally:
            with self._session.lock:
                if index == 0 and not state.reference:
                    state.reference = list(state.out or state.recorded or ())
                state.build = None

    def reference_file(self) -> CaptureFile:
        """The reference exchanges as a one-proof cassette (redacted), for hash-seed children."""
        exchanges = tuple(self._state.reference)
        capture = CaptureFile(proofs=(Proof(units=(), exchanges=exchanges),))
        return redacted(capture, self._session.redaction)
