"""Thread scheduling: the order in which `concurrent.futures` thread pool jobs run and finish.

During a perturbed run, `ThreadPoolExecutor.submit` (and so `map`, `asyncio.to_thread` and
`run_in_executor`, which submit through it) queues the job instead of starting it. The queued
jobs of a burst start when the submitting code waits for one (`Future.result`, `exception`,
`concurrent.futures.wait`, `as_completed`, `shutdown`, leaving a `with` block), when the event
loop of the run goes idle, or after a short grace period. They then run one at a time in the
run's order (forward: submission order; reversed; or seeded random), so both a consumer reading
results `as_completed` and a job registering tools as a side effect see that order. A job that
waits for a later one (a dependency between jobs) does not deadlock: after a guard time the next
job starts anyway.

The natural run submits as usual and only records the order in which jobs finished.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import _base
from contextlib import contextmanager
from dataclasses import dataclass
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
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(GRACE_S, self.flush)
            self._timer.daemon = True
            self._timer.start()
        return outer

    def flush(self) -> None:
        """Start the queued burst in the run's order, on a dispatcher thread."""
        with self._lock:
            jobs, self._queued = self._queued, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not jobs:
                return
            ordered = self.plan.arrange(THREADS, jobs)
            dispatcher = threading.Thread(
                target=self._dispatch, args=(ordered,), name="harness-thread-order", daemon=True
            )
            self._dispatchers.append(dispatcher)
            dispatcher.start()

    def settle(self) -> None:
        """Flush, and wait until every queued job has been handed to its executor."""
        self.flush()
        with self._lock:
            dispatchers = list(self._dispatchers)
        for dispatcher in dispatchers:
            if dispatcher is not threading.current_thread():
                dispatcher.join()

    def _dispatch(self, jobs: list[_Job]) -> None:
        for job in jobs:
            if not job.outer.set_running_or_notify_cancel():
                continue  # cancelled while queued
            try:
                inner = self._submit(job.executor, job.fn)
            except BaseException as error:  # the executor was shut down meanwhile
                job.outer.set_exception(error)
                continue
            inner.add_done_callback(functools.partial(_transfer, outer=job.outer))
            _ORIGINAL_WAIT([inner], timeout=GUARD_S)


def _transfer(inner: futures.Future[Any], *, outer: futures.Future[Any]) -> None:
    error = inner.exception()
    if error is not None:
        outer.set_exception(error)
    else:
        outer.set_result(inner.result())


def _journaled(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], journal: Journal
) -> Callable[[], Any]:
    target = fn.func if isinstance(fn, functools.partial) else fn
    code = getattr(target, "__code__", None)
    name = getattr(target, "__name__", type(target).__name__)
    if code is not None:
        values = dict(zip(code.co_varnames[: code.co_argcount], args, strict=False)) | kwargs
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
