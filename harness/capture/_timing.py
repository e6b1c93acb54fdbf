"""When a session's exchanges ran, and the deterministic order a cassette stores them in.

A `Clock` starts at a session's first request: `started` is that wall-clock time (UTC, ISO 8601)
and each exchange's `Timing` is its start (the request reaching the transport) and end (the
answer's last byte) in milliseconds from then, measured on the monotonic clock. A session that
adds exchanges to a cassette recorded earlier (update-new-only) counts from that cassette's
`started`, so every offset in one file shares one zero.

`stored_order` is a function of the stored exchanges alone: exchanges without timing (format 1)
keep their place; the others are taken in the order they were sent and cut into groups of
requests in flight together (a request sent before every earlier one had ended joins their
group); a group of one keeps its place, a larger group is sorted by what its exchanges are (the
request's bytes, then the answer's), never by the order they arrived or finished in. So
re-recording unchanged concurrent code gives the same file but for the timing, and
`same_but_timing` tells the session not to rewrite it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from harness._shared._errors import FixtureError
from harness._shared._files import decode, read_checked
from harness.capture._cassette import CaptureFile, Exchange, Timing, without_timing

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Clock", "same_but_timing", "stored_order"]


class Clock:
    """The zero of one session's timing; started lazily at its first request."""

    def __init__(self, started: str | None = None) -> None:
        self._given = started  # an earlier recording's zero, to keep counting from
        self._zero_ns: int | None = None
        self._lock = threading.Lock()  # the first requests may come from several threads
        self.started: str | None = None

    def now(self) -> int:
        """The monotonic time of an event, in ns; the first call fixes the zero."""
        now = time.perf_counter_ns()
        with self._lock:
            if self._zero_ns is None:
                self._start(now)
        return now

    def _start(self, now: int) -> None:
        wall = time.time_ns()
        self._zero_ns = now
        self.started = datetime.fromtimestamp(wall / 1e9, UTC).isoformat(timespec="milliseconds")
        if self._given is None:
            return
        try:
            earlier = datetime.fromisoformat(self._given)
        except ValueError:
            return
        if earlier.tzinfo is not None:  # count on from the earlier recording's zero
            self._zero_ns = now - (wall - int(earlier.timestamp() * 1e9))
            self.started = self._given

    def timing(self, start_ns: int, end_ns: int) -> Timing:
        zero = self._zero_ns if self._zero_ns is not None else start_ns
        return Timing(start_ms=_ms(start_ns - zero), end_ms=_ms(max(end_ns, start_ns) - zero))


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


def stored_order(exchanges: Sequence[Exchange]) -> tuple[Exchange, ...]:
    """The exchanges in the order a cassette stores them (see the module doc)."""
    untimed = [e for e in exchanges if isinstance(e.timing, msgspec.UnsetType)]
    timed = sorted(
        (e for e in exchanges if isinstance(e.timing, Timing)),
        key=lambda e: e.timing.start_ms if isinstance(e.timing, Timing) else 0.0,
    )
    ordered: list[Exchange] = list(untimed)
    group: list[Exchange] = []
    group_end = 0.0
    for exchange in timed:
        assert isinstance(exchange.timing, Timing)
        if group and exchange.timing.start_ms >= group_end:
            ordered += _in_content_order(group)
            group = []
        group_end = max(group_end, exchange.timing.end_ms) if group else exchange.timing.end_ms
        group.append(exchange)
    ordered += _in_content_order(group)
    return tuple(ordered)


def _in_content_order(group: list[Exchange]) -> list[Exchange]:
    if len(group) < 2:
        return group
    return sorted(
        group, key=lambda e: (msgspec.json.encode(e.request), msgspec.json.encode(e.response))
    )


def same_but_timing(path: Path, data: bytes) -> bool:
    """Whether the cassette at `path` holds what `data` holds, but for the timing (and of the
    same format: a format 1 file is rewritten once, to gain its timing)."""
    try:
        old = decode(read_checked(path), CaptureFile, path)
    except (FixtureError, OSError):
        return False
    new = msgspec.json.decode(data, type=CaptureFile)
    return old.format == new.format and msgspec.json.encode(
        without_timing(old)
    ) == msgspec.json.encode(without_timing(new))
