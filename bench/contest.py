"""Timing on a shared, noisy machine: contenders interleaved in one process, medians.

Two cores shared by several people move absolute times by up to 2x between runs; what holds is
a ratio between contenders measured side by side. So every contender runs once per round, in an
order that rotates from round to round, and each is summarised by its median: a burst of load
hits one run of each, not all runs of one.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.timing import timed


@dataclass
class Entrant:
    """One contender: `run` returns the seconds it wants billed (None: the whole call)."""

    name: str
    run: Callable[[], float | None]
    rounds: int = 1 << 30  # takes part in at most this many rounds (slow, steady ones)
    times: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def interleaved(entrants: Sequence[Entrant], rounds: int) -> None:
    """Run every entrant once per round, rotating who goes first; fill in their `times`."""
    for number in range(rounds):
        shift = number % len(entrants)
        for entrant in [*entrants[shift:], *entrants[:shift]]:
            if len(entrant.times) >= entrant.rounds:
                continue
            seconds, billed = timed(entrant.run)
            entrant.times.append(seconds if billed is None else billed)


def spread(these: Sequence[float], those: Sequence[float]) -> tuple[float, float]:
    """The lowest and highest of `these[i] / those[i]` over the rounds both ran (entrants run
    in the same rounds from the first, so index i is round i for both)."""
    ratios = [a / b for a, b in zip(these, those, strict=False) if b > 0]
    return (min(ratios), max(ratios)) if ratios else (0.0, 0.0)


def whole(function: Callable[..., Any], *args: Any) -> Callable[[], float | None]:
    """An entrant's run: call `function(*args)`, bill the whole call; a falsy result that is
    not None (a check that said no) is an error, never a time."""

    def run() -> None:
        result = function(*args)
        ok = getattr(result, "ok", result)
        if ok is not None and not ok:
            raise AssertionError(f"{getattr(function, '__name__', function)} failed: {result!r}")

    return run
