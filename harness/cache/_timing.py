"""When a recorded request was sent and answered: the one adapter from what recordings hold.

A request's `time` (a session line's optional field, or a cassette exchange's timing) is read as:
- a number: the start, in seconds (an offset within the recording, or a Unix time); a Unix
  time in milliseconds, microseconds or nanoseconds (what many proxy logs and OTLP write) is
  told apart by size, as `harness scan` reads trace times: 1e12 and over is milliseconds, 1e15
  microseconds, 1e18 nanoseconds (seconds reach 1e12 only in the year 33658);
- an ISO 8601 string: the start, a wall-clock time (its date picks the price row);
- an object `{"start": ..., "end": ...}`, each a number of seconds or an ISO string; a cassette's
  `timing` is `{"start": ms, "end": ms}` from the recording's first request, with the recording's
  wall-clock start beside it (`Timing.of_cassette`).
Anything else is no time: the cost model then treats requests as sequential and never expired.
A number that is negative, or a time past the year 9999 (`1e308`), is out of range: a
`ValueError` naming the value, which the readers turn into one line naming the file.
"""

from __future__ import annotations

import datetime
from typing import Any, NamedTuple

__all__ = ["Timing", "timing_of"]

_EPOCH_FLOOR = 1e9  # a number of seconds above this is a Unix time, not an offset
_SCALES = ((1e18, 1e9), (1e15, 1e6), (1e12, 1e3))  # nano, micro, milli: (from, per second)
_LATEST = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC).timestamp()
_EARLIEST = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC).timestamp()
_RANGE = (
    "a time is seconds (an offset in the recording, or a Unix time), a Unix time in"
    " milliseconds, microseconds or nanoseconds, or an ISO 8601 string, up to the year 9999"
)


class Timing(NamedTuple):
    """Start and end in seconds (None when unknown), and the wall-clock date when known."""

    start: float | None = None
    end: float | None = None
    day: datetime.date | None = None

    @property
    def known(self) -> bool:
        return self.start is not None

    @classmethod
    def of_cassette(cls, start_ms: Any, end_ms: Any, wall_start: Any) -> Timing:
        """A cassette exchange's timing: milliseconds from the recording's start."""
        base = _instant(wall_start)
        origin = base[0] if base[0] is not None else 0.0
        start = _number(start_ms)
        end = _number(end_ms)
        return cls(
            _within(origin + start / 1000, start_ms) if start is not None else None,
            _within(origin + end / 1000, end_ms) if end is not None else None,
            base[1],
        )


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _within(seconds: float, given: Any) -> float:
    """`seconds` when it is a time the calendar holds; else a ValueError naming `given`."""
    if not _EARLIEST <= seconds <= _LATEST:
        raise ValueError(f"the time {given!r} is out of range: {_RANGE}")
    return seconds


def _instant(value: Any) -> tuple[float | None, datetime.date | None]:
    number = _number(value)
    if number is not None:
        if number < 0:
            raise ValueError(f"the time {value!r} is negative: {_RANGE}")
        scale = next((per for start, per in _SCALES if number >= start), 1.0)
        number = _within(number / scale, value)
        if number > _EPOCH_FLOOR:
            return number, datetime.datetime.fromtimestamp(number, datetime.UTC).date()
        return number, None
    if isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None, None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        try:
            seconds = moment.timestamp()
        except (OverflowError, ValueError):  # the year 1 east of UTC: before the calendar
            seconds = _EARLIEST - 1
        return _within(seconds, value), moment.date()
    return None, None


def timing_of(value: Any) -> Timing:
    """A request's `time` field as a `Timing` (see the module doc); a `ValueError` for a time
    out of range."""
    if isinstance(value, Timing):
        return value
    if isinstance(value, dict):
        start, day = _instant(value.get("start"))
        end, end_day = _instant(value.get("end"))
        if start is None:
            return Timing()
        return Timing(start, end if end is not None and end >= start else None, day or end_day)
    start, day = _instant(value)
    return Timing(start, None, day)
