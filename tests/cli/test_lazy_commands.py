"""Each `harness` subcommand imports what it uses, nothing else (its module is named in a table
and imported when it runs), so `harness --help` starts like any small script."""

from __future__ import annotations

import json
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
