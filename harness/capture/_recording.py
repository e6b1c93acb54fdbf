"""One forwarded answer as it arrives: fed chunk by chunk, stored once when it ends.

A capture transport hands the client each chunk of an upstream answer as it arrives (an endless
event stream, an MCP server's `/sse`, must not hang the test; a provider's stream must reach the
client while the model writes) and feeds the same chunk to the session's `Recording` for it. The
answer is stored when the stream ends, or when the client closes it early (what the client read
is what is replayed), or when the session finishes with the stream still open; an upstream that
fails mid-stream stores nothing. A transport whose library hands over whole bodies (issue 23's
boto3 and urllib) calls `CaptureSession.complete`, which is a recording fed once.

The transport-facing API of a session is three calls, sans I/O: `receive` (a `Ticket`: answer
from the cassette, or forward), `recording` (this class, for a forwarded answer) and `complete`
(a whole body at once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness.capture._cassette import HttpResponse
    from harness.capture._proof import Ticket

__all__ = ["Receiver", "Recording"]


class Receiver(Protocol):
    """The capture session as the transports and the patched libraries see it (what they call
    on it; `harness.capture._session.CaptureSession` is the one there is). The session owns the
    transports and the interception, so nothing below it names its class."""

    upstream: object | None

    def receive(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> Ticket: ...

    def recording(
        self, ticket: Ticket, status: int, headers: Sequence[tuple[str, str]]
    ) -> Recording: ...

    def complete(
        self, ticket: Ticket, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> HttpResponse: ...

    def upstream_for(self, module: Any, *, asynchronous: bool) -> object: ...


class Recording:
    """A forwarded answer being recorded: `feed` each chunk, then `end` (idempotent), or
    `abandon` when the upstream failed."""

    def __init__(
        self,
        ticket: Ticket,
        status: int,
        headers: Sequence[tuple[str, str]],
        store: Callable[[Recording, bytes | None], HttpResponse | None],
    ) -> None:
        self.ticket = ticket
        self.status = status
        self.headers = tuple((str(name), str(value)) for name, value in headers)
        self._store = store
        self._chunks: list[bytes] = []
        self._lock = threading.Lock()
        self._done = False
        self.response: HttpResponse | None = None

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            if not self._done and chunk:
                self._chunks.append(bytes(chunk))

    def end(self) -> HttpResponse | None:
        """Store what arrived (once); the stored answer, or None if it was abandoned."""
        with self._lock:
            if self._done:
                return self.response
            self._done = True
            body = b"".join(self._chunks)
            self._chunks = []
        self.response = self._store(self, body)
        return self.response

    def abandon(self) -> None:
        """The upstream failed mid-answer: store nothing."""
        with self._lock:
            if self._done:
                return
            self._done = True
            self._chunks = []
        self._store(self, None)
