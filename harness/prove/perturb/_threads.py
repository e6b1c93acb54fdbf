"""Thread scheduling: the order in which thread jobs start, wake and finish.

A job is a call the program hands a thread: `ThreadPoolExecutor.submit` (and so `map`,
`asyncio.to_thread`, `run_in_executor`), anyio's `to_thread.run_sync`, or a `threading.Thread`
the program starts itself. During a perturbed run the jobs of a burst are queued, then ordered as
the run says (forward: submission order; reversed; seeded random), and run concurrently, as many
at once as the pool allows, with three gates that make them *finish* in that order:

- **start**: a job starts once every job before it has started and is blocked (asleep, waiting
  on a lock, an event, a queue, a barrier) or has run for a few milliseconds;
- **wake**: a job's latency (`time.sleep`, a blocking read from a socket, `requests` or
  `http.client` included, a helper process's `communicate` or `wait`) ends once every job before
  it is done or waiting for the program;
- **publish**: a pool job's result reaches its future once every job before it has published.

So a pool's concurrency is kept (eight 40 ms jobs still take about 40 ms, a barrier's parties
all arrive) and `as_completed`, a registry appended to from the jobs, and threads appending to
a shared list all see the run's order. A job waiting for the program (`Condition.wait`, and so
events, queues, barriers and futures) holds nothing back; one that keeps sleeping without
finishing (a poll) stops holding the others back after a few sleeps. Every gate gives way at the
run's `hold_until` (its budget, or the middle of a pending deadline's window; see `_run`).

A burst starts when the submitting code waits for a job (`Future.result`, `exception`, `done`,
`concurrent.futures.wait`, `as_completed`, `Thread.join`, `shutdown`), when the event loop that
submitted it finishes its iteration, or 100 ms after the last submission. A pool with one worker
is a queue, not a race: it is left alone. The natural run submits as usual and only records the
order in which jobs finished. The hooks that route jobs here live in `_thread_hooks`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from harness.prove.perturb._plan import THREADS
from harness.prove.perturb._run import RunState

__all__ = ["CURRENT_JOB", "Job", "ThreadGate"]

GRACE_S: Final = 0.1  # a burst of submissions ends after this long without a new one
START_GUARD_S: Final = 0.005  # a job running this long without blocking lets the next start
SPIN_SLEEPS: Final = 8  # sleeps after which a job counts as polling
POLL_S: Final = 0.01  # how often a waiting gate looks at the clock

_ORIGINAL_COND_WAIT = threading.Condition.wait


class State(Enum):
    QUEUED = "queued"  # anyio's job, not yet in a worker (the limiter may hold it): holds nothing
    SUBMITTED = "submitted"  # on its way to a thread of its own or a pool's
    WAITING = "waiting"  # in its thread, waiting to start
    RUNNING = "running"
    SLEEPING = "sleeping"  # in time.sleep: a latency, still working
    PARKED = "parked"  # waiting for the program: holds nothing back
    DONE = "done"  # returned, its result not yet published
    PUBLISHED = "published"


_HOLD_START = frozenset({State.SUBMITTED, State.WAITING})
_HOLD_WAKE = frozenset({State.SUBMITTED, State.WAITING, State.RUNNING, State.SLEEPING})
_HOLD_PUBLISH = frozenset(
    {State.SUBMITTED, State.WAITING, State.RUNNING, State.SLEEPING, State.DONE}
)


@dataclass(eq=False)
class Job:
    gate: ThreadGate
    label: str
    fn: Callable[[], Any]
    outer: futures.Future[Any] | None = None  # a pool job's future, as the program holds it
    executor: futures.ThreadPoolExecutor | None = None
    state: State = State.QUEUED
    burst: list[Job] | None = None
    rank: int = 0
    ran_since: float = 0.0
    sleeps: int = 0
    line: _Line | None = None  # a pool job: the line its dispatchers take it from
    escalated: bool = False  # it blocked, and another dispatcher took the next job
    waiting_for: frozenset[State] | None = None  # the states of earlier jobs it waits out
    wake: threading.Condition | None = None  # notified when it may go on (see `_wake`)


@dataclass(eq=False)
class _Line:
    """The pool jobs of one burst for one executor, taken in order by dispatchers: a dispatcher
    runs them one after another, and another one starts when the job it runs blocks (sleeps,
    waits for the program or for a gate) or runs longer than `START_GUARD_S`. So trivial jobs
    run back to back in one worker, and jobs that wait overlap as the pool allows."""

    executor: futures.ThreadPoolExecutor
    jobs: deque[Job] = field(default_factory=deque)


class _Local(threading.local):
    job: Job | None = None


CURRENT_JOB: Final = _Local()  # the job the calling thread runs, if any


@dataclass
class ThreadGate:
    """Queues thread jobs and lets them start, wake and finish in the run's order."""

    run: RunState
    submit_to: Callable[..., futures.Future[Any]]  # the real ThreadPoolExecutor.submit
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _cond: threading.Condition = field(init=False)  # the grace watcher waits on it
    _waiters: set[Job] = field(default_factory=set)  # jobs waiting at a gate
    _queued: list[Job] = field(default_factory=list)
    _last_submit: float = 0.0
    _watcher: threading.Thread | None = None
    _closed: bool = False
    _idle: bool = False  # the grace watcher waits for work, with no time to watch
    _lines: list[_Line] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._cond = threading.Condition(self._lock)
        self.run.pressure.listen(self._changed)

    @property
    def holds(self) -> bool:
        return self.run.plan.perturbs(THREADS)

    def _changed(self) -> None:
        with self._cond:
            self._cond.notify_all()
            for job in self._waiters:
                if job.wake is not None:
                    job.wake.notify()

    # -- queueing -------------------------------------------------------------------------------

    def queue(self, job: Job) -> Job:
        with self._cond:
            self._queued.append(job)
            self._last_submit = time.monotonic()
            if self._watcher is None:
                self._watcher = threading.Thread(
                    target=self._watch, name="harness-thread-grace", daemon=True
                )
                self._watcher.start()
            if self._idle:  # else it looks again in time (a wake-up per job costs the GIL)
                self._cond.notify_all()
        return job

    def _watch(self) -> None:
        """Start a burst nobody waited for once submissions have stopped for `GRACE_S`, and
        another dispatcher when a job has run past the guard (one thread for the run: a timer
        per burst would cost a thread start per job)."""
        while True:
            with self._cond:
                self._lines = [line for line in self._lines if line.jobs]
                while not self._closed and not self._queued and not self._lines:
                    self._idle = True
                    _ORIGINAL_COND_WAIT(self._cond)
                    self._idle = False
                if self._closed:
                    return
                stuck = self._running_long()
                quiet = time.monotonic() - self._last_submit
                due = bool(self._queued) and quiet >= GRACE_S
                if not stuck and not due:
                    wait = GRACE_S - quiet if self._queued else START_GUARD_S
                    if self._lines:
                        wait = min(wait, START_GUARD_S)
                    _ORIGINAL_COND_WAIT(self._cond, wait)
                    continue
            for job in stuck:
                self._escalate(job)
            if due:
                self.flush()

    def _running_long(self) -> list[Job]:
        """Dispatched jobs that have run past the guard while their line still has jobs."""
        now = time.monotonic()
        found = []
        for line in self._lines:
            for job in line.jobs[0].burst or [] if line.jobs else []:
                long = job.state is State.RUNNING and now - job.ran_since >= START_GUARD_S
                if job.line is line and long and not job.escalated:
                    found.append(job)
        return found

    def close(self) -> None:
        """Flush what is left; the grace watcher ends."""
        self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def flush(self) -> None:
        """Order the queued burst as the run says and let it go."""
        if not self._queued:
            return  # nothing queued (a flush comes with every wait for a future: keep it cheap)
        with self._cond:
            jobs, self._queued = self._queued, []
            if not jobs:
                return
            burst = self.run.plan.arrange(THREADS, jobs)
            lines: dict[int, _Line] = {}
            for rank, job in enumerate(burst):
                job.burst, job.rank = burst, rank
                if job.executor is not None:
                    job.state = State.SUBMITTED
                    job.line = lines.setdefault(id(job.executor), _Line(job.executor))
                    job.line.jobs.append(job)
            self._lines += lines.values()
            if any(len(line.jobs) > 1 for line in lines.values()):
                self._cond.notify_all()  # a line of several jobs: watch for one running long
            self._wake(burst)
        for line in lines.values():
            self._dispatcher(line)

    def _dispatcher(self, line: _Line) -> None:
        """One more dispatcher for `line`: in its pool, or in a thread of ours once the pool is
        shut down (a job waiting for a later one must not wait forever)."""
        try:
            self.submit_to(line.executor, self._dispatch, line)
        except RuntimeError:
            threading.Thread(
                target=self._dispatch, args=(line,), name="harness-thread-order", daemon=True
            ).start()

    def _dispatch(self, line: _Line) -> None:
        while True:
            with self._cond:
                if not line.jobs:
                    return
                job = line.jobs.popleft()
            self.execute(job)

    def _escalate(self, job: Job) -> None:
        """`job` blocks: another dispatcher takes the next job of its line."""
        line = job.line
        with self._cond:
            if line is None or job.escalated or not line.jobs:
                return
            job.escalated = True
        self._dispatcher(line)

    def cancel(self, executor: futures.ThreadPoolExecutor) -> None:
        """`shutdown(cancel_futures=True)`: the executor's jobs not yet started never run."""
        with self._cond:
            dropped = [job for job in self._queued if job.executor is executor]
            for line in self._lines:
                if line.executor is executor:
                    dropped += line.jobs
                    line.jobs.clear()
            for job in dropped:
                if job.outer is not None:
                    job.outer.cancel()
                job.state = State.PUBLISHED
            self._cond.notify_all()
            for burst in {id(job.burst): job.burst for job in dropped}.values():
                self._wake(burst)

    # -- a job's life, in the thread that runs it -----------------------------------------------

    def execute(self, job: Job) -> Any:
        """Run `job` here, through its gates; a pool job's outcome goes to its future, any other
        job's is returned (or raised)."""
        CURRENT_JOB.job = job
        try:
            self._set(job, State.WAITING)
            if job.line is None:  # a pool job's dispatcher took it in turn already
                self._wait(job, _HOLD_START, starting=True)
            if job.outer is not None and not job.outer.set_running_or_notify_cancel():
                self._set(job, State.PUBLISHED)
                return None
            self._set(job, State.RUNNING)
            try:
                result, error = job.fn(), None
            except BaseException as raised:
                result, error = None, raised
            self._set(job, State.DONE)
            self._wait(job, _HOLD_PUBLISH)
            if job.outer is not None:
                if error is not None:
                    job.outer.set_exception(error)
                else:
                    job.outer.set_result(result)
                error = None
            self._set(job, State.PUBLISHED)
            if error is not None:
                raise error
            return result
        finally:
            CURRENT_JOB.job = None

    def waited(self, job: Job, call: Callable[[], Any], *, sleep: bool = False) -> Any:
        """A latency in a job (`time.sleep`, a blocking read from a socket or a process): it
        keeps the job busy; waking waits for the jobs before it. Sleeps are counted, as a job
        that keeps sleeping is polling."""
        if sleep:
            with self._cond:
                job.sleeps += 1
        self._set(job, State.SLEEPING)
        self._escalate(job)
        try:
            return call()
        finally:
            self._wait(job, _HOLD_WAKE)
            self._set(job, State.RUNNING)

    def parked(self, job: Job, parked: bool) -> None:
        """A job waits for the program (or is back from waiting)."""
        if job.state in (State.RUNNING, State.PARKED):
            self._set(job, State.PARKED if parked else State.RUNNING)
            if parked:
                self._escalate(job)

    def _may_start(self, job: Job) -> bool:
        return job.burst is not None and self._clear(job, _HOLD_START, starting=True)

    def _set(self, job: Job, state: State) -> None:
        with self._cond:
            job.state = state
            if state is State.RUNNING:
                job.ran_since = time.monotonic()
            self._wake(job.burst)

    def _wake(self, burst: list[Job] | None) -> None:
        """Notify the jobs of `burst` waiting at a gate that every job before them has cleared
        (what `_clear` asks, for all of them in one walk), and only those: a state change wakes
        the jobs it lets go, not every thread waiting (a hundred anyio workers would each wake,
        take the lock and walk the burst at every change). A job that must wait out a time (a
        job before it started a moment ago, the run's hold ending) looks again after `POLL_S`."""
        if not burst or not self._waiters:
            return
        now = time.monotonic()
        start = wake = publish = True
        for job in burst:
            if job.waiting_for is not None and job.wake is not None:
                if job.waiting_for is _HOLD_START:
                    clear = start
                else:
                    clear = wake if job.waiting_for is _HOLD_WAKE else publish
                if clear:
                    job.wake.notify()
            if job.sleeps >= SPIN_SLEEPS or job.state not in _HOLD_PUBLISH:
                continue
            publish = False
            if job.state in _HOLD_WAKE:
                wake = False
                recent = job.state is State.RUNNING and now - job.ran_since < START_GUARD_S
                if job.state in _HOLD_START or recent:
                    break  # every later job waits at every gate

    def _clear(self, job: Job, holding: frozenset[State], starting: bool = False) -> bool:
        """Whether no job before `job` in its burst holds it back (`holding`: the states that
        do; a job just started, or polling, does not)."""
        now = time.monotonic()
        for before in (job.burst or [])[: job.rank]:
            if before.sleeps >= SPIN_SLEEPS:
                continue
            if before.state in holding:
                return False
            if (
                starting
                and before.state is State.RUNNING
                and now - before.ran_since < START_GUARD_S
            ):
                return False
        return True

    def _wait(self, job: Job, holding: frozenset[State], *, starting: bool = False) -> None:
        """Wait until no job before `job` is in a state of `holding` (a start also waits for a
        burst, and for jobs before it to have run a moment), or the run's hold ends."""

        def ready() -> bool:
            return (job.burst is not None or not starting) and self._clear(job, holding, starting)

        with self._cond:
            if ready():
                return
        self._escalate(job)
        with self._cond:
            if job.wake is None:
                job.wake = threading.Condition(self._lock)
            job.waiting_for = holding
            self._waiters.add(job)
            try:
                while not ready():
                    left = self.run.hold_until() - time.monotonic()
                    if left <= 0:
                        if job.burst is None:  # the burst was never flushed: go alone
                            job.burst, job.rank = [job], 0
                        return
                    _ORIGINAL_COND_WAIT(job.wake, min(left, POLL_S))
            finally:
                job.waiting_for = None
                self._waiters.discard(job)
