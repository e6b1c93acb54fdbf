"""The harness fixtures a project already defines, in any conftest pytest would load.

`harness init` writes `harness_upstream` and `harness_capture_config` into `<tests>/conftest.py`;
a project that already defines one of them (in its root `conftest.py`, in the conftest of a
folder on the way to the tests, or in the conftest of a `testpaths` folder) would have it
shadowed there, and recording would go to the network without a word. So init reads those
conftests first (with `ast`, never importing them) and writes only the fixtures no conftest
defines, naming the ones it left alone.
"""

from __future__ import annotations

import ast
import configparser
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from harness.cli.init._pytest_config import PytestConfig

__all__ = ["FIXTURES", "Defined", "defined_fixtures"]

FIXTURES: Final = ("harness_upstream", "harness_capture_config")


@dataclass(frozen=True)
class Defined:
    """A harness fixture a project's conftest defines: where, and on which line."""

    name: str
    path: Path
    line: int

    def describe(self) -> str:
        return f"{self.name} (defined in {self.path}:{self.line})"


def defined_fixtures(project: Path, tests: Path, config: PytestConfig | None) -> list[Defined]:
    """The harness fixtures defined in the conftests pytest would load for `tests` or for the
    configuration's `testpaths`, first definition of each name."""
    found: dict[str, Defined] = {}
    for conftest in _conftests(project, tests, config):
        for item in _fixtures_in(conftest):
            found.setdefault(item.name, item)
    return [found[name] for name in FIXTURES if name in found]


def _conftests(project: Path, tests: Path, config: PytestConfig | None) -> list[Path]:
    root = project.resolve()
    rootdir = config.path.parent.resolve() if config is not None else root
    folders: list[Path] = [rootdir]
    for target in (tests.resolve(), *(root / path for path in _testpaths(config))):
        folders += [target, *(p for p in target.resolve().parents if p.is_relative_to(rootdir))]
    seen = dict.fromkeys(folder / "conftest.py" for folder in folders)
    return [path for path in seen if path.is_file()]


def _testpaths(config: PytestConfig | None) -> list[str]:
    if config is None:
        return []
    try:
        text = config.path.read_text(encoding="utf-8", errors="replace")
        if config.syntax == "toml":
            document = tomllib.loads(text)
            table = document.get("tool", {}).get("pytest", document.get("pytest", {}))
            table = table.get("ini_options", table) if isinstance(table, dict) else {}
            value = table.get("testpaths", []) if isinstance(table, dict) else []
            return [str(item) for item in value] if isinstance(value, list) else [str(value)]
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        section = config.section.strip("[]")
        return parser.get(section, "testpaths", fallback="").split()
    except (tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return []


def _fixtures_in(path: Path) -> list[Defined]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return []
    found: list[Defined] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in FIXTURES:
            if any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list):
                found.append(Defined(node.name, path, node.lineno))
        elif isinstance(node, ast.Assign) and "fixture" in ast.unparse(node.value):
            found += [
                Defined(target.id, path, node.lineno)
                for target in node.targets
                if isinstance(target, ast.Name) and target.id in FIXTURES
            ]
    return found
