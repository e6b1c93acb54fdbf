"""A package's public names imported on first use (PEP 562's module `__getattr__`).

A face (`harness.drift`, `harness.rules`; not `harness` itself, which the agent's import runs
and which therefore imports nothing of the harness) lists each name with the module it lives in
and defines `__getattr__` and `__dir__` through a `LazyExports` (as functions, so type checkers
see a module `__getattr__`). A name is imported when first asked for and then kept in the face's
globals, so `import harness` and a subcommand that needs one part stay cheap (`harness cost`
imports no comparator).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any

__all__ = ["LazyExports"]


class LazyExports:
    """The names of `package` (whose globals are `namespace`), each from its module."""

    def __init__(self, package: str, exports: Mapping[str, str], namespace: dict[str, Any]):
        self.package, self.exports, self.namespace = package, exports, namespace

    def get(self, name: str) -> Any:
        """`name` from its module, imported now and kept; AttributeError for another name."""
        module = self.exports.get(name)
        if module is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        self.namespace[name] = value  # asked once
        return value

    def dir(self) -> list[str]:
        return sorted({*self.namespace, *self.exports})
