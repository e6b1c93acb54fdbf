"""`harness.agent` is the system under test: it must not depend on the harness that tests it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness.agent

PACKAGE_DIR = Path(harness.agent.__file__).parent


def imported_modules(source: str) -> list[str]:
    """Every absolute module an import statement names (relative ones resolved in the package)."""
    package = "harness.agent"
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append(module)
            if module == "harness":  # `from harness import x` imports harness.x
                found += [f"harness.{alias.name}" for alias in node.names]
    return found


def outside_agent(module: str) -> bool:
    inside = module == "harness.agent" or module.startswith("harness.agent.")
    return module.startswith("harness.") and not inside


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(PACKAGE_DIR)): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
    }


def test_the_scan_sees_every_module_and_its_internal_imports() -> None:
    scanned = sources()
    assert {"_context.py", "_loop.py", "_system_prompt.py", "_apps.py", "_frozen.py"} <= set(
        scanned
    )
    internal = {m for source in scanned.values() for m in imported_modules(source)}
    assert "harness.agent._context" in internal, "the scan must see the package's own imports"


def test_the_scan_flags_harness_imports_in_every_spelling() -> None:
    source = (
        "import harness.scenarios._formats\nfrom harness import scenarios\nfrom ..cli import main\n"
    )
    flagged = [m for m in imported_modules(source) if outside_agent(m)]
    assert flagged == ["harness.scenarios._formats", "harness.scenarios", "harness.cli"]


def test_no_module_of_harness_agent_imports_the_rest_of_harness() -> None:
    offending = {
        name: [m for m in imported_modules(source) if outside_agent(m)]
        for name, source in sources().items()
    }
    assert {name: mods for name, mods in offending.items() if mods} == {}


@pytest.mark.slow
def test_importing_harness_agent_loads_no_other_harness_module() -> None:
    script = (
        "import json, sys; import harness.agent; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'harness')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PACKAGE_DIR.parent.parent,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded = json.loads(result.stdout)
    assert "harness.agent._loop" in loaded
    assert [m for m in loaded if m != "harness" and not m.startswith("harness.agent")] == []
