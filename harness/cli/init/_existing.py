"""The harness fixtures a project already defines, in any conftest pytest would load.

`harness init` writes `harness_upstream` and `harness_capture_config` into `<tests>/conftest.py`;
a project that already defines one of them (in its root `conftest.py`, in the conftest of a
folder on the way to the tests, or in the conftest of a `testpaths` folder) would have it
shadowed there, and recording would go to the network without a word. So init reads those
conftests first (with `ast`, never importing them) and writes only the fixtures no conftest
defines, naming the ones it left alone. A fixture counts as defined under its function name or
its `@pytest.fixture(name=...)`, imported by name (`from .fixtures import harness_upstream`), or
in a module of the project a conftest loads (`pytest_plugins`, `from tests.fixtures import *`).
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
    rootdir = config.path.parent.resolve() if config is not None else project.resolve()
    seen: set[Path] = set()
    for conftest in _conftests(project, tests, config):
        for item in _fixtures_in(conftest, rootdir, seen):
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


def _fixtures_in(path: Path, rootdir: Path, seen: set[Path]) -> list[Defined]:
    if path in seen:
        return []
    seen.add(path)
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return []
    found: list[Defined] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [
                Defined(name, path, node.lineno)
                for decorator in node.decorator_list
                if "fixture" in ast.unparse(decorator)
                for name in (_fixture_name(decorator) or node.name,)
                if name in FIXTURES
            ]
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytest_plugins"
            for target in node.targets
        ):
            found += _in_modules(_strings(node.value), rootdir, seen)
        elif isinstance(node, ast.Assign) and "fixture" in ast.unparse(node.value):
            found += [
                Defined(target.id, path, node.lineno)
                for target in node.targets
                if isinstance(target, ast.Name) and target.id in FIXTURES
            ]
        elif isinstance(node, ast.ImportFrom):
            found += [
                Defined(alias.asname or alias.name, path, node.lineno)
                for alias in node.names
                if (alias.asname or alias.name) in FIXTURES
            ]
            if any(alias.name == "*" for alias in node.names):
                found += _in_modules([_dotted(node, path, rootdir)], rootdir, seen)
    return found


def _fixture_name(decorator: ast.expr) -> str | None:
    """The `name=` a `@pytest.fixture(name="...")` decorator gives, if any."""
    if isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
    return None


def _strings(value: ast.expr) -> list[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return [value.value]
    if isinstance(value, ast.List | ast.Tuple):
        return [
            e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return []


def _dotted(node: ast.ImportFrom, path: Path, rootdir: Path) -> str:
    """The module a `from ... import *` names, as a dotted name from the rootdir."""
    if not node.level:
        return node.module or ""
    base = path.parent
    for _ in range(node.level - 1):
        base = base.parent
    try:
        parts = list(base.resolve().relative_to(rootdir).parts)
    except ValueError:
        return ""
    return ".".join([*parts, *([node.module] if node.module else [])])


def _in_modules(modules: list[str], rootdir: Path, seen: set[Path]) -> list[Defined]:
    """The harness fixtures in the project's own modules named (those under the rootdir)."""
    found: list[Defined] = []
    for module in modules:
        if not module:
            continue
        base = rootdir.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                found += _fixtures_in(candidate, rootdir, seen)
                break
    return found
