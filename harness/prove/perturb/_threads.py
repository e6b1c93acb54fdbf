"""Thread scheduling: the order in which thread pool jobs run and finish.

During a perturbed run, `ThreadPoolExecutor.submit` (and so `map`, `asyncio.to_thread` and
`run_in_executor`, which submit through it) queues the job instead of starting it, and so does
anyio's `to_thread.run_sync` (its job waits in its own worker thread for its turn). The queued
jobs of a burst start when the submitting code waits for one (`Future.result`, `exception`,
`done`, `concurrent.futures.wait`, `as_completed`, `shutdown`, leaving a `with` block), when the
event loop of the run goes idle, or 100 ms after the last submission. They then run one at a
time in the run's order (forward: submission order; reversed; or seeded random), on a dispatcher
thread of the proof (through the executor when it has an `initializer` that sets its worker
threads up), so both a consumer reading results `as_completed` and a job registering tools as a
side effect see that order. Bursts run one after another.

A job that takes longer than the guard (50 ms) lets the next one start on a second dispatcher:
jobs that wait for each other (a producer and a consumer, a barrier) do not deadlock, and slow
jobs overlap as they would. A pool with one worker is a queue, not a race: it is left alone.

The natural run submits as usual and only records the order in which jobs finished.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import _base
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from harness.prove.perturb._journal import Journal, label_of_call
from harness.prove.perturb._plan import THREADS, RunPlan

__all__ = ["ThreadGate", "perturbed_threads"]

GRACE_S: Final = 0.1  # a burst of submissions ends after this long without a new one
GUARD_S: Final = 0.05  # a job that takes longer lets the next one start (no deadlock)


@dataclass
class _Job:
    executor: futures.ThreadPoolExecutor | None  # None: the job runs in a thread of its own
    fn: Callable[[], Any]
    outer: futures.Future[Any]
    turn: threading.Event | None = None  # in-place jobs: set when it may start
    finished: threading.Event | None = None  # in-place jobs: set when it has run


class ThreadGate:
    """Queues thread pool jobs and runs each burst in the run's order (see the module doc)."""

    def __init__(self, plan: RunPlan, journal: Journal, submit: Callable[..., Any]) -> None:
        self.plan = plan
        self.journal = journal
        self._submit = submit  # the real ThreadPoolExecutor.submit
        self._lock = threading.RLock()
        self._queued: list[_Job] = []
        self._last_submit = 0.0
        self._timer: threading.Timer | None = None
        self._bursts: list[_Burst] = []

    @property
    def holds(self) -> bool:
        return self.plan.perturbs(THREADS)

    def submit(
        self, executor: futures.ThreadPoolExecutor, fn: Callable[[], Any]
    ) -> futures.Future[Any]:
        outer: futures.Future[Any] = futures.Future()
        self._queue(_Job(executor, fn, outer))
        return outer

    def in_place(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, made to wait for its turn in the thread that runs it (anyio's workers)."""
        job = _Job(None, fn, futures.Future(), threading.Event(), threading.Event())
        self._queue(job)

        def run(*args: Any) -> Any:
            assert job.turn is not None and job.finished is not None
            job.turn.wait()
            try:
                return fn(*args)
            finally:
                job.finished.set()

        return run

    def _queue(self, job: _Job) -> None:
        with self._lock:
            self._queued.append(job)
            self._last_submit = time.monotonic()
            if self._timer is None:
                self._arm(GRACE_S)

    def _arm(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._grace_over)
        self._timer.daemon = True
        self._timer.start()

    def _grace_over(self) -> None:
        with self._lock:
            self._timer = None
            quiet = time.monotonic() - self._last_submit
            if self._queued and quiet < GRACE_S:
                self._arm(GRACE_S - quiet)  # still submitting: the burst is not over
                return
        self.flush()

    def flush(self) -> None:
        """Start the queued burst in the run's order, after the bursts before it."""
        with self._lock:
            jobs, self._queued = self._queued, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not jobs:
                return
            previous = self._bursts[-1] if self._bursts else None
            burst = _Burst(deque(self.plan.arrange(THREADS, jobs)), self._submit, previous)
            self._bursts.append(burst)
        burst.start()

    def cancel(self, executor: futures.ThreadPoolExecutor) -> None:
        """`shutdown(cancel_futures=True)`: the executor's queued jobs never run."""
        with self._lock:
            for job in self._queued:
                if job.executor is executor:
                    job.outer.cancel()

    def settle(self) -> None:
        """Flush, and wait until every job queued so far has run."""
        self.flush()
        with self._lock:
            bursts = list(self._bursts)
        for burst in bursts:
            burst.done.wait()


@dataclass
class _Burst:
    """A burst of queued jobs, run one at a time in their order by a dispatcher thread.

    A watchdog starts one more dispatcher when a job has run longer than the guard: a job that
    waits for a later one (a dependency between jobs) must not hang the proof.
    """

    jobs: deque[_Job]
    submit: Callable[..., Any]
    previous: _Burst | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: dict[int, float] = field(default_factory=dict)  # dispatcher -> job start time
    done: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        for target, name in ((self.dispatch, "order"), (self.watch, "guard")):
            threading.Thread(target=target, name=f"harness-thread-{name}", daemon=True).start()

    def next(self) -> _Job | None:
        with self.lock:
            while self.jobs:
                job = self.jobs.popleft()
                if job.outer.set_running_or_notify_cancel():
                    return job
            return None

    def dispatch(self) -> None:
        if self.previous is not None:
            self.previous.done.wait(GUARD_S)  # bursts in turn; a stuck one lets the next go
        me = threading.get_ident()
        while (job := self.next()) is not None:
            with self.lock:
                self.running[me] = time.monotonic()
            try:
                self.run(job)
            finally:
                with self.lock:
                    del self.running[me]
        with self.lock:
            if not self.running and not self.jobs:
                self.done.set()

    def watch(self) -> None:
        escalated: set[float] = set()
        while not self.done.wait(GUARD_S / 2):
            with self.lock:
                stuck = [
                    began
                    for began in self.running.values()
                    if time.monotonic() - began > GUARD_S and began not in escalated
                ]
                pending = bool(self.jobs)
            if stuck and pending:
                escalated.update(stuck)
                threading.Thread(
                    target=self.dispatch, name="harness-thread-order", daemon=True
                ).start()

    def run(self, job: _Job) -> None:
        """Let `job` run: in its own thread (in place), here, or through its executor when that
        sets its worker threads up."""
        if job.turn is not None and job.finished is not None:
            job.outer.set_result(None)
            job.turn.set()
            job.finished.wait()
            return
        if getattr(job.executor, "_initializer", None) is None:
            try:
                result = job.fn()
            except BaseException as error:
                job.outer.set_exception(error)
            else:
                job.outer.set_result(result)
            return
        try:
            inner = self.submit(job.executor, job.fn)
        except BaseException as error:  # the executor was shut down meanwhile
            job.outer.set_exception(error)
            return
        inner.add_done_callback(functools.partial(_transfer, outer=job.outer))
        _ORIGINAL_WAIT([inner])


def _transfer(inner: futures.Future[Any], *, outer: futures.Future[Any]) -> None:
    error = inner.exception()
    if error is not None:
        outer.set_exception(error)
    else:
        outer.set_result(inner.result())


def _journaled(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], journal: Journal
) -> Callable[[], Any]:
    target: Any = fn
    shown = args
    if isinstance(fn, functools.partial):
        target, shown = fn.func, (*fn.args, *args)
    if getattr(target, "__name__", None) == "run" and shown and callable(shown[0]):
        target, shown = shown[0], shown[1:]  # asyncio.to_thread: Context.run(func, *args)
    code = getattr(target, "__code__", None)
    name = getattr(target, "__name__", type(target).__name__)
    if code is not None:
        values = dict(zip(code.co_varnames[: code.co_argcount], shown, strict=False)) | kwargs
        label = label_of_call(name, code.co_varnames[: code.co_argcount], values)
    else:
        label = name

    def run() -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            journal.finished(THREADS, label)

    return run


_ORIGINAL_SUBMIT = futures.ThreadPoolExecutor.submit
_ORIGINAL_SHUTDOWN = futures.ThreadPoolExecutor.shutdown
_ORIGINAL_RESULT = futures.Future.result
_ORIGINAL_EXCEPTION = futures.Future.exception
_ORIGINAL_DONE = futures.Future.done
_ORIGINAL_WAITERS = _base._create_and_install_waiters  # type: ignore[attr-defined]
_ORIGINAL_WAIT = _base.wait


@contextmanager
def _patched(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    saved = [
        (owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name))
        for owner, name, _ in patches
    ]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


@contextmanager
def perturbed_threads(plan: RunPlan, journal: Journal) -> Iterator[ThreadGate]:
    """Thread pool jobs submitted while the block runs are ordered as `plan` says."""
    gate = ThreadGate(plan, journal, _ORIGINAL_SUBMIT)

    def submit(
        self: futures.ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> futures.Future[Any]:
        job = _journaled(fn, args, kwargs, journal)
        if not gate.holds or getattr(self, "_max_workers", 2) == 1:
            return _ORIGINAL_SUBMIT(self, job)  # one worker: a queue, not a race
        if getattr(self, "_shutdown", False):
            raise RuntimeError("cannot schedule new futures after shutdown")
        return gate.submit(self, job)

    def shutdown(
        self: futures.ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False
    ) -> None:
        if cancel_futures:
            gate.cancel(self)
        if wait:
            gate.settle()
        else:
            gate.flush()
        _ORIGINAL_SHUTDOWN(self, wait=wait, cancel_futures=cancel_futures)

    def flushing(original: Callable[..., Any]) -> Callable[..., Any]:
        def waits(*args: Any, **kwargs: Any) -> Any:
            gate.flush()
            return original(*args, **kwargs)

        return waits

    patches: list[tuple[Any, str, Any]] = [
        (futures.ThreadPoolExecutor, "submit", submit),
        (futures.ThreadPoolExecutor, "shutdown", shutdown),
        (futures.Future, "result", flushing(_ORIGINAL_RESULT)),
        (futures.Future, "exception", flushing(_ORIGINAL_EXCEPTION)),
        (futures.Future, "done", flushing(_ORIGINAL_DONE)),
        (_base, "_create_and_install_waiters", flushing(_ORIGINAL_WAITERS)),
    ]
    with ExitStack() as stack:
        stack.enter_context(_patched(patches))
        if gate.holds:
            stack.enter_context(_anyio_in_place(gate, journal))
        try:
            yield gate
        finally:
            gate.flush()  # what the build queued and never waited for still runs, unwaited


@contextmanager
def _anyio_in_place(gate: ThreadGate, journal: Journal) -> Iterator[None]:
    """anyio's `to_thread.run_sync` (asyncio backend) waits for its turn in its worker."""
    backend = sys.modules.get("anyio._backends._asyncio")
    kind = getattr(backend, "AsyncIOBackend", None)
    original = getattr(kind, "run_sync_in_worker_thread", None)
    if kind is None or original is None:
        yield
        return

    async def run_sync_in_worker_thread(
        cls: Any, func: Callable[..., Any], args: tuple[Any, ...], *rest: Any, **options: Any
    ) -> Any:
        labelled = _journaled(func, args, {}, journal)  # calls func(*args), then journals
        return await original(gate.in_place(labelled), (), *rest, **options)

    with _patched([(kind, "run_sync_in_worker_thread", classmethod(run_sync_in_worker_thread))]):
        yield
