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

The harness's own reads are neither perturbed nor noted: its provider registry reads the
`harness.providers` entry points, and its rules, prices and hosts packs list their folders, the
first time a captured request needs them, which may be inside the build's first run. Noted, they
made the proof warn that the *build* read entry points once and cached them (a false alarm on
every first proof of a process). A read is the harness's own when the nearest caller outside the
standard library is a harness module other than the reference agent and its scenarios (which
stand for a user's program and stay perturbed).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from harness.prove.perturb._journal import Journal
from harness.prove.perturb._plan import ENTRY_POINTS, FILESYSTEM, RunPlan

# Modules of the harness that stand for a user's program: their reads stay perturbed.
_PROGRAM_MODULES = ("harness.agent", "harness.scenarios")
_STDLIB = frozenset(sys.stdlib_module_names)

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


def _by_the_import_system(depth: int = 2) -> bool:
    """Whether the listing is the import system's own (`importlib.metadata` caches its folder
    listings: distributions are perturbed as a source of their own, see below)."""
    caller = sys._getframe(depth).f_globals.get("__name__", "")
    return isinstance(caller, str) and caller.startswith(("importlib", "zipimport", "pkgutil"))


def _by_the_harness() -> bool:
    """Whether the nearest caller outside the standard library is the harness's own machinery
    (see the module's docstring)."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return False
        name = frame.f_globals.get("__name__", "")
        if not isinstance(name, str):
            return False
        top = name.partition(".")[0]
        if top not in _STDLIB and not name.startswith("harness.prove.perturb"):
            return top == "harness" and not name.startswith(_PROGRAM_MODULES)
        frame = frame.f_back
    return False


def _unperturbed() -> bool:
    """For the listings: the import system's (its caller is two frames up from the listing's
    caller) or the harness's own."""
    return _by_the_import_system(3) or _by_the_harness()


@contextmanager
def perturbed_listing(plan: RunPlan, journal: Journal) -> Iterator[None]:
    """Folder listings made while the block runs come in the order `plan` says."""
    listdir, scandir = os.listdir, os.scandir

    def perturbed_listdir(path: Any = ".") -> list[Any]:
        names = listdir(path)
        if _unperturbed():
            return names
        if len(names) > 1:
            journal.place(FILESYSTEM, f"os.listdir of {_where(path)}")
        return plan.arrange(FILESYSTEM, names, key=str)

    def perturbed_scandir(path: Any = ".") -> Any:
        if _unperturbed():
            return scandir(path)
        with scandir(path) as found:
            entries = list(found)
        if len(entries) > 1:
            journal.place(FILESYSTEM, f"os.scandir of {_where(path)}")
        return _Entries(plan.arrange(FILESYSTEM, entries, key=lambda entry: entry.name))

    def recorded_scandir(path: Any = ".") -> Any:
        if not _unperturbed():
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


def _named(params: dict[str, Any]) -> bool:
    context = params.get("context")
    name = params["name"] if "name" in params else getattr(context, "name", None)
    return name is not None


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
        # A lookup by name (`version("x")`, `distribution("x")`, a module reading its own version
        # when first imported) finds one distribution whatever the order: not a source of order.
        if _by_the_harness() or _named(params):
            return iter(discover.__func__(cls, **params))
        journal.place(ENTRY_POINTS, "installed distributions")
        if not plan.perturbs(ENTRY_POINTS):
            return iter(discover.__func__(cls, **params))
        copies: dict[str, list[Any]] = {}
        for dist in discover.__func__(cls, **params):
            copies.setdefault(_distribution_name(dist), []).append(dist)
        names = plan.arrange(ENTRY_POINTS, list(copies), key=str)
        return iter([dist for name in names for dist in copies[name]])

    def recorded_select(self: importlib.metadata.EntryPoints, **params: Any) -> Any:
        if "group" in params and not _by_the_harness():
            journal.place(ENTRY_POINTS, f"group {params['group']!r}")
        return select(self, **params)

    kind.discover = classmethod(perturbed_discover)  # type: ignore[assignment, arg-type]
    importlib.metadata.EntryPoints.select = recorded_select  # type: ignore[method-assign]
    try:
        yield
    finally:
        kind.discover = discover  # type: ignore[method-assign]
        importlib.metadata.EntryPoints.select = select  # type: ignore[method-assign]
