"""The plugin loads with every pytest run, so importing it must not load the harness itself.

Every project that installs the package pays for `harness.pytest_plugin` at each pytest start,
most of them in runs that never touch a scenario. Its imports stay at pytest, the standard library
and the harness's small bottom modules; the runtime, the file codec (msgspec, the secret scan) and
asyncio load on first use. Measured as time in `bench/` (`pytest_startup_added_ms`); here as
the set of modules, which does not depend on the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Each test starts an interpreter (a fresh one is what measures start-up).
pytestmark = pytest.mark.slow

HEAVY = (
    "msgspec",
    "asyncio",
    "deepdiff",
    "harness.agent",
    "harness.scenarios._formats",
    "harness._shared._files",
)


def imported_by(statement: str) -> set[str]:
    """The modules `statement` imports on top of pytest, in a fresh interpreter."""
    script = (
        "import sys, json, pytest\n"
        "before = set(sys.modules)\n"
        f"{statement}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_plugin_loads_no_runtime_no_codec_and_no_asyncio() -> None:
    loaded = imported_by("import harness.pytest_plugin")
    assert "harness.pytest_plugin" in loaded
    assert heavy(loaded) == []


def test_the_check_sees_a_heavy_import() -> None:
    assert heavy(imported_by("import harness.pytest_plugin, harness.scenarios._formats")) != []


def test_a_run_that_touches_no_scenario_loads_no_codec_and_no_secret_scan(tmp_path: Path) -> None:
    # The whole session, terminal summary included: the summary's own words ("no header drift")
    # need no redaction, so the secret scan (regexes compiled at import) is not loaded for them.
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    script = (
        "import contextlib, io, json, sys, pytest\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = pytest.main(['-q', '-p', 'harness.pytest_plugin', '-p', 'no:randomly'])\n"
        "print(json.dumps([int(code), sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**__import__("os").environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    code, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 5  # no tests collected
    loaded = set(modules)
    assert heavy(loaded) == []
    assert not {"harness._shared._secrets", "harness._shared._secret_shapes"} & loaded
