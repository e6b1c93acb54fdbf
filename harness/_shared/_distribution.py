"""The names the harness is installed and used by, and the one way to say what to install.

The distribution is `prompt-cache-harness`: the registry's `harness` is an unrelated project, so
`pip install harness` would bring that one. What a user types after installing keeps the short
name: the import package `harness`, the console script `harness` and the pytest plugin `harness`
(`-p no:harness`). Every message that asks a user to install something is made here, so each
names this distribution and the extra that brings what is missing (decision 0015).
"""

from __future__ import annotations

from importlib import metadata
from typing import Final

__all__ = ["DISTRIBUTION", "EXTRAS", "install_command", "installed_version"]

DISTRIBUTION: Final = "prompt-cache-harness"

# What each extra brings, and what for (pyproject.toml declares them).
EXTRAS: Final = {
    "pytest": "pytest, pytest-randomly and syrupy: the pytest plugin and its fixtures",
    "capture": "httpx2: capture SDK traffic (an SDK that brings httpx2 or httpx will do too)",
    "scan": "duckdb, pyarrow, zstandard and pyyaml: harness scan on production traces",
    "dask": "dask[dataframe,distributed]: harness scan --engine dask, beyond one machine",
}


def install_command(*extras: str) -> str:
    """`pip install 'prompt-cache-harness[pytest]'`: the command that brings `extras`."""
    unknown = [extra for extra in extras if extra not in EXTRAS]
    if unknown:
        raise ValueError(f"unknown extra {unknown[0]!r}; known: {', '.join(EXTRAS)}")
    if not extras:
        return f"pip install {DISTRIBUTION}"
    return f"pip install '{DISTRIBUTION}[{','.join(extras)}]'"


def installed_version() -> str | None:
    """The installed distribution's version; None when the harness runs from a bare checkout."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
