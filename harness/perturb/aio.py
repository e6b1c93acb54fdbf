"""asyncio scheduling: which ready task runs first, and which pending sleep finishes first.

During a run, the event loop policy hands out a loop of ours (`asyncio.run`, `asyncio.Runner`,
`new_event_loop` and anyio's asyncio backend all ask the policy), which perturbs two things:

- **Ready tasks.** A task's step (`Task.__step`, `Task.__wakeup`) is held back when it is
  scheduled, and at the start of the next loop iteration the held steps join the ready queue
  sorted by the task's rank: creation order (`forward`), its reverse, or a seeded random key
  drawn once per task. Every held step runs in the next iteration, so no task starves, and a
  task keeps its own order. Callbacks that are not task steps (transports, protocols, future
  callbacks, `call_soon_threadsafe`) keep asyncio's FIFO order: code may rely on that.
- **Sleep timers.** `asyncio.sleep` timers become slots: the k-th sleep to finish still finishes
  at the k-th deadline, but which pending sleep it is comes from the run's order (`reversed`:
  the latest deadline first). Only sleeps in the same segment trade places: a segment ends at the
  next timer that is not a sleep (an `asyncio.timeout`, a `wait_for`, any `call_later`), so a
  sleep shorter than a timeout still finishes before it, and a longer one still does not.
  Timeouts themselves are never moved and time is real: a long sleep takes as long as it would.

The natural run uses the same loop without perturbing anything, so both runs record the order in
which the program's tasks finished (the cause a report names).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import sys
from asyncio import futures
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.perturb.journal import Journal, label_of_call
from harness.perturb.plan import ASYNCIO, Mode, RunPlan

__all__ = ["perturbed_asyncio"]

# What `asyncio.sleep` schedules: the one timer callback that is a sleep, not a timeout.
_SLEEP_DONE = futures._set_result_unless_cancelled  # type: ignore[attr-defined]


class _Perturbing:
    """Mixed into the platform's event loop class (see `_loop_class`)."""

    _plan: RunPlan
    _journal: Journal
    _on_idle: Callable[[], None] | None

    def _harness_setup(
        self, plan: RunPlan, journal: Journal, on_idle: Callable[[], None] | None
    ) -> None:
        self._plan = plan
        self._journal = journal
        self._on_idle = on_idle
        self._mode = plan.mode_of(ASYNCIO)
        self._ranks: dict[asyncio.Task[Any], float] = {}  # held until the loop goes: no id reuse
        self._tasks_seen = itertools.count()
        self._held: list[tuple[float, int, asyncio.Handle]] = []
        self._held_seq = itertools.count()
        self._sleeps: list[asyncio.TimerHandle] = []

    # -- ready tasks ----------------------------------------------------------------------------

    def call_soon(
        self, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        task = getattr(callback, "__self__", None)
        if isinstance(task, asyncio.Task):
            rank = self._rank(task)
            if self._mode is not Mode.NATURAL:
                self._check_closed()  # type: ignore[attr-defined]
                handle = asyncio.Handle(callback, args, self, context)  # type: ignore[arg-type]
                self._held.append((rank, next(self._held_seq), handle))
                return handle
        return super().call_soon(callback, *args, context=context)  # type: ignore[misc, no-any-return]

    def _rank(self, task: asyncio.Task[Any]) -> float:
        rank = self._ranks.get(task)
        if rank is None:
            order = next(self._tasks_seen)
            if self._mode in (Mode.REVERSED, Mode.BACKWARD):
                rank = -order
            elif self._mode is Mode.RANDOM:
                rank = self._plan.rng(ASYNCIO).random()
            else:
                rank = order
            self._ranks[task] = rank
            label = _task_label(task)
            task.add_done_callback(lambda _: self._journal.finished(ASYNCIO, label))
        return rank

    def _run_once(self) -> None:
        ready: Any = self._ready  # type: ignore[attr-defined]
        if self._held:
            self._held.sort(key=lambda entry: (entry[0], entry[1]))
            ready.extend(handle for _, _, handle in self._held)
            self._held.clear()
        elif not ready and self._on_idle is not None:
            self._on_idle()  # about to wait: let held thread work go first
        super()._run_once()  # type: ignore[misc]

    # -- sleep timers ---------------------------------------------------------------------------

    def call_at(
        self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        if self._mode is Mode.NATURAL or callback is not _SLEEP_DONE:
            return super().call_at(when, callback, *args, context=context)  # type: ignore[misc, no-any-return]
        self._check_closed()  # type: ignore[attr-defined]
        sleep = asyncio.TimerHandle(when, callback, args, self, context)  # type: ignore[arg-type]
        self._sleeps.append(sleep)
        super().call_at(when, self._slot)  # type: ignore[misc]
        return sleep

    def _slot(self) -> None:
        """A sleep's deadline came: finish one pending sleep of this segment, as the run says."""
        self._sleeps = [sleep for sleep in self._sleeps if not sleep.cancelled()]
        if not self._sleeps:
            return
        scheduled: Any = self._scheduled  # type: ignore[attr-defined]
        boundary = min(
            (
                timer.when()
                for timer in scheduled
                if not timer.cancelled() and getattr(timer, "_callback", None) != self._slot
            ),
            default=math.inf,
        )
        segment = sorted(
            (sleep for sleep in self._sleeps if sleep.when() < boundary), key=lambda s: s.when()
        )
        if not segment:
            return
        if self._mode in (Mode.REVERSED, Mode.BACKWARD):
            chosen = segment[-1]
        elif self._mode is Mode.RANDOM:
            chosen = self._plan.rng(ASYNCIO).choice(segment)
        else:
            chosen = segment[0]
        self._sleeps.remove(chosen)
        chosen._run()


def _task_label(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None)
    frame = getattr(coro, "cr_frame", None)
    if code is None or frame is None:
        return task.get_name()
    return label_of_call(code.co_name, code.co_varnames[: code.co_argcount], frame.f_locals)


_CLASSES: dict[type[Any], type[Any]] = {}


def _loop_class() -> type[Any]:
    base: type[Any]
    if sys.platform == "win32":  # pragma: no cover - the CI runs on Linux
        base = asyncio.ProactorEventLoop  # type: ignore[attr-defined]
    else:
        base = asyncio.SelectorEventLoop
    if base not in _CLASSES:
        _CLASSES[base] = type("PerturbedEventLoop", (_Perturbing, base), {"__module__": __name__})
    return _CLASSES[base]


class _Policy(asyncio.DefaultEventLoopPolicy):
    """Hands out perturbed loops for one run; everything else as the default policy."""

    def __init__(self, plan: RunPlan, journal: Journal, on_idle: Callable[[], None] | None) -> None:
        super().__init__()
        self._harness = (plan, journal, on_idle)

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = _loop_class()()
        loop._harness_setup(*self._harness)
        return loop  # type: ignore[no-any-return]


@contextmanager
def perturbed_asyncio(
    plan: RunPlan, journal: Journal, on_idle: Callable[[], None] | None = None
) -> Iterator[None]:
    """Every event loop made while the block runs is perturbed as `plan` says for asyncio."""
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(_Policy(plan, journal, on_idle))
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(previous)
