"""Whose work sends a request: the capture session of the test that started it.

A test's traffic may be sent by work it started: asyncio tasks, threads, pool jobs. Work that
outlives its test (a thread never joined) must not be captured by the test running when it
sends. So the session that intercepts is also the *owner* of the work started under it:

- the owner is a context variable, set while a session intercepts; asyncio tasks (and
  `asyncio.to_thread`, `call_soon_threadsafe`, anyio's worker threads) copy the context, so they
  carry it;
- `threading.Thread.start` marks the new thread with its starter's owner (thread ancestry: a
  thread started by such a thread has the same owner), except a pool's worker threads
  (`concurrent.futures`, anyio's), which serve every test after the one that started them;
- `ThreadPoolExecutor.submit` (and so `map`, `run_in_executor`) runs the job under the owner of
  the code that submitted it, not of the test whose submission started the pool's threads.

`owner()` is the owner of the code running now, or None when no test started it (a thread
started at import or by a session fixture): such work is captured by the session intercepting
when it sends, as before. The hooks are installed with the interception and removed with it
(`install`, `uninstall`); they only add the mark, never change what the work does.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import thread as _futures_thread
from typing import Any, Final

__all__ = ["OWNER", "LateRequestWarning", "install", "owner", "uninstall"]

OWNER: Final[contextvars.ContextVar[object | None]] = contextvars.ContextVar(
    "harness_capture_owner"
)
_MARK: Final = "_harness_capture_owner"
_originals: dict[tuple[type[Any], str], Any] = {}


class LateRequestWarning(UserWarning):
    """Work a test started sent a request after the test ended: the request was refused, and
    not captured by the test running then."""


def owner() -> object | None:
    """The session whose test started the work running now (None: no test did)."""
    try:
        return OWNER.get()
    except LookupError:  # a thread of its own: its starter's owner
        return getattr(threading.current_thread(), _MARK, None)


def install() -> None:
    if _originals:
        return
    start = threading.Thread.__dict__["start"]
    submit = futures.ThreadPoolExecutor.__dict__["submit"]
    _originals[(threading.Thread, "start")] = start
    _originals[(futures.ThreadPoolExecutor, "submit")] = submit
    threading.Thread.start = _marking(start)  # type: ignore[method-assign]
    futures.ThreadPoolExecutor.submit = _submitting(submit)  # type: ignore[method-assign]


def uninstall() -> None:
    for (kind, name), original in _originals.items():
        setattr(kind, name, original)
    _originals.clear()


def _marking(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def start(self: threading.Thread, *args: Any, **kwargs: Any) -> Any:
        work = owner()
        if work is not None and _MARK not in self.__dict__ and not _pooled(self):
            self.__dict__[_MARK] = work
        return original(self, *args, **kwargs)

    return start


def _pooled(thread: threading.Thread) -> bool:
    """A pool's worker thread: its jobs carry their own owner (`_as`, or the context anyio
    copies), never the thread's."""
    if getattr(thread, "_target", None) is _futures_thread._worker:
        return True
    return type(thread).__module__.partition(".")[0] == "anyio"


def _submitting(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def submit(self: futures.ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return original(self, _as(owner(), fn), *args, **kwargs)

    return submit


def _as(work: object | None, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, run with `work` as the owner (reset after, for the pool thread's next job)."""

    @functools.wraps(fn)
    def job(*args: Any, **kwargs: Any) -> Any:
        token = OWNER.set(work)
        try:
            return fn(*args, **kwargs)
        finally:
            OWNER.reset(token)

    return job
