"""Every extra declares what it imports, and nothing imports what its install did not bring.

Read from the sources: every third-party import in `harness/` (the wheel's code) is a
distribution of `dependencies` or of an extra (`pytest`, `capture`, `tokens`, `scan`, `dask`);
in `bench/`, of `dependencies` or the `bench` or `scan` extra. What runs at start-up is
narrower: the modules `harness`, `harness.cli` and `harness.capture` import when they are
imported (module level, following the harness's own imports, leaving out `if TYPE_CHECKING:`
and imports guarded by `except ImportError`) need only `dependencies`; the pytest plugin adds
only the `pytest` extra. Functions import an extra's package when a user calls them (the
capture transports, syrupy's extension).

The scan is checked against sources written to contain the bugs it exists for.
`tests/project/test_wheel.py` shows the same at run time, in an environment holding only what the
wheel declares.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness._shared._distribution import DISTRIBUTION, EXTRAS
from harness.capture._transport import LIBRARIES
from tests.support.paths import ROOT

FIRST_PARTY = {"harness", "bench", "__future__"}
# The extras the code in each folder may use ("" is the bare install's `dependencies`).
MAY_USE = {
    "harness": ("", "pytest", "capture", "tokens", "scan", "dask"),
    "bench": ("", "bench", "scan"),  # bench/scan.py writes its digest table with pyarrow
}
# The client libraries capture patches when a project has them installed (decision 0019), and
# aiohttp's own multidict and yarl: imported inside functions, after `find_spec` found them, so
# never a dependency; they are in the `test` extra only.
INTERCEPTED = {"harness.capture._urllib3": {"urllib3"}}
INTERCEPTED["harness.capture._aiohttp"] = {"aiohttp", "multidict", "yarl"}
INTERCEPTED["harness.capture._aiohttp_wire"] = {"aiohttp"}
START_UP = {"harness": ("",), "harness.cli": ("",), "harness.capture": ("",)}
START_UP_WITH_PYTEST = {"harness.pytest_plugin": ("", "pytest")}


def declared() -> dict[str, set[str]]:
    """Distribution names each extra brings ("" for the bare install), self-references expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    raw = {"": project["dependencies"], **project["optional-dependencies"]}

    def expand(extra: str) -> set[str]:
        names: set[str] = set()
        for line in raw[extra]:
            requirement = Requirement(line)
            if canonicalize_name(requirement.name) == DISTRIBUTION:
                for inner in requirement.extras:
                    names |= expand(inner)
            else:
                names.add(canonicalize_name(requirement.name))
        return names

    return {extra: expand(extra) for extra in raw}


@cache
def _installed() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())


def distributions_of(top: str) -> set[str]:
    """The distributions installed here that provide the import name `top`."""
    return {canonicalize_name(name) for name in _installed().get(top, [])}


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _guards_import_error(node: ast.Try) -> bool:
    caught = " ".join(ast.unparse(h.type) for h in node.handlers if h.type is not None)
    return "ImportError" in caught or "ModuleNotFoundError" in caught


def import_nodes(tree: ast.AST, *, start_up: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run (`start_up`: when the module is imported)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_type_checking(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if start_up and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if start_up and isinstance(node, ast.Try) and _guards_import_error(node):
            stack.extend([*node.handlers, *node.orelse, *node.finalbody])
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imported_names(module: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> list[str]:
    """Absolute dotted names an import statement in `module` refers to."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        base = f"{anchor}.{base}" if base else anchor
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def third_party(names: list[str]) -> set[str]:
    tops = {name.split(".")[0] for name in names}
    return {top for top in tops if top not in FIRST_PARTY and top not in sys.stdlib_module_names}


def sources(folder: str) -> dict[str, tuple[str, bool]]:
    """module name -> (source, is a package) for every module under `folder`."""
    found = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        found[".".join(parts)] = (path.read_text(encoding="utf-8"), package)
    return found


def undeclared_imports(
    modules: dict[str, tuple[str, bool]], allowed: set[str]
) -> list[tuple[str, str]]:
    """(module, import) pairs whose distribution is not in `allowed`, or not installed at all."""
    found = []
    for module, (source, package) in modules.items():
        for node in import_nodes(ast.parse(source), start_up=False):
            for top in sorted(third_party(imported_names(module, node, package))):
                if top in INTERCEPTED.get(module, ()):
                    continue
                if not distributions_of(top) & allowed:
                    found.append((module, top))
    return found


def start_up_imports(modules: dict[str, tuple[str, bool]], roots: list[str]) -> dict[str, str]:
    """Third-party imports that importing `roots` runs, with a module that runs each."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        module = pending.pop()
        if module in seen or module not in modules:
            continue
        seen.add(module)
        parent = module.rpartition(".")[0]
        if parent:
            pending.append(parent)  # importing a.b runs a/__init__.py first
        source, package = modules[module]
        for node in import_nodes(ast.parse(source), start_up=True):
            names = imported_names(module, node, package)
            pending += [name for name in names if name in modules]
            for top in third_party(names):
                found.setdefault(top, module)
    return found


def brought_by(extras: tuple[str, ...]) -> set[str]:
    table = declared()
    return set().union(*(table[extra] for extra in extras))


# -- the project --------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_import_is_a_declared_distribution() -> None:
    for folder, extras in MAY_USE.items():
        assert undeclared_imports(sources(folder), brought_by(extras)) == [], folder


@pytest.mark.slow
def test_what_starts_up_needs_only_the_install_that_brings_it() -> None:
    harness = sources("harness")
    for roots in (START_UP, START_UP_WITH_PYTEST):
        for root, extras in roots.items():
            allowed = brought_by(extras)
            extra = {
                top: module
                for top, module in start_up_imports(harness, [root]).items()
                if not distributions_of(top) & allowed
            }
            assert extra == {}, f"importing {root} imports these beyond {extras}"


def test_the_capture_extra_brings_a_library_the_transports_import_by_name() -> None:
    assert set(LIBRARIES) & declared()["capture"]
    assert set(EXTRAS) <= set(declared()), "every extra a message names exists"


def test_the_test_extra_brings_every_extra() -> None:
    table = declared()
    for extra in set(table) - {"", "test"}:
        assert table[extra] <= table["test"], f"the suite's environment lacks the {extra} extra"


# -- the scan, fed the bugs it is for ---------------------------------------------------------

BUGGY = {
    "harness": ('"""."""\nfrom harness import cli\n', True),
    "harness.cli": ('"""."""\nfrom harness.capture import _transport\n', False),
    "harness.capture": ('"""."""\n', True),
    "harness.capture._transport": (
        '"""."""\n'
        "import httpx2  # at module level: the bare install cannot import the CLI\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import openai\n"
        "try:\n    import anthropic\nexcept ImportError:\n    anthropic = None\n"
        "def post():\n    import requests  # declared nowhere\n",
        False,
    ),
}


@pytest.mark.slow
def test_the_scan_finds_an_undeclared_import_even_inside_a_function() -> None:
    found = undeclared_imports(BUGGY, brought_by(("", "pytest", "capture")))
    assert ("harness.capture._transport", "requests") in found
    assert all(top != "httpx2" for _, top in found), "httpx2 is the capture extra's"


# slow: 1.1-1.3 s of CPU in a serial run (issue 33)
@pytest.mark.slow
def test_the_scan_follows_start_up_imports_to_an_extras_package() -> None:
    found = start_up_imports(BUGGY, ["harness.cli"])
    assert found == {"httpx2": "harness.capture._transport"}, "not the guarded or typing ones"
    assert not distributions_of("httpx2") & brought_by(("",))
