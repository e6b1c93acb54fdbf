"""The scan's optional libraries, imported when a scan needs them, each missing one a line.

`harness scan` needs the `scan` extra (DuckDB, pyarrow, zstandard, PyYAML) and, for
`--engine dask`, the `dask` extra. Without them the command says which extra to install, in one
line (exit 2), and nothing of the harness imports them before a scan runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from harness._shared._distribution import install_command
from harness._shared._errors import UsageError

__all__ = [
    "MissingExtra",
    "dask",
    "dask_modules",
    "duckdb",
    "pandas",
    "pyarrow",
    "pyarrow_compute",
    "pyarrow_parquet",
    "require_scan",
    "yaml",
]


class MissingExtra(UsageError):
    """A library the scan needs is not installed."""


def _module(name: str, extra: str, what: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingExtra(
            f"{what} needs {name.split('.')[0]}, which is not installed: {install_command(extra)}"
        ) from None


def pyarrow() -> ModuleType:
    return _module("pyarrow", "scan", "harness scan")


def pyarrow_compute() -> ModuleType:
    return _module("pyarrow.compute", "scan", "harness scan")


def pyarrow_parquet() -> ModuleType:
    return _module("pyarrow.parquet", "scan", "harness scan")


def pandas() -> ModuleType:
    return _module("pandas", "dask", "harness scan --engine dask")


def dask() -> ModuleType:
    return _module("dask", "dask", "harness scan --engine dask")


def yaml() -> ModuleType:
    return _module("yaml", "scan", "reading a YAML cassette")


def duckdb() -> ModuleType:
    return _module("duckdb", "scan", "harness scan")


def dask_modules() -> tuple[ModuleType, ModuleType]:
    """`dask.dataframe` and `dask.distributed`."""
    frame = _module("dask.dataframe", "dask", "harness scan --engine dask")
    distributed = _module("dask.distributed", "dask", "harness scan --engine dask")
    return frame, distributed


def require_scan(engine: str = "duckdb") -> None:
    """Every library a scan on `engine` needs, each missing one a line (before anything runs)."""
    for name in ("pyarrow", "numpy", "duckdb"):
        _module(name, "scan", "harness scan")
    if engine == "dask":
        dask_modules()
