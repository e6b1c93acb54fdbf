"""A hash-seed child compiles the project's own modules from their source, never from a `.pyc`.

A set of constants written as a literal (`SERVERS = {"github", "jira", "slack"}`) compiles to a
frozenset constant, and a `.pyc` stores it in the order the process that *compiled* it iterated
it; loading the file builds the set again by inserting in that order, under the hash seed of the
process loading it. So the order a build sees under `PYTHONHASHSEED=N` depended on which process
last wrote `__pycache__` (the test run's own, under a random seed), not on N alone: a racy agent
passed `hash_seeds=(0, 1)` or failed it by what the cache held (found by
`tests/project/test_examples.py`; `tests/prove/test_hashseed_fresh_source.py`). A proof must be
a function of the code and the seeds.

`fresh_sources()` puts a finder first on `sys.meta_path` that loads every module of source found on
`sys.path` outside the installed trees (the standard library, site-packages, the harness itself)
from its `.py` file, compiled in this process, and writes no bytecode: the project's code sees
what a fresh checkout under that seed sees (a CI run, the reproduce line). Installed packages keep
their `.pyc`, compiled once when they were installed: compiling them again would double a child's
start-up (an SDK and pydantic: about 2 s of CPU, measured) for constants a project does not edit.
Modules found by another finder (an editable install's own finder, a zip) load as before.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from types import CodeType, ModuleType

__all__ = ["fresh_sources"]


class _FromSource(SourceFileLoader):
    """A source loader that compiles the file every time and never reads or writes bytecode."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


class _FreshSourceFinder:
    def __init__(self, installed: tuple[str, ...]) -> None:
        self.installed = installed

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or type(spec.loader) is not SourceFileLoader or spec.origin is None:
            return None  # the next finder decides, as without this one
        origin = os.path.realpath(spec.origin)
        if any(origin.startswith(tree) for tree in self.installed):
            return None
        spec.loader = _FromSource(fullname, spec.origin)
        spec.cached = None
        return spec


def _installed_trees() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    trees = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    trees.update(site.getsitepackages())
    trees.add(site.getusersitepackages())
    trees.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the harness package
    return tuple(os.path.join(os.path.realpath(tree), "") for tree in trees if tree)


def fresh_sources() -> None:
    """Load the project's modules from source in this process from now on (idempotent)."""
    if not any(isinstance(finder, _FreshSourceFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _FreshSourceFinder(_installed_trees()))
