"""Whose code is running: the program's own, or a library's, and what to call it in a report.

A proof orders the program's own tasks and threads, and names them in a cause. What a library
runs inside them is no race of the program's, and its names mean nothing to the user: an SDK's
reader task, anyio's `_run_coro` wrapper around a spawned coroutine, asyncio's executor worker.
Code is a library's when it lives in the standard library, in an installed package
(`site-packages`) or in the harness; everything else (the project, its tests, a script) is the
program's.

A task is the program's when the code that spawned it is: the caller of `create_task`,
`gather`, `as_completed`, anyio's `start_soon` and the like. So `asyncio.as_completed(
[session.list_tools() for session in sessions])` written in the project makes program tasks of
an SDK's coroutines, while the tasks an SDK or asyncio's `communicate` starts for itself stay
theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import sysconfig
from collections.abc import Mapping
from types import CoroutineType, FrameType
from typing import Any, Final

from harness.prove.perturb._journal import label_of_call

__all__ = ["created_by_program", "is_program_file", "program_label"]

_HARNESS: Final = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _library_roots() -> tuple[str, ...]:
    roots = {_HARNESS}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            roots.add(sysconfig.get_paths()[name])
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        roots.add(os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}"))
    return tuple(os.path.normcase(os.path.abspath(root)) + os.sep for root in roots)


_LIBRARY_ROOTS: Final = _library_roots()
_PACKAGES: Final = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


@functools.lru_cache(maxsize=8192)
def is_program_file(filename: str) -> bool:
    """Whether code in `filename` is the program's own (not the standard library's, an installed
    package's, the harness's, or generated code's)."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.normcase(os.path.abspath(filename))
    if any(part in path for part in _PACKAGES):
        return False
    return not path.startswith(_LIBRARY_ROOTS)


# The functions that spawn tasks for their caller: the caller of these decides whose task it is.
# Any other library frame (asyncio's `communicate`, an SDK's client) spawns tasks of its own.
_SPAWNERS: Final = frozenset(
    {
        "create_task",
        "ensure_future",
        "_ensure_future",
        "gather",
        "as_completed",
        "wait",
        "wait_for",
        "shield",
        "run_coroutine_threadsafe",
        "start_soon",
        "start",
        "_spawn",
    }
)


def _spawning_roots() -> tuple[str, ...]:
    return _roots_with(getattr(sys.modules.get("anyio"), "__file__", None))


@functools.lru_cache(maxsize=4)
def _roots_with(anyio_file: str | None) -> tuple[str, ...]:
    roots = [os.path.dirname(asyncio.__file__)]
    if anyio_file:
        roots.append(os.path.dirname(anyio_file))
    return tuple(os.path.normcase(root) for root in roots)


# The packages whose spawning functions spawn for their caller, by the module a frame runs in.
_SPAWNING_PACKAGES: Final = frozenset({"asyncio", "anyio"})


def created_by_program(frame: FrameType | None) -> bool:
    """Whether the code that spawned a task is the program's: the first frame from `frame`
    outward that is neither the harness's nor a task-spawning function of asyncio or anyio
    (`create_task`, `gather`, `as_completed`, `start_soon`...).

    Whose a frame is, is read from the module it runs in (`__name__` in its globals) before its
    file: a code object's `co_filename` is where it was compiled, and a cached compile may name
    another place (pytest's assertion-rewrite cache of a plugin's package, written by a run in a
    virtual environment linked to these files, keeps that environment's path: anyio's
    `start_soon` then looked like nobody's spawner, and an anyio task group's tasks went
    unordered)."""
    spawning = _spawning_roots()
    while frame is not None:
        code = frame.f_code
        module = frame.f_globals.get("__name__")
        package = module.partition(".")[0] if isinstance(module, str) else ""
        normal = os.path.normcase(code.co_filename)
        harness = package == "harness" or normal.startswith(_HARNESS + os.sep)
        spawner = code.co_name in _SPAWNERS or code.co_name.startswith("<")  # a comprehension
        library = package in _SPAWNING_PACKAGES or normal.startswith(spawning)
        if not harness and not (spawner and library):
            return is_program_file(code.co_filename)
        frame = frame.f_back
    return False


def _coroutine_label(coro: CoroutineType[Any, Any, Any]) -> str:
    code = coro.cr_code
    frame = coro.cr_frame
    values: Mapping[str, Any] = frame.f_locals if frame is not None else {}
    return label_of_call(code.co_name, code.co_varnames[: code.co_argcount], values)


def _program_coroutine(coro: Any, depth: int = 0) -> CoroutineType[Any, Any, Any] | None:
    """`coro` if it is the program's, else a program coroutine it wraps (anyio's `_run_coro`
    holds the spawned coroutine in `self._coro`), looked for a level or two deep."""
    code = getattr(coro, "cr_code", None)
    if code is None:
        return None
    if is_program_file(code.co_filename):
        return coro  # type: ignore[no-any-return]
    frame = getattr(coro, "cr_frame", None)
    if frame is None or depth >= 2:
        return None
    for value in list(frame.f_locals.values()):
        for candidate in (value, getattr(value, "_coro", None), getattr(value, "coro", None)):
            if candidate is not None and candidate is not coro:
                found = _program_coroutine(candidate, depth + 1)
                if found is not None:
                    return found
    return None


def program_label(coro: Any) -> tuple[str, bool]:
    """The label a report gives a task running `coro` (`connect(fs)`), and whether the program's
    own coroutine was found in it (else the label is the library coroutine's name)."""
    found = _program_coroutine(coro)
    if found is not None:
        return _coroutine_label(found), True
    if getattr(coro, "cr_code", None) is not None:
        return _coroutine_label(coro), False
    return type(coro).__name__, False
