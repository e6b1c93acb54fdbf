"""Filesystem order: the order in which a folder's entries are listed, and entry points found.

A folder lists its entries in whatever order the filesystem keeps them (creation order, hash
order, inode order): another machine, checkout or filesystem lists them differently. During a
perturbed run `os.listdir` and `os.scandir` return their entries in the run's order (forward:
sorted by name), and so do `pathlib.Path.iterdir`, `Path.glob`, `glob.glob` and `glob.iglob`,
which list through them. Code that sorts what it lists is unaffected.

Installed distributions are found by walking `sys.path` in the same way, so the order of
`importlib.metadata.distributions()`, and so of `entry_points()` across packages, is perturbed
too (forward: sorted by distribution name).

A module that bound `listdir` or `scandir` itself (`from os import listdir`) before the run keeps
the real one: the proof cannot see it.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.perturb.journal import Journal
from harness.perturb.plan import ENTRY_POINTS, FILESYSTEM, RunPlan

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


@contextmanager
def perturbed_listing(plan: RunPlan, journal: Journal) -> Iterator[None]:
    """Folder listings made while the block runs come in the order `plan` says."""
    listdir, scandir = os.listdir, os.scandir

    def perturbed_listdir(path: Any = ".") -> list[Any]:
        names = listdir(path)
        if len(names) > 1:
            journal.place(FILESYSTEM, f"os.listdir of {_where(path)}")
        return plan.arrange(FILESYSTEM, names, key=str)

    def perturbed_scandir(path: Any = ".") -> _Entries:
        with scandir(path) as found:
            entries = list(found)
        if len(entries) > 1:
            journal.place(FILESYSTEM, f"os.scandir of {_where(path)}")
        return _Entries(plan.arrange(FILESYSTEM, entries, key=lambda entry: entry.name))

    os.listdir = perturbed_listdir
    os.scandir = perturbed_scandir  # type: ignore[assignment]
    try:
        yield
    finally:
        os.listdir, os.scandir = listdir, scandir


def _distribution_name(dist: importlib.metadata.Distribution) -> str:
    """The name to sort by: from the folder name when there is one (reading every METADATA
    file to sort would cost more than the build)."""
    normalized = getattr(dist, "_normalized_name", None)
    return normalized if isinstance(normalized, str) else str(dist.metadata["Name"] or "")


@contextmanager
def perturbed_entry_points(plan: RunPlan, journal: Journal) -> Iterator[None]:
    """Distributions (and so entry points) found while the block runs come in `plan`'s order."""
    distributions = importlib.metadata.distributions
    select = importlib.metadata.EntryPoints.select

    def perturbed_distributions(**params: Any) -> list[importlib.metadata.Distribution]:
        found = list(distributions(**params))
        return plan.arrange(ENTRY_POINTS, found, key=_distribution_name)

    def recorded_select(self: importlib.metadata.EntryPoints, **params: Any) -> Any:
        if "group" in params:
            journal.place(ENTRY_POINTS, f"group {params['group']!r}")
        return select(self, **params)

    importlib.metadata.distributions = perturbed_distributions
    importlib.metadata.EntryPoints.select = recorded_select  # type: ignore[method-assign]
    try:
        yield
    finally:
        importlib.metadata.distributions = distributions
        importlib.metadata.EntryPoints.select = select  # type: ignore[method-assign]
