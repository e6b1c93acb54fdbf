"""Filesystem order: the order in which a folder's entries are listed, and entry points found.

A folder lists its entries in whatever order the filesystem keeps them (creation order, hash
order, inode order): another machine, checkout or filesystem lists them differently. During a
perturbed run `os.listdir` and `os.scandir` return their entries in the run's order (forward:
sorted by name), and so do `pathlib.Path.iterdir`, `Path.glob`, `glob.glob` and `glob.iglob`,
which list through them. Code that sorts what it lists is unaffected.

Installed distributions are found by walking `sys.path` in the same way, so the order of
`Distribution.discover()` (and so of `distributions()` and `entry_points()` across packages,
however they were imported) is perturbed too (forward: sorted by distribution name).

A module that bound `listdir` or `scandir` itself (`from os import listdir`) before the run keeps
the real one: the proof cannot see it.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.prove.perturb._journal import Journal
from harness.prove.perturb._plan import ENTRY_POINTS, FILESYSTEM, RunPlan

__all__ = ["perturbed_entry_points", "perturbed_listing"]


class _Entries:
    """What `os.scandir` returns: an iterator of entries that is also a context manager."""

    def __init__(self, entries: list[os.DirEntry[Any]]) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> _Entries:
        return self

    def __next__(self) -> os.DirEntry[Any]:
        return next(self._entries)

    def __enter__(self) -> _Entries:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._entries = iter(())


def _where(path: Any) -> str:
    try:
        shown = os.fspath(path) if path is not None else "."
    except TypeError:
        return repr(path)  # a file descriptor
    if isinstance(shown, bytes):
        shown = os.fsdecode(shown)
    try:
        relative = Path(shown).resolve().relative_to(Path.cwd().resolve())
        shown = str(relative) if str(relative) != "." else "."
    except (ValueError, OSError):
        pass
    return shown.rstrip("/") + "/"


def _by_the_import_system() -> bool:
    """Whether the listing is the import system's own (`importlib.metadata` caches its folder
    listings: distributions are perturbed as a source of their own, see below)."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return isinstance(caller, str) and caller.startswith(("importlib", "zipimport", "pkgutil"))


@contextmanager
def perturbed_listing(plan: RunPlan, journal: Journal) -> Iterator[None]:
    """Folder listings made while the block runs come in the order `plan` says."""
    listdir, scandir = os.listdir, os.scandir

    def perturbed_listdir(path: Any = ".") -> list[Any]:
        names = listdir(path)
        if _by_the_import_system():
            return names
        if len(names) > 1:
            journal.place(FILESYSTEM, f"os.listdir of {_where(path)}")
        return plan.arrange(FILESYSTEM, names, key=str)

    def perturbed_scandir(path: Any = ".") -> Any:
        if _by_the_import_system():
            return scandir(path)
        with scandir(path) as found:
            entries = list(found)
        if len(entries) > 1:
            journal.place(FILESYSTEM, f"os.scandir of {_where(path)}")
        return _Entries(plan.arrange(FILESYSTEM, entries, key=lambda entry: entry.name))

    def recorded_scandir(path: Any = ".") -> Any:
        if not _by_the_import_system():
            journal.place(FILESYSTEM, f"os.scandir of {_where(path)}")
        return scandir(path)

    os.listdir = perturbed_listdir
    # The natural run only records what it lists (to tell a cached listing from an unused one).
    natural = not plan.perturbs(FILESYSTEM)
    os.scandir = recorded_scandir if natural else perturbed_scandir
    try:
        yield
    finally:
        os.listdir, os.scandir = listdir, scandir


def _distribution_name(dist: importlib.metadata.Distribution) -> str:
    """The name to sort and group by: from the folder name when there is one (reading every
    METADATA file would cost more than the build)."""
    normalized = getattr(dist, "_normalized_name", None)
    return normalized if isinstance(normalized, str) else str(dist.metadata["Name"] or "")


@contextmanager
def perturbed_entry_points(plan: RunPlan, journal: Journal) -> Iterator[None]:
    """Distributions (and so entry points) found while the block runs come in `plan`'s order.

    Copies of one distribution keep their `sys.path` precedence (a stale copy shadowed by a
    newer one is not a race): the distinct distributions trade places, each with its copies.
    """
    kind = importlib.metadata.Distribution
    discover = kind.__dict__["discover"]
    select = importlib.metadata.EntryPoints.select

    def perturbed_discover(cls: type[Any], **params: Any) -> Iterator[Any]:
        journal.place(ENTRY_POINTS, "installed distributions")
        if not plan.perturbs(ENTRY_POINTS):
            return iter(discover.__func__(cls, **params))
        copies: dict[str, list[Any]] = {}
        for dist in discover.__func__(cls, **params):
            copies.setdefault(_distribution_name(dist), []).append(dist)
        names = plan.arrange(ENTRY_POINTS, list(copies), key=str)
        return iter([dist for name in names for dist in copies[name]])

    def recorded_select(self: importlib.metadata.EntryPoints, **params: Any) -> Any:
        if "group" in params:
            journal.place(ENTRY_POINTS, f"group {params['group']!r}")
        return select(self, **params)

    kind.discover = classmethod(perturbed_discover)  # type: ignore[assignment, arg-type]
    importlib.metadata.EntryPoints.select = recorded_select  # type: ignore[method-assign]
    try:
        yield
    finally:
        kind.discover = discover  # type: ignore[method-assign]
        importlib.metadata.EntryPoints.select = select  # type: ignore[method-assign]
