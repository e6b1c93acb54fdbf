"""The order a perturbed run imposes on one event loop's tasks: which held wake-up goes next.

Every wake-up of a task (its first step, a sleep ending, a future it awaited being set, an
answer arriving on a pipe or a socket) is held, and released by the loop's next pass (see
`_aio`). A pass releases:

- every wake-up of a task the program did not create (an SDK's reader, a task started from a
  callback), and every task's first step, sorted by rank: first steps start each task's I/O, so
  latencies overlap as they would;
- a later wake-up of a task the program created under a parent task only when no sibling ranked
  before it is still **busy**: it, or a task it started, has a wake-up held, a latency timer
  pending (a sleep, a `call_later`), a thread job in flight, or an answer due on a channel (see
  `_channels`). So in the forward run siblings finish in label order and in the reversed run in
  the reverse, whatever their await counts and real latencies: a sibling that needs three loop
  iterations or a second round trip to a helper process holds the others back until it is done.

A sibling that waits for the program instead (an `Event`, a queue, a lock) is not busy and holds
nothing back, so a producer and a consumer, or tasks that wait for each other, still meet. A
sibling that keeps waking without news from outside (a poll: `while not ready: await
asyncio.sleep(0)`) stops holding the others after a bounded number of wake-ups, so what it polls
for can happen. Cancellation is never held. A sibling's end schedules callbacks (its waiters'),
and no wake-up overtakes a callback, so what its end wakes (the parent in `asyncio.wait(...,
FIRST_COMPLETED)`) is held by the next pass too, which runs parents before their children: the
parent sees one sibling done at a time.

Ranks are per parent: by label (the coroutine's name and first argument) and how many siblings
of that label came before, not creation order, which can itself be arbitrary (a set of
coroutines handed to `as_completed`). Forward sorts labels, reversed sorts them backward, random
draws a key per label from the run's seed.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import random
import sys
import time
from bisect import insort
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from harness.prove.perturb._channels import Channel, Channels
from harness.prove.perturb._plan import ASYNCIO, Mode
from harness.prove.perturb._program import created_by_program, is_program_file, program_label
from harness.prove.perturb._run import RunState

__all__ = ["Held", "Scheduler", "TaskInfo"]

SPIN_STEPS: Final = 64  # wake-ups without news from outside before a sibling counts as polling
SPIN_TIMERS: Final = 8  # the same, for wake-ups by a timer (a poll with a sleep)


class TaskInfo:
    """What the scheduler knows of one task."""

    __slots__ = (
        "answered",
        "depth",
        "done",
        "gated",
        "journaled",
        "kinds",
        "label",
        "parent",
        "quiet_steps",
        "rank",
        "task",
        "timer_steps",
    )

    def __init__(self, task: asyncio.Task[Any] | None, parent: TaskInfo | None) -> None:
        self.task = task
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.label = ""
        self.journaled = False  # the program's own: a report names it
        self.gated = False  # the program created it under a parent: it finishes in turn
        self.rank: tuple[Any, ...] = ()
        self.done = False
        self.quiet_steps = 0  # wake-ups of it or its tasks since news from outside
        self.timer_steps = 0
        self.kinds: set[str] = set()  # channels it or its tasks used
        self.answered = False  # an answer came from outside since its last step

    def lineage(self) -> list[TaskInfo]:
        chain: list[TaskInfo] = []
        info: TaskInfo | None = self
        while info is not None:
            chain.append(info)
            info = info.parent
        return chain


@dataclass(eq=False)
class Held:
    info: TaskInfo
    seq: int
    mark: int  # how many callbacks the loop had scheduled when this was held
    handle: asyncio.Handle
    first: bool  # the task's first step
    by_timer: bool  # woken by a timer
    progress: bool = False  # a library's way to the task's next wait (see `_in_library`)
    task: Any = None  # the task woken (its info forgets it once done)


@dataclass
class _Timer:
    owner: TaskInfo | None
    handle: Any = None
    fired: bool = False


@dataclass
class Scheduler:
    """One loop's tasks under one run (a loop that outlives a run gets a new scheduler)."""

    run: RunState | None
    channels: Channels = field(init=False)
    infos: dict[asyncio.Task[Any], TaskInfo] = field(default_factory=dict)
    held: list[Held] = field(default_factory=list)  # held since the last pass looked
    # Wake-ups a pass kept back, per parent (the living one), in rank order: a pass looks only
    # at the first ones of each parent, as a sibling ranked after a held one waits behind it.
    parked: dict[TaskInfo | None, list[Held]] = field(default_factory=dict)
    timers: list[_Timer] = field(default_factory=list)
    futures: list[tuple[asyncio.Future[Any], TaskInfo | None]] = field(default_factory=list)
    passes: int = 0
    poke: Callable[[], None] = lambda: None  # ask the loop for a pass (something changed)
    _seen: dict[tuple[int, str], int] = field(default_factory=dict)
    next_seq: int = 0  # the number of the next wake-up held

    def __post_init__(self) -> None:
        self.mode = self.run.mode_of(ASYNCIO) if self.run is not None else Mode.NATURAL
        self.channels = Channels(self.current, self.news)

    @property
    def holds(self) -> bool:
        return self.mode is not Mode.NATURAL

    def current(self) -> TaskInfo | None:
        task = _current_task()
        return self.infos.get(task) if task is not None else None

    # -- tasks ----------------------------------------------------------------------------------

    def info_of(self, task: asyncio.Task[Any]) -> tuple[TaskInfo, bool]:
        """The task's info, made on first sight; and whether this is its first step."""
        info = self.infos.get(task)
        if info is not None:
            return info, False
        first = _not_started(task.get_coro())
        creator = _current_task() if first else None
        parent = self.infos.get(creator) if creator is not None else None
        info = TaskInfo(task, parent)
        info.label, own = program_label(task.get_coro())
        by_program = first and created_by_program(sys._getframe(2))
        info.gated = parent is not None and by_program
        info.journaled = info.gated or own
        info.rank = self._rank(info)
        self.infos[task] = info
        task.add_done_callback(self._finished)
        return info, first

    def _rank(self, info: TaskInfo) -> tuple[Any, ...]:
        key = (id(info.parent), info.label)
        seen = self._seen.get(key, 0)
        self._seen[key] = seen + 1
        if self.mode in (Mode.REVERSED, Mode.BACKWARD):
            return (_descending(info.label), -seen)
        if self.mode is Mode.RANDOM and self.run is not None:
            plan = self.run.plan
            return (random.Random(f"{plan.seed}:{plan.index}:{info.label}:{seen}").random(),)
        return (info.label, seen)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        info = self.infos.pop(task, None)
        if info is None:
            return
        info.done = True
        info.task = None
        if info.gated:
            self.poke()
        if info.journaled and self.run is not None:
            self.run.journal.finished(ASYNCIO, info.label, info.kinds)

    def hold(
        self, task: asyncio.Task[Any], handle: asyncio.Handle, mark: int, by_timer: bool
    ) -> None:
        info, first = self.info_of(task)
        progress = info.gated and not first and self._from_outside(task, info) and _in_library(task)
        self.held.append(Held(info, self.next_seq, mark, handle, first, by_timer, progress, task))
        self.next_seq += 1

    def _from_outside(self, task: asyncio.Task[Any], info: TaskInfo) -> bool:
        """Whether the wake-up comes from the task itself (a yield) or from a task outside its
        own (a lock, a limiter, an event released by a sibling), rather than from an answer:
        I/O, a timer, a thread, or a task it started (an SDK's reader delivering a response)."""
        waker = _current_task()
        if waker is None:
            return False
        if waker is task:
            return True
        woken_by = self.infos.get(waker)
        return woken_by is None or info not in woken_by.lineage()

    # -- what keeps a task busy -----------------------------------------------------------------

    def timer(self) -> _Timer:
        entry = _Timer(self.current())
        self.timers.append(entry)
        return entry

    def executor_job(self, future: asyncio.Future[Any]) -> None:
        owner = self.current()
        self.futures.append((future, owner))
        future.add_done_callback(lambda _: self.news_for(owner))

    def news(self, channel: Channel) -> None:
        self.news_for(channel.owner, answer=True)
        if channel.owner is not None:
            for info in channel.owner.lineage():
                if info.journaled:
                    info.kinds.add(channel.kind)
        self.poke()

    def news_for(self, owner: TaskInfo | None, *, answer: bool = False) -> None:
        """Something outside answered `owner` (or a task under it): it is not polling. An
        answer over a channel is also journaled when the task takes it up."""
        for info in owner.lineage() if owner is not None else ():
            info.quiet_steps = info.timer_steps = 0
            info.answered = info.answered or (answer and info.gated and info.journaled)

    def ran(self, entry: Held) -> None:
        for info in entry.info.lineage():
            info.quiet_steps += 1
            info.timer_steps += entry.by_timer
        if entry.info.answered and self.run is not None:
            entry.info.answered = False  # the order in which answers were taken up
            self.run.journal.answer(entry.info.label)

    # -- the pass -------------------------------------------------------------------------------

    def holding(self) -> bool:
        """Whether any wake-up is held."""
        return bool(self.held) or bool(self.parked)

    def drain(self) -> list[Held]:
        """Every wake-up held, which the scheduler forgets."""
        entries = self._unpark() + self.held
        self.held = []
        return entries

    def take(self, mark: int) -> tuple[list[Held], float, bool]:
        """The held wake-ups to run now, in order; when to look again at the latest; and whether
        to look again at the next iteration (some were held too late for this pass).

        Only wake-ups held before the loop scheduled its `mark`-th callback are considered: the
        pass was scheduled then, so every callback scheduled before them has run (asyncio runs
        callbacks first in, first out, and a wake-up must not overtake a callback scheduled
        before it: `sock_connect`'s clean-up before the connection it made is used).

        A pass runs at every loop iteration of a perturbed run, so it costs what changed, not
        what is held: the wake-ups kept back stay parked in rank order per parent, and only
        the first of each parent is looked at again."""
        self.passes += 1
        held = [entry for entry in self.held if entry.mark <= mark]
        later = (
            [entry for entry in self.held if entry.mark > mark]
            if len(held) != len(self.held)
            else []
        )
        self.held = later
        now = time.monotonic()
        until = self.run.hold_until(now) if self.run is not None and self.holds else -math.inf
        if now >= until:
            return _in_order(held + self._unpark()), math.inf, bool(later)
        release = self._repark()
        for entry in held:
            info = entry.info
            if info.gated and not entry.first and not _cancelling(info):
                self._park(entry)
            else:
                release.append(entry)
        if not self.parked:
            return _in_order(release), math.inf, bool(later)
        busy, runnable, settles = self._best_busy(now, release + later)
        for cohort, entries in list(self.parked.items()):
            busy_bar, run_bar = busy.get(cohort), runnable.get(cohort)
            kept: list[Held] = []
            for index, entry in enumerate(entries):
                rank = entry.info.rank
                if run_bar is not None and rank > run_bar:
                    kept += entries[index:]  # the rest rank after a sibling held: kept back
                    break
                bar = run_bar if entry.progress else busy_bar
                if bar is None or bar >= rank:
                    release.append(entry)
                else:
                    kept.append(entry)
            if kept:
                self.parked[cohort] = kept
            else:
                del self.parked[cohort]
        return _in_order(release), min(until, settles), bool(later)

    def _park(self, entry: Held) -> None:
        cohort = _living_parent(entry.info)
        insort(self.parked.setdefault(cohort, []), entry, key=_rank_of)

    def _unpark(self) -> list[Held]:
        entries = [entry for entries in self.parked.values() for entry in entries]
        self.parked = {}
        return entries

    def _repark(self) -> list[Held]:
        """The parked wake-ups no longer kept back whatever the busy siblings: a cancelled
        task's (cancellation is never held). Siblings whose parent has finished are parked
        again under their grandparent."""
        released: list[Held] = []
        for cohort, entries in list(self.parked.items()):
            cancelled = [entry for entry in entries if entry.task.cancelling()]
            if cancelled:
                released += cancelled
                entries = [entry for entry in entries if entry not in cancelled]
                self.parked[cohort] = entries
            if (cohort is not None and cohort.done) or not entries:
                del self.parked[cohort]
                for entry in entries:
                    self._park(entry)
        return released

    def _best_busy(
        self, now: float, held: list[Held]
    ) -> tuple[
        dict[TaskInfo | None, tuple[Any, ...]], dict[TaskInfo | None, tuple[Any, ...]], float
    ]:
        """Per parent, the best rank among its children that are busy, and among those that
        are runnable (a wake-up held), leaving out the ones polling; and when a channel busy
        only with a recent read settles. `held`: the wake-ups held and not parked. A parked
        sibling counts through the first of its parent's that is not polling (the others rank
        after it) and through its parent."""
        seen: set[TaskInfo] = set()
        best: dict[TaskInfo | None, tuple[Any, ...]] = {}

        def mark(info: TaskInfo | None) -> None:
            while info is not None and info not in seen:
                seen.add(info)
                if _counts(info):
                    cohort = _living_parent(info)
                    bar = best.get(cohort)
                    if bar is None or info.rank < bar:
                        best[cohort] = info.rank
                info = info.parent

        for info in {entry.info for entry in held}:
            mark(info)
        for cohort, entries in self.parked.items():
            mark(cohort)
            first = next((entry.info.rank for entry in entries if _counts(entry.info)), None)
            bar = best.get(cohort)
            if first is not None and (bar is None or first < bar):
                best[cohort] = first
        runnable = dict(best)
        self.timers = [t for t in self.timers if not t.fired and not _cancelled(t.handle)]
        for timer in self.timers:
            mark(timer.owner)
        self.futures = [(future, owner) for future, owner in self.futures if not future.done()]
        for _, owner in self.futures:
            mark(owner)
        settles = math.inf
        for channel in self.channels.live():
            if channel.busy(now):
                mark(channel.owner)
                if not channel.expecting and not channel.until_exit:
                    settles = min(settles, channel.settles_at())
        return best, runnable, settles


def _counts(info: TaskInfo) -> bool:
    """Whether a busy task holds its siblings back: the program's, alive, and not polling."""
    return (
        info.gated
        and not info.done
        and info.quiet_steps < SPIN_STEPS
        and info.timer_steps < SPIN_TIMERS
    )


def _rank_of(entry: Held) -> tuple[Any, ...]:
    return entry.info.rank


# What a program awaits to yield or to wait: its own steps, not a library's way to its next wait.
_YIELDS: Final = frozenset(
    {"sleep", "checkpoint", "cancel_shielded_checkpoint", "checkpoint_if_cancelled", "__sleep0"}
)


def _in_library(task: asyncio.Task[Any]) -> bool:
    """Whether the task is suspended inside a library call the program awaits (anyio's capacity
    limiter on its way to a worker thread, an SDK on its way to a request), rather than in a
    sleep or checkpoint the program awaits itself.

    A yield there, or a lock or limiter a sibling hands over, is the library's way to the
    task's next real wait, not the end of a step of the program's: holding it behind a sibling
    that only waits for a process or a thread would delay this task's own request, and make the
    siblings' latencies add up. It is still held behind a sibling that is running."""
    callee: str | None = None
    awaited: Any = task.get_coro()
    while awaited is not None:
        code = getattr(awaited, "cr_code", None) or getattr(awaited, "gi_code", None)
        if code is None:
            break
        if is_program_file(code.co_filename):
            callee = None
        elif callee is None:
            callee = code.co_name
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return callee is not None and callee not in _YIELDS


def _not_started(coro: Any) -> bool:
    try:
        return inspect.getcoroutinestate(coro) == inspect.CORO_CREATED
    except (AttributeError, TypeError):  # a compiled coroutine (uvloop's): not the program's
        return False


def _living_parent(info: TaskInfo) -> TaskInfo | None:
    """The task's siblings are its parent's children; once the parent has finished, its
    grandparent's (a loader that spawned its registration and returned: the registrations of
    all loaders are siblings then)."""
    parent = info.parent
    while parent is not None and parent.done:
        parent = parent.parent
    return parent


def _in_order(entries: list[Held]) -> list[Held]:
    """Parents before children (a parent sees a child's end before the next sibling runs), then
    by rank, then in the order they were held."""
    return sorted(entries, key=lambda e: (e.info.depth, e.info.rank, e.seq))


def _cancelling(info: TaskInfo) -> bool:
    task = info.task
    return task is not None and task.cancelling() > 0


def _cancelled(handle: Any) -> bool:
    return handle is not None and bool(handle.cancelled())


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


_TOP: Final = 0x10FFFF  # the highest code point


def _descending(text: str) -> str:
    """A sort key that orders strings in reverse (a prefix after the strings it starts): each
    character mirrored, then the highest code point as an end mark. A string, so that comparing
    two keys stays one comparison in C (ranks are compared at every pass)."""
    return "".join(
        [chr(_TOP - 1 - ord(character)) for character in text if ord(character) < _TOP]
    ) + chr(_TOP)
