"""The run in force: its plan and journal, and how long it may hold work back.

A perturbed run makes the program's tasks and thread jobs finish in the run's order by holding
back the wake-up of one until those before it are done. Holding costs time, so it is bounded in
two ways, both here:

- **A budget.** A run may hold work back until `budget_s` after it started (the proof gives it
  twice the natural run's time); after that every wake-up goes through at once. A run therefore
  costs at most about three natural runs, and a program that waits for something the proof holds
  back (a poll the proof could not recognise) is late, never hung.
- **Deadlines.** While a deadline is pending (an `asyncio.timeout`, `wait_for`, anyio's cancel
  scopes, `Future.result(timeout=...)`, `wait(timeout=...)`, a `Barrier` or `Queue.get` with a
  timeout), nothing is held past the middle of its window: a correct program keeps at least half
  of the slack it had, so a deadline that holds in the natural run holds here too.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final

from harness.prove.perturb._journal import Journal
from harness.prove.perturb._plan import Mode, RunPlan

__all__ = [
    "DEFAULT_BUDGET_S",
    "Deadline",
    "Pressure",
    "RunState",
    "budget_after",
    "current_run",
    "in_force",
]

DEFAULT_BUDGET_S: Final = 2.0  # when no natural run was timed (the registration shuffle)
MIN_BUDGET_S: Final = 0.05  # a natural run of a millisecond still lets a few latencies play out


def budget_after(natural_s: float) -> float:
    """How long a perturbed run may hold work back, given the natural run's time: twice it, so a
    perturbed run costs at most about three natural ones."""
    return max(MIN_BUDGET_S, 2 * natural_s)


@dataclass(eq=False)
class Deadline:
    """A deadline pending somewhere in the program: its window, and whether it still stands."""

    start: float
    due: float
    stands: Callable[[], bool] = lambda: True

    @property
    def midpoint(self) -> float:
        return self.start + (self.due - self.start) / 2


class Pressure:
    """The deadlines pending in a run (any thread may add one); see the module doc."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[Deadline] = []
        self._listeners: list[Callable[[], None]] = []

    def add(self, start: float, due: float, stands: Callable[[], bool] = lambda: True) -> Deadline:
        deadline = Deadline(start, due, stands)
        with self._lock:
            self._pending.append(deadline)
            listeners = list(self._listeners)
        for listener in listeners:
            listener()  # a waiter may have to give up its hold sooner
        return deadline

    def remove(self, deadline: Deadline) -> None:
        with self._lock:
            if deadline in self._pending:
                self._pending.remove(deadline)

    def listen(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def earliest_midpoint(self, now: float) -> float:
        with self._lock:
            self._pending = [d for d in self._pending if d.due > now and d.stands()]
            return min((d.midpoint for d in self._pending), default=math.inf)


@dataclass(eq=False)
class RunState:
    """One run of a build: what its plan says, what it saw, and until when it may hold."""

    plan: RunPlan
    journal: Journal
    budget_s: float = DEFAULT_BUDGET_S
    started: float = field(default_factory=time.monotonic)
    pressure: Pressure = field(default_factory=Pressure)
    flush_threads: Callable[[], None] | None = None  # start the thread jobs queued so far

    def mode_of(self, source: str) -> Mode:
        return self.plan.mode_of(source)

    def hold_until(self, now: float | None = None) -> float:
        """Until when work may be held back (see the module doc): the budget's end, or the
        middle of the nearest pending deadline's window, whichever comes first."""
        moment = time.monotonic() if now is None else now
        return min(self.started + self.budget_s, self.pressure.earliest_midpoint(moment))


_CURRENT: list[RunState] = []  # a stack: runs do not nest, but stay safe if they do


def current_run() -> RunState | None:
    return _CURRENT[-1] if _CURRENT else None


@contextmanager
def in_force(run: RunState) -> Iterator[RunState]:
    """Make `run` the run in force while the block runs."""
    _CURRENT.append(run)
    try:
        yield run
    finally:
        _CURRENT.remove(run)
