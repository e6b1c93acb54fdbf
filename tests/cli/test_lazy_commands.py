"""Each `harness` subcommand imports what it uses, nothing else (its module is named in a table
and imported when it runs), so `harness --help` starts like any small script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli._main import COMMANDS, parser, resolve

_IMPORTED = """
import json, sys
from harness.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("harness"))))
"""


def imported(*args: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=True,
    )
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_every_subcommand_names_a_function_and_its_arguments() -> None:
    for command in COMMANDS:
        assert callable(resolve(command.run)), command.name
    full = parser()  # every subcommand's arguments defined: they do not collide
    assert full.parse_args(["check", "--shuffle", "0"]).shuffle == 0


@pytest.mark.slow
def test_help_imports_no_subcommand(tmp_path: Path) -> None:
    assert imported("--help", cwd=tmp_path) == [
        "harness",
        "harness._shared",
        "harness._shared._errors",
        "harness.cli",
        "harness.cli._main",
        "harness.cli._options",
    ]


@pytest.mark.slow
def test_lint_imports_neither_the_capture_session_nor_the_runtime(tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"url": "https://api.anthropic.com/v1/messages", "body": body}))
    found = imported("lint", str(path), cwd=tmp_path)
    assert "harness.rules._engine" in found  # the near miss: it did lint
    for module in (
        "harness.capture._session",
        "harness.capture._transport",
        "harness.agent",
        "harness.scenarios",
        "harness.prove",
        "harness.pytest_plugin",
        "harness.cli._commands",
    ):
        assert module not in found, module


@pytest.mark.slow
def test_check_on_cassettes_alone_imports_no_runtime(tmp_path: Path) -> None:
    from tests.support.bodies import claude, record_cassette

    cassettes = tmp_path / "fixtures" / "cassettes"
    record_cassette(cassettes / "test_a.json", claude(1100, turns=1), claude(1100, turns=2))
    found = imported("check", "--shuffle", "0", cwd=tmp_path)
    assert "harness.capture._audit" in found and "harness.rules._engine" in found  # it checked
    for module in ("harness.agent", "harness.scenarios", "harness.prove", "harness.cli._commands"):
        assert module not in found, module
    # the near miss: a scenario folder beside the cassettes is replayed, by the runtime
    scenario = Path(__file__).resolve().parents[2] / "fixtures" / "text-turn"
    shutil.copytree(scenario, tmp_path / "fixtures" / scenario.name)
    with_scenario = imported("check", "--shuffle", "0", cwd=tmp_path)
    assert "harness.scenarios._check" in with_scenario and "harness.agent" in with_scenario


@pytest.mark.slow
def test_cost_imports_neither_the_rules_nor_the_comparator(tmp_path: Path) -> None:
    from tests.support.bodies import claude, record_cassette

    cassettes = tmp_path / "fixtures" / "cassettes"
    record_cassette(cassettes / "test_a.json", claude(1100, turns=1), claude(1100, turns=2))
    found = imported("cost", cwd=tmp_path)
    assert "harness.cost._cost" in found and "harness.cache._replay" in found  # it priced
    for module in (
        "harness.rules._registry",
        "harness.rules._request_rules",
        "harness.capture._prefix",
        "harness.drift._compare",
        "harness.drift._hints",
        "harness.agent",
        "harness.scenarios",
    ):
        assert module not in found, module
    # the near miss: lint on the same cassette runs the rules, and judges the chain
    linted = imported("lint", cwd=tmp_path)
    assert "harness.rules._registry" in linted and "harness.capture._prefix" in linted
