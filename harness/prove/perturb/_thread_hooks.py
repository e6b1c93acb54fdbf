"""The hooks that route a run's thread jobs through its `ThreadGate`, and undo themselves.

For the length of a run: `ThreadPoolExecutor.submit` queues the job (a one-worker pool is left
alone); `shutdown` starts what is queued first; a `Future`'s `result`, `exception` and `done`,
`concurrent.futures.wait` and `as_completed` (through `_create_and_install_waiters`), and
`Thread.join` start the queued burst before they wait; anyio's `to_thread.run_sync` makes its
job wait in its worker for its turn; `Thread.start` of a thread running the program's own code
makes it a job; `time.sleep`, a socket's `recv` and a helper process's `communicate` or `wait`
in a job are latencies the gate orders; `Condition.wait` (events, queues, barriers, futures) in
a job marks it as waiting for the program. A timed wait the
program makes (`Future.result(timeout=...)`, `wait(timeout=...)`, `Barrier(timeout=...)`,
`Queue.get(timeout=...)`) is a deadline: no hold lasts past the middle of its window.

The natural run only records the order in which jobs finished.
"""

from __future__ import annotations

import asyncio
import functools
import os
import queue
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from concurrent.futures import _base
from contextlib import contextmanager
from types import FrameType
from typing import Any

from harness.prove.perturb._journal import Journal, label_of_call
from harness.prove.perturb._plan import THREADS
from harness.prove.perturb._program import is_program_file
from harness.prove.perturb._run import RunState
from harness.prove.perturb._threads import CURRENT_JOB, Job, State, ThreadGate

__all__ = ["perturbed_threads"]

_ORIGINAL_SUBMIT = futures.ThreadPoolExecutor.submit
_ORIGINAL_SHUTDOWN = futures.ThreadPoolExecutor.shutdown
_ORIGINAL_RESULT = futures.Future.result
_ORIGINAL_EXCEPTION = futures.Future.exception
_ORIGINAL_DONE = futures.Future.done
_ORIGINAL_WAITERS = _base._create_and_install_waiters  # type: ignore[attr-defined]
_ORIGINAL_START = threading.Thread.start
_ORIGINAL_JOIN = threading.Thread.join
_ORIGINAL_SLEEP = time.sleep
_ORIGINAL_COND_WAIT = threading.Condition.wait

# Frames of these modules are how the program waits, not where it waits from.
_WAITING_MACHINERY = (
    *(os.path.normcase(os.path.dirname(m.__file__ or "")) + os.sep for m in (futures, asyncio)),
    os.path.normcase(threading.__file__ or ""),
    os.path.normcase(queue.__file__ or ""),
)


def _label(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    target: Any = fn
    shown = args
    if isinstance(fn, functools.partial):
        target, shown = fn.func, (*fn.args, *args)
    if getattr(target, "__name__", None) == "run" and shown and callable(shown[0]):
        target, shown = shown[0], shown[1:]  # asyncio.to_thread: Context.run(func, *args)
    code = getattr(target, "__code__", None)
    name = getattr(target, "__name__", type(target).__name__)
    if code is None:
        return str(name)
    values = dict(zip(code.co_varnames[: code.co_argcount], shown, strict=False)) | kwargs
    return label_of_call(name, code.co_varnames[: code.co_argcount], values)


def _journaled(call: Callable[[], Any], label: str, journal: Journal) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return call()
        finally:
            journal.finished(THREADS, label)

    return run


def _program_thread(thread: threading.Thread) -> Callable[..., Any] | None:
    """The code a thread runs, when it is the program's (not a pool's worker, a timer, a loop)."""
    target: Any = getattr(thread, "_target", None)
    if target is None:
        run = type(thread).run
        target = None if run is threading.Thread.run else run
    code_of: Any = target.func if isinstance(target, functools.partial) else target
    code = getattr(getattr(code_of, "__func__", code_of), "__code__", None)
    return target if code is not None and is_program_file(code.co_filename) else None


def _called_by_program() -> bool:
    """Whether the program itself is waiting (the first frame outside threading, queue,
    concurrent.futures and asyncio is the program's)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        filename = os.path.normcase(frame.f_code.co_filename)
        if not filename.startswith(_WAITING_MACHINERY) and filename != __file__:
            return is_program_file(frame.f_code.co_filename)
        frame = frame.f_back
    return False


def _latency(original: Callable[..., Any]) -> Callable[..., Any]:
    """`original`, a blocking call that waits for the world: in a job, a latency (see
    `ThreadGate.waited`)."""

    def waits(*args: Any, **kwargs: Any) -> Any:
        job = CURRENT_JOB.job
        if job is None or job.state is not State.RUNNING:
            return original(*args, **kwargs)  # not a job, or inside another latency
        return job.gate.waited(job, lambda: original(*args, **kwargs))

    return waits


# Blocking reads in a job: sockets (so `http.client`, `requests`, httpx's sync client, TLS) and
# helper processes (`subprocess.run` waits through `communicate` and `wait`).
_LATENCIES: list[tuple[Any, str, Any]] = [
    (owner, name, _latency(getattr(owner, name)))
    for owner, names in (
        (socket.socket, ("recv", "recv_into", "recvfrom", "recvfrom_into")),
        (ssl.SSLSocket, ("recv", "recv_into", "read")),
        (subprocess.Popen, ("communicate", "wait")),
    )
    for name in names
]
_MISSING = object()


@contextmanager
def _patched(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    saved = [(owner, name, owner.__dict__.get(name, _MISSING)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in saved:
            if value is _MISSING:
                delattr(owner, name)  # it was inherited (from `_socket.socket`)
            else:
                setattr(owner, name, value)


@contextmanager
def perturbed_threads(run: RunState) -> Iterator[ThreadGate]:
    """Thread jobs of the block run as `run` says for threads (see the module doc)."""
    gate = ThreadGate(run, _ORIGINAL_SUBMIT)
    journal = run.journal

    def submit(
        self: futures.ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> futures.Future[Any]:
        label = _label(fn, args, kwargs)
        job = _journaled(functools.partial(fn, *args, **kwargs), label, journal)
        if not gate.holds or getattr(self, "_max_workers", 2) == 1:
            return _ORIGINAL_SUBMIT(self, job)  # one worker: a queue, not a race
        if getattr(self, "_shutdown", False):
            raise RuntimeError("cannot schedule new futures after shutdown")
        outer: futures.Future[Any] = futures.Future()
        gate.queue(Job(gate, label, job, outer, self))
        return outer

    def shutdown(
        self: futures.ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False
    ) -> None:
        if cancel_futures:
            gate.cancel(self)
        gate.flush()
        _ORIGINAL_SHUTDOWN(self, wait=wait, cancel_futures=cancel_futures)

    def flushing(original: Callable[..., Any]) -> Callable[..., Any]:
        def waits(*args: Any, **kwargs: Any) -> Any:
            gate.flush()
            return original(*args, **kwargs)

        return waits

    def start(self: threading.Thread) -> None:
        target = _program_thread(self)
        if target is not None and not getattr(self, "_harness_job", False):
            args = getattr(self, "_args", ())
            label = _label(target, tuple(args), dict(getattr(self, "_kwargs", {})))
            call = _journaled(self.run, label, journal)
            self._harness_job = True  # type: ignore[attr-defined]
            if gate.holds:
                job = gate.queue(Job(gate, label, call, state=State.SUBMITTED))
                self.run = functools.partial(gate.execute, job)  # type: ignore[method-assign]
            else:
                self.run = call  # type: ignore[method-assign]
        _ORIGINAL_START(self)

    def sleep(seconds: float) -> None:
        job = CURRENT_JOB.job
        if job is None or job.state is not State.RUNNING:
            _ORIGINAL_SLEEP(seconds)
            return
        job.gate.waited(job, functools.partial(_ORIGINAL_SLEEP, seconds), sleep=True)

    def wait(self: threading.Condition, timeout: float | None = None) -> bool:
        job = CURRENT_JOB.job
        deadline = None
        if timeout is not None and (job is not None or _called_by_program()):
            now = time.monotonic()
            deadline = run.pressure.add(now, now + timeout)
        if job is not None:
            job.gate.parked(job, True)
        try:
            return _ORIGINAL_COND_WAIT(self, timeout)
        finally:
            if job is not None:
                job.gate.parked(job, False)
            if deadline is not None:
                run.pressure.remove(deadline)

    patches: list[tuple[Any, str, Any]] = [
        (futures.ThreadPoolExecutor, "submit", submit),
        (futures.ThreadPoolExecutor, "shutdown", shutdown),
        (futures.Future, "result", flushing(_ORIGINAL_RESULT)),
        (futures.Future, "exception", flushing(_ORIGINAL_EXCEPTION)),
        (futures.Future, "done", flushing(_ORIGINAL_DONE)),
        (_base, "_create_and_install_waiters", flushing(_ORIGINAL_WAITERS)),
        (threading.Thread, "start", start),
        (threading.Thread, "join", flushing(_ORIGINAL_JOIN)),
        (threading.Condition, "wait", wait),
    ]
    if gate.holds:
        patches += [(time, "sleep", sleep), *_LATENCIES, *_anyio_in_place(gate)]
        run.flush_threads = gate.flush
    with _patched(patches):
        try:
            yield gate
        finally:
            run.flush_threads = None
            gate.close()  # what the build queued and never waited for still runs, unwaited


def _anyio_in_place(gate: ThreadGate) -> list[tuple[Any, str, Any]]:
    """anyio's `to_thread.run_sync` (asyncio backend): its job waits in its worker for its turn,
    and the task awaiting it is busy meanwhile."""
    backend = sys.modules.get("anyio._backends._asyncio")
    kind = getattr(backend, "AsyncIOBackend", None)
    original = getattr(kind, "run_sync_in_worker_thread", None)
    if kind is None or original is None:
        return []

    async def run_sync_in_worker_thread(
        cls: Any, func: Callable[..., Any], args: tuple[Any, ...], *rest: Any, **options: Any
    ) -> Any:
        label = _label(func, args, {})
        job = gate.queue(Job(gate, label, _journaled(lambda: func(*args), label, gate.run.journal)))
        loop: Any = asyncio.get_running_loop()
        busy: asyncio.Future[None] = loop.create_future()
        if hasattr(loop, "_harness"):  # a loop of ours: the task is busy, the burst ends soon
            loop._harness().scheduler.executor_job(busy)
            loop._harness_flush_soon(gate.flush)
        else:
            loop.call_soon(gate.flush)
        try:
            return await original(functools.partial(gate.execute, job), (), *rest, **options)
        finally:
            busy.set_result(None)

    return [(kind, "run_sync_in_worker_thread", classmethod(run_sync_in_worker_thread))]
