"""Thread scheduling: the order in which `concurrent.futures` thread pool jobs run and finish.

During a perturbed run, `ThreadPoolExecutor.submit` (and so `map`, `asyncio.to_thread` and
`run_in_executor`, which submit through it) queues the job instead of starting it. The queued
jobs of a burst start when the submitting code waits for one (`Future.result`, `exception`,
`concurrent.futures.wait`, `as_completed`, `shutdown`, leaving a `with` block), when the event
loop of the run goes idle, or after a short grace period. They then run one at a time in the
run's order (forward: submission order; reversed; or seeded random), on a dispatcher thread of
the proof (through the executor when it has an `initializer` that sets its worker threads up),
so both a consumer reading results `as_completed` and a job registering tools as a side effect
see that order. A job that waits for a later one (a dependency between jobs) does not deadlock:
after a guard time the next job starts anyway, on another dispatcher.

The natural run submits as usual and only records the order in which jobs finished.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import _base
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from harness.perturb.journal import Journal, label_of_call
from harness.perturb.plan import THREADS, RunPlan

__all__ = ["ThreadGate", "perturbed_threads"]

GRACE_S: Final = 0.02  # a burst of submissions ends after this long without a new one
GUARD_S: Final = 1.0  # a job that takes longer lets the next one start (no deadlock)


@dataclass
class _Job:
    executor: futures.ThreadPoolExecutor
    fn: Callable[[], Any]
    outer: futures.Future[Any]


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
        self._dispatchers: list[threading.Thread] = []

    @property
    def holds(self) -> bool:
        return self.plan.perturbs(THREADS)

    def submit(
        self, executor: futures.ThreadPoolExecutor, fn: Callable[[], Any]
    ) -> futures.Future[Any]:
        outer: futures.Future[Any] = futures.Future()
        with self._lock:
            self._queued.append(_Job(executor, fn, outer))
            self._last_submit = time.monotonic()
            if self._timer is None:
                self._arm(GRACE_S)
        return outer

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
        """Start the queued burst in the run's order, on a dispatcher thread."""
        with self._lock:
            jobs, self._queued = self._queued, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not jobs:
                return
            burst = _Burst(deque(self.plan.arrange(THREADS, jobs)), self._submit)
            self._start(burst)

    def _start(self, burst: _Burst) -> None:
        dispatcher = threading.Thread(
            target=burst.dispatch, name="harness-thread-order", daemon=True
        )
        with self._lock:
            self._dispatchers.append(dispatcher)
        dispatcher.start()
        if not burst.watched:
            burst.watched = True
            watchdog = threading.Thread(
                target=burst.watch, args=(self._start,), name="harness-thread-guard", daemon=True
            )
            watchdog.start()

    def settle(self) -> None:
        """Flush, and wait until every queued job has run."""
        self.flush()
        while True:
            with self._lock:
                waiting = [
                    d
                    for d in self._dispatchers
                    if d is not threading.current_thread() and d.is_alive()
                ]
            if not waiting:
                return
            for dispatcher in waiting:
                dispatcher.join()


@dataclass
class _Burst:
    """A burst of queued jobs, run one at a time in their order by a dispatcher thread.

    A watchdog starts one more dispatcher when a job has run longer than the guard: a job that
    waits for a later one (a dependency between jobs) must not hang the proof.
    """

    jobs: deque[_Job]
    submit: Callable[..., Any]
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: dict[int, float] = field(default_factory=dict)  # dispatcher -> job start time
    done: threading.Event = field(default_factory=threading.Event)
    watched: bool = False

    def next(self) -> _Job | None:
        with self.lock:
            while self.jobs:
                job = self.jobs.popleft()
                if job.outer.set_running_or_notify_cancel():
                    return job
            if not self.running:
                self.done.set()
            return None

    def dispatch(self) -> None:
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

    def watch(self, start: Callable[[_Burst], None]) -> None:
        escalated: set[float] = set()
        while not self.done.wait(GUARD_S / 4):
            with self.lock:
                stuck = [
                    began
                    for began in self.running.values()
                    if time.monotonic() - began > GUARD_S and began not in escalated
                ]
                pending = bool(self.jobs)
            if stuck and pending:
                escalated.update(stuck)
                start(self)

    def run(self, job: _Job) -> None:
        """Run `job` here, or through its executor when that sets its worker threads up."""
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
_ORIGINAL_WAITERS = _base._create_and_install_waiters  # type: ignore[attr-defined]
_ORIGINAL_WAIT = _base.wait


@contextmanager
def perturbed_threads(plan: RunPlan, journal: Journal) -> Iterator[ThreadGate]:
    """Thread pool jobs submitted while the block runs are ordered as `plan` says."""
    gate = ThreadGate(plan, journal, _ORIGINAL_SUBMIT)

    def submit(
        self: futures.ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> futures.Future[Any]:
        job = _journaled(fn, args, kwargs, journal)
        if not gate.holds:
            return _ORIGINAL_SUBMIT(self, job)
        if getattr(self, "_shutdown", False):
            raise RuntimeError("cannot schedule new futures after shutdown")
        return gate.submit(self, job)

    def shutdown(
        self: futures.ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False
    ) -> None:
        gate.settle()
        _ORIGINAL_SHUTDOWN(self, wait=wait, cancel_futures=cancel_futures)

    def result(self: futures.Future[Any], timeout: float | None = None) -> Any:
        gate.flush()
        return _ORIGINAL_RESULT(self, timeout)

    def exception(self: futures.Future[Any], timeout: float | None = None) -> BaseException | None:
        gate.flush()
        return _ORIGINAL_EXCEPTION(self, timeout)

    def waiters(fs: Any, return_when: Any) -> Any:
        gate.flush()
        return _ORIGINAL_WAITERS(fs, return_when)

    patches: list[tuple[Any, str, Any]] = [
        (futures.ThreadPoolExecutor, "submit", submit),
        (futures.ThreadPoolExecutor, "shutdown", shutdown),
        (futures.Future, "result", result),
        (futures.Future, "exception", exception),
        (_base, "_create_and_install_waiters", waiters),
    ]
    saved = [
        (owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name))
        for owner, name, _ in patches
    ]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield gate
    finally:
        try:
            gate.settle()  # nothing the build queued is left behind, also when it raised
        finally:
            for owner, name, value in saved:
                setattr(owner, name, value)
