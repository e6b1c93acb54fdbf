"""Which pytest configuration a project already has, found the way pytest finds it.

pytest looks in the folder of its arguments and then in each parent, and in each folder takes
the first of `pytest.toml`, `.pytest.toml`, `pytest.ini`, `.pytest.ini` (always configuration,
even empty), `pyproject.toml` with a `[tool.pytest]` or `[tool.pytest.ini_options]` table,
`tox.ini` with a `[pytest]` section, `setup.cfg` with a `[tool:pytest]` section. The first found
decides the rootdir and the settings; `harness init` must know it, because it never edits such
a file: it prints the harness's lines in that file's syntax instead (decision 0015).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from harness._shared._errors import FixtureError

__all__ = ["PytestConfig", "find_pytest_config", "settings_lines"]

Syntax = Literal["ini", "toml"]


@dataclass(frozen=True)
class PytestConfig:
    """A file pytest reads its settings from, the table or section that holds them, and how
    values are written there (`ini`: bare; `toml`: TOML strings)."""

    path: Path
    section: str
    syntax: Syntax


# The settings the harness reads, with its defaults and what each is for; every value a string
# (pytest's TOML mode refuses a number for a string setting).
SETTINGS: Final = (
    ("harness_fixtures", "fixtures", "where recordings live (cassettes in fixtures/cassettes/)"),
    ("harness_shuffle", "8", "runs of each prove_stable build: natural, reversed, forward, random"),
    (
        "harness_mode",
        "check",
        "check never writes; record, update and update-new-only do (not in CI)",
    ),
)


def settings_lines(syntax: Syntax) -> list[str]:
    """The harness's settings at their defaults, with a comment each, in `syntax`."""
    lines = []
    for name, value, why in SETTINGS:
        lines.append(f"# {why}")
        lines.append(f'{name} = "{value}"' if syntax == "toml" else f"{name} = {value}")
    return lines


def _always(section: str, syntax: Syntax) -> Callable[[Path], PytestConfig | None]:
    return lambda path: PytestConfig(path, section, syntax)


def _section(header: str) -> Callable[[Path], PytestConfig | None]:
    pattern = re.compile(rf"^\s*\[\s*{re.escape(header)}\s*\]\s*$", re.MULTILINE)

    def probe(path: Path) -> PytestConfig | None:
        text = _read(path, encoding="utf-8", errors="replace")
        return PytestConfig(path, f"[{header}]", "ini") if pattern.search(text) else None

    return probe


def _read(path: Path, **how: str) -> str:
    """A configuration file's text; one line naming it when it cannot be read (pytest could not
    read it either)."""
    try:
        return path.read_text(**how)
    except OSError as error:
        raise FixtureError(
            path,
            f"cannot be read: {error.strerror or error}",
            "make it readable (pytest reads it too), then run harness init again",
        ) from None


def _pyproject(path: Path) -> PytestConfig | None:
    try:
        document = tomllib.loads(_read(path, encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise FixtureError(
            path, f"is not valid TOML ({error})", "fix it, then run harness init again"
        ) from None
    tool = document.get("tool", {})
    table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    if any(key != "ini_options" for key in table):
        return PytestConfig(path, "[tool.pytest]", "toml")
    return PytestConfig(path, "[tool.pytest.ini_options]", "toml")


_PROBES: Final = (
    ("pytest.toml", _always("[pytest]", "toml")),
    (".pytest.toml", _always("[pytest]", "toml")),
    ("pytest.ini", _always("[pytest]", "ini")),
    (".pytest.ini", _always("[pytest]", "ini")),
    ("pyproject.toml", _pyproject),
    ("tox.ini", _section("pytest")),
    ("setup.cfg", _section("tool:pytest")),
)


def find_pytest_config(project: Path) -> PytestConfig | None:
    """The configuration pytest would use for tests in `project`, or None."""
    start = project.resolve()
    for folder in (start, *start.parents):
        for name, probe in _PROBES:
            path = folder / name
            if path.is_file():
                found = probe(path)
                if found is not None:
                    return found
    return None
