"""The harness's shape: no import cycle, no module over 500 lines, one home per shared name, and
a test folder for every wing.

An import inside a function is still a dependency (a lazy import only hides a cycle until the
function runs), and so is one under `if TYPE_CHECKING:` (a type-only import is a cycle the type
checker and every reader walk): every import counts. A wing is a package directly under
`harness/` whose name has no leading underscore; its tests live in `tests/<wing>/`, a package (so
two test modules never share a module name). Each scan is checked against sources written to
contain the bugs it exists for.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import harness

ROOT = Path(harness.__file__).parent
TESTS = Path(__file__).resolve().parent
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imports_of(name: str, source: str, known: set[str], is_package: bool = False) -> set[str]:
    """The harness modules `name` imports: at module level, in a function, or for types only."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else base)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    """The harness's import graph, a fresh copy each call (a test may change its copy)."""
    return {name: set(found) for name, found in _graph().items()}


@functools.cache
def _graph() -> dict[str, frozenset[str]]:  # parsed once per process: 200 modules, 0.2 s a parse
    found = modules()
    known = set(found)
    return {
        name: frozenset(
            imports_of(name, path.read_text(encoding="utf-8"), known, path.name == "__init__.py")
        )
        for name, path in found.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_scan_counts_lazy_and_type_only_imports() -> None:
    known = {"harness.prove._stable", "harness.prove._hashseed", "harness.capture", "harness.drift"}
    stability = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from harness.capture import CaptureSession\n"
        "def prove():\n"
        "    from harness.prove._hashseed import iter_under_seeds\n"
    )
    hashseed = "from harness.prove._stable import resolve\nfrom .. import drift\n"
    graph = {
        "harness.prove._stable": imports_of("harness.prove._stable", stability, known),
        "harness.prove._hashseed": imports_of("harness.prove._hashseed", hashseed, known),
    }
    assert graph == {
        "harness.prove._stable": {"harness.prove._hashseed", "harness.capture"},
        "harness.prove._hashseed": {"harness.prove._stable", "harness.drift"},
    }
    assert cycles(graph) == [["harness.prove._hashseed", "harness.prove._stable"]]


def test_a_type_only_import_back_is_a_cycle() -> None:
    known = {"harness._shared._errors", "harness.drift._report"}
    errors = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from harness.drift._report import DriftReport\n"
    )
    report = "from harness._shared._errors import HarnessError\n"
    graph = {
        "harness._shared._errors": imports_of("harness._shared._errors", errors, known),
        "harness.drift._report": imports_of("harness.drift._report", report, known),
    }
    assert cycles(graph) == [["harness._shared._errors", "harness.drift._report"]]
    one_way = {**graph, "harness._shared._errors": imports_of("harness._shared._errors", "", known)}
    assert cycles(one_way) == []


def test_the_scan_sees_every_module_and_resolves_submodules() -> None:
    graph = import_graph()
    assert {"harness._shared._views", "harness.drift._compare", "harness.capture._session"} <= set(
        graph
    )
    assert "harness.drift._locate" in graph["harness.drift._compare"]
    assert "harness._shared._views" in graph["harness.drift._compare"]


def test_the_harness_has_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_views_are_at_the_bottom() -> None:
    graph = import_graph()
    assert graph["harness._shared._views"] == set(), "views imports nothing else from the harness"
    assert "harness.drift" not in graph["harness.providers._base"]


def test_no_module_is_over_500_lines() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()
    }
    assert {name: size for name, size in sizes.items() if size > MAX_LINES} == {}


@pytest.mark.slow
def test_every_module_says_what_it_owns() -> None:
    missing = [
        name
        for name, path in modules().items()
        if ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) is None
    ]
    assert missing == []


def test_every_error_a_user_can_cause_is_a_harness_error() -> None:
    from harness._shared._errors import (
        FixtureError,
        HarnessError,
        HashSeedError,
        UnsafeName,
        WriteRefused,
    )
    from harness._shared._errors import SecretLeak as WriteSecretLeak
    from harness.capture import (
        CaptureError,
        CassetteMismatch,
        CassetteMissing,
        PrefixBroken,
        SecretLeak,
    )
    from harness.prove._run_diff import HeaderDrift

    for kind in (
        CaptureError,
        CassetteMismatch,
        CassetteMissing,
        SecretLeak,
        FixtureError,
        WriteRefused,
        HashSeedError,
        UnsafeName,
        PrefixBroken,
        WriteSecretLeak,
        HeaderDrift,
    ):
        assert issubclass(kind, HarnessError), kind
    assert issubclass(HeaderDrift, AssertionError) and HeaderDrift.exit_code == 1
    assert FixtureError.exit_code == 2


# The comparator compares; redaction belongs to the printer at the outputs.
COMPARATOR = (
    "harness.drift._compare",
    "harness.drift._locate",
    "harness.drift._tools",
    "harness.drift._structured",
    "harness.drift._hints",
    "harness.drift._far",
    "harness.drift._settings",
    "harness.drift._wording",
)
REDACTION = {
    "harness._shared._secrets",
    "harness._shared._secret_shapes",
    "harness._shared._printer",
}


def reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others (lazy imports included)."""
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in graph.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def test_the_reach_scan_sees_redaction_through_a_chain() -> None:
    graph = {"a.compare": {"a.wording"}, "a.wording": {"harness._shared._secrets"}}
    assert "harness._shared._secrets" in reaches(graph, "a.compare")


def test_the_comparator_never_reaches_redaction() -> None:
    """The report it returns prints itself, on demand (its printing methods import the printer
    when called): that edge is the output's, not the comparator's, so only the report's
    module-level imports are followed."""
    graph = import_graph()
    report = "harness.drift._report"
    source = modules()[report].read_text(encoding="utf-8")
    top_level = ast.Module(
        body=[node for node in ast.parse(source).body if isinstance(node, ast.ImportFrom)],
        type_ignores=[],
    )
    graph[report] = imports_of(report, ast.unparse(top_level), set(graph))
    assert set(COMPARATOR) <= set(graph)
    assert {name: sorted(reaches(graph, name) & REDACTION) for name in COMPARATOR} == {
        name: [] for name in COMPARATOR
    }


# -- tests mirror the wings ----------------------------------------------------------------------


def wings(package: Path) -> list[str]:
    """The packages directly under `package` whose names have no leading underscore."""
    return sorted(
        path.name
        for path in package.iterdir()
        if (path / "__init__.py").is_file() and not path.name.startswith("_")
    )


def wings_without_tests(package: Path, tests: Path) -> list[str]:
    """The wings of `package` with no test module under `tests/<wing>/`: no folder, or an empty
    one."""
    return [wing for wing in wings(package) if not any((tests / wing).rglob("test_*.py"))]


def folders_that_are_not_packages(tests: Path) -> list[str]:
    """Folders under `tests` holding test modules but no `__init__.py`: their modules would be
    imported by base name, where two of them (or a generated project's `agent.py`) collide."""
    return sorted(
        str(folder.relative_to(tests))
        for folder in {path.parent for path in tests.rglob("test_*.py")}
        if not (folder / "__init__.py").is_file()
    )


def test_the_wing_scan_sees_the_wings_and_no_private_or_nested_package() -> None:
    found = wings(ROOT)
    known = {
        "agent",
        "capture",
        "cli",
        "drift",
        "prove",
        "providers",
        "pytest_plugin",
        "scenarios",
        "upstream",
    }
    assert known <= set(found)
    assert not [name for name in found if name.startswith("_")]
    assert "perturb" not in found and "init" not in found  # packages inside a wing are not wings


def test_every_wing_has_a_test_folder() -> None:
    assert wings_without_tests(ROOT, TESTS) == []


def test_every_test_folder_is_a_package() -> None:
    assert folders_that_are_not_packages(TESTS) == []


def test_the_scans_catch_a_wing_without_tests_and_a_folder_without_init(tmp_path: Path) -> None:
    package, tests = tmp_path / "harness", tmp_path / "tests"
    for folder in ("agent", "ledger", "hollow", "_private", "agent/inner"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text('"""A package."""\n')
    (package / "_flat.py").write_text('"""A module of the bottom."""\n')
    (package / "notes").mkdir()  # a folder that is no package is no wing
    for folder in ("agent", "hollow", "loose"):
        (tests / folder).mkdir(parents=True)
    (tests / "agent" / "__init__.py").write_text("")
    (tests / "agent" / "test_loop.py").write_text("def test_loop():\n    pass\n")
    (tests / "hollow" / "__init__.py").write_text("")  # a folder with no test module in it
    (tests / "loose" / "test_loop.py").write_text("def test_loop():\n    pass\n")

    assert wings(package) == ["agent", "hollow", "ledger"]
    assert wings_without_tests(package, tests) == ["hollow", "ledger"]
    assert folders_that_are_not_packages(tests) == ["loose"]
