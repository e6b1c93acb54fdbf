"""asyncio scheduling: which ready task runs first, and which pending timer fires first.

During a run, the event loop policy hands out a loop of ours (`asyncio.run`, `asyncio.Runner`,
`new_event_loop` and anyio's asyncio backend all ask the policy). The loop perturbs two things,
as the run in force says (a loop that outlives the run it was made in follows the next run):

- **Ready tasks.** A task's step (`Task.__step`, `Task.__wakeup`) is held back when it is
  scheduled, and at the start of the next loop iteration the held steps join the ready queue
  sorted by the task's rank: by its label, the coroutine's name and first argument (`forward`),
  the reverse, or a seeded random key drawn for that label. Labels, not creation order, so a run
  is the same whatever order the program created its tasks in. Every held step runs in the
  next iteration, so no task starves, and a task keeps its own order. Callbacks that are not
  task steps (transports, protocols, future callbacks, `call_soon_threadsafe`) keep asyncio's
  FIFO order: code may rely on that.
- **Timers.** Sleeps and `call_later` / `call_at` callbacks stand for latencies: when the first
  of them is due, every pending one that would end before the next deadline fires with it, in
  the run's order, and the tasks they wake run in rank order. So a timer only ever fires early,
  never late, and never across a deadline: the timers that stand for deadlines (an
  `asyncio.timeout`, `wait_for`, `wait(timeout=...)`, anyio's cancel scopes, a scheduled
  `cancel()`, any callback named for a timeout) keep their real time. A sleep shorter than its
  timeout still ends first, a longer one still does not, and time stays real: nothing hangs.

Every run, the natural one included, records the order in which the program's tasks finished
(the cause a report names).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import os
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from harness.prove.perturb._journal import Journal, label_of_call
from harness.prove.perturb._plan import ASYNCIO, Mode, RunPlan

__all__ = ["perturbed_asyncio"]


@dataclass
class _Run:
    """The run in force: what loops of ours perturb, and where they write what they saw."""

    plan: RunPlan
    journal: Journal
    on_idle: Callable[[], None] | None
    mode: Mode = field(init=False)

    def __post_init__(self) -> None:
        self.mode = self.plan.mode_of(ASYNCIO)


_CURRENT: list[_Run] = []  # the run in force (a stack: runs do not nest, but stay safe if they do)


def _deadline(callback: Callable[..., Any]) -> bool:
    """Whether a timer callback stands for a deadline (kept in real time) rather than a latency."""
    target = callback.func if isinstance(callback, functools.partial) else callback
    name = getattr(target, "__name__", "")
    if "timeout" in name or name == "_release_waiter":
        return True  # asyncio.timeout, wait_for, wait, as_completed, anyio, SSL handshakes
    return name == "cancel" and isinstance(getattr(target, "__self__", None), asyncio.Future)


class _Perturbing:
    """Mixed into the platform's event loop class (see `_loop_class`)."""

    def _harness_setup(self) -> None:
        self._for: _Run | None = None
        self._ranks: dict[asyncio.Task[Any], tuple[Any, ...]] = {}  # held: no id reuse
        self._labels_seen: dict[str, int] = {}
        self._held: list[tuple[tuple[Any, ...], int, asyncio.Handle]] = []
        self._held_seq = itertools.count()
        self._latent: list[asyncio.TimerHandle] = []
        self._slots: dict[asyncio.TimerHandle, asyncio.TimerHandle] = {}  # latent -> its slot

    def _run_in_force(self) -> _Run | None:
        run = _CURRENT[-1] if _CURRENT else None
        if run is not self._for:
            self._for = run
            self._ranks = {}
            self._labels_seen = {}
        return run

    # -- ready tasks ----------------------------------------------------------------------------

    def call_soon(
        self, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        task = getattr(callback, "__self__", None)
        if isinstance(task, asyncio.Task):
            run = self._run_in_force()
            if run is not None:
                rank = self._rank(task, run)
                if run.mode is not Mode.NATURAL:
                    self._check_closed()  # type: ignore[attr-defined]
                    handle = asyncio.Handle(callback, args, self, context)  # type: ignore[arg-type]
                    self._held.append((rank, next(self._held_seq), handle))
                    return handle
        return super().call_soon(callback, *args, context=context)  # type: ignore[misc, no-any-return]

    def _rank(self, task: asyncio.Task[Any], run: _Run) -> tuple[Any, ...]:
        """The task's place among ready tasks: by its label (the coroutine's name and first
        argument) and how many tasks of that label came before, so a run does not depend on
        the order tasks were created in when that order is itself arbitrary (a set of
        coroutines handed to `as_completed` or `wait`)."""
        rank = self._ranks.get(task)
        if rank is None:
            label = _task_label(task)
            seen = self._labels_seen.get(label, 0)
            self._labels_seen[label] = seen + 1
            if run.mode in (Mode.REVERSED, Mode.BACKWARD):
                rank = (_descending(label), -seen)
            elif run.mode is Mode.RANDOM:
                draw = random.Random(f"{run.plan.seed}:{run.plan.index}:{label}:{seen}")
                rank = (draw.random(),)
            else:
                rank = (label, seen)
            self._ranks[task] = rank
            if not _machinery(task):  # the program's own tasks are what a report names
                journal = run.journal
                task.add_done_callback(lambda _: journal.finished(ASYNCIO, label))
        return rank

    def _run_once(self) -> None:
        ready: Any = self._ready  # type: ignore[attr-defined]
        if self._held:
            self._held.sort(key=lambda entry: (entry[0], entry[1]))
            ready.extend(handle for _, _, handle in self._held)
            self._held.clear()
        elif not ready:
            run = self._run_in_force()
            if run is not None and run.on_idle is not None:
                run.on_idle()  # about to wait: let queued thread pool work go first
        super()._run_once()  # type: ignore[misc]

    # -- timers ---------------------------------------------------------------------------------

    def call_at(
        self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        run = self._run_in_force()
        if run is None or run.mode is Mode.NATURAL or _deadline(callback):
            return super().call_at(when, callback, *args, context=context)  # type: ignore[misc, no-any-return]
        self._check_closed()  # type: ignore[attr-defined]
        timer = asyncio.TimerHandle(when, callback, args, self, context)  # type: ignore[arg-type]
        self._latent.append(timer)
        self._slots[timer] = super().call_at(when, self._fire_latent)  # type: ignore[misc]
        return timer

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        slot = self._slots.pop(handle, None)
        if slot is not None:
            slot.cancel()  # a cancelled sleep's slot must not fire other timers early
        super()._timer_handle_cancelled(handle)  # type: ignore[misc]

    def _fire_latent(self) -> None:
        """A latency timer is due: fire it with every pending one that ends before the next
        deadline, in the run's order."""
        self._latent = [timer for timer in self._latent if not timer.cancelled()]
        if not self._latent:
            return
        boundary = self._next_deadline()
        batch = sorted((t for t in self._latent if t.when() < boundary), key=lambda t: t.when())
        if not batch:
            return
        run = self._run_in_force()
        mode = run.mode if run is not None else Mode.NATURAL
        if mode in (Mode.REVERSED, Mode.BACKWARD):
            batch.reverse()
        elif mode is Mode.RANDOM and run is not None:
            run.plan.rng(ASYNCIO).shuffle(batch)
        fired = set(map(id, batch))
        self._latent = [timer for timer in self._latent if id(timer) not in fired]
        for timer in batch:
            slot = self._slots.pop(timer, None)
            if slot is not None:
                slot.cancel()  # fired early: its own slot has nothing left to fire
        for timer in batch:
            if not timer.cancelled():
                timer._run()

    def _next_deadline(self) -> float:
        """The earliest deadline timer still to fire: scheduled, or due in this iteration."""
        scheduled: Any = self._scheduled  # type: ignore[attr-defined]
        ready: Any = self._ready  # type: ignore[attr-defined]
        return min(
            (
                timer.when()
                for timer in itertools.chain(scheduled, ready)
                if isinstance(timer, asyncio.TimerHandle)
                and not timer.cancelled()
                and _deadline(getattr(timer, "_callback", None) or (lambda: None))
            ),
            default=math.inf,
        )


def _descending(text: str) -> tuple[int, ...]:
    """A sort key that orders strings in reverse (a prefix after the strings it starts)."""
    return (*(-ord(character) for character in text), 1)


_MACHINERY = (os.path.dirname(asyncio.__file__), os.path.dirname(os.path.dirname(__file__)))


def _machinery(task: asyncio.Task[Any]) -> bool:
    """A task of asyncio's own (shutting down generators and executors) or of the harness (the
    build's wrapper), not of the program."""
    code = getattr(task.get_coro(), "cr_code", None)
    filename = getattr(code, "co_filename", "")
    return not filename or filename.startswith(_MACHINERY)


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
    """Hands out loops of ours; everything else as the default policy."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = _loop_class()()
        loop._harness_setup()
        return loop  # type: ignore[no-any-return]


@contextmanager
def perturbed_asyncio(
    plan: RunPlan, journal: Journal, on_idle: Callable[[], None] | None = None
) -> Iterator[None]:
    """Every loop of ours perturbs as `plan` says for asyncio while the block runs; loops made
    while it runs are ours."""
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(_Policy())
    _CURRENT.append(_Run(plan, journal, on_idle))
    try:
        yield
    finally:
        _CURRENT.pop()
        asyncio.set_event_loop_policy(previous)
