"""CI in one line: the pre-commit hook (`.pre-commit-hooks.yaml`) and the documented GitHub
Actions step (`docs/ci/github-actions.yml`) run the command they declare, read from those files,
in a project with recordings: it passes on good ones and fails on drift and on a leaked key.

The hook's environment is pre-commit's (it installs this repository); here the command runs from
the suite's environment, whose `harness` console script is the same entry point. The step's
install half names this distribution (the registry's `harness` is another project); it is not
run, since it would download the harness rather than test this checkout.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness._shared._distribution import DISTRIBUTION, install_command
from tests.cli.test_cli_cassettes import record
from tests.support.paths import ROOT

HOOKS = ROOT / ".pre-commit-hooks.yaml"
WORKFLOW = ROOT / "docs" / "ci" / "github-actions.yml"


def the_hook() -> dict[str, Any]:
    hooks = yaml.safe_load(HOOKS.read_text())
    assert isinstance(hooks, list) and [hook["id"] for hook in hooks] == ["harness-check"]
    return dict(hooks[0])


def the_step() -> str:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    return str(job["steps"][-1]["run"])


def run(command: str, project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`command` as a shell runs it in `project`, with this environment's scripts on PATH."""
    scripts = str(Path(sys.executable).parent)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    environ["PATH"] = scripts + os.pathsep + environ.get("PATH", "")
    environ.update(env)
    argv = shlex.split(command)
    assert shutil.which(argv[0], path=environ["PATH"]), f"{argv[0]} is not on PATH"
    return subprocess.run(
        argv, cwd=project, capture_output=True, text=True, env=environ, timeout=120, check=False
    )


def sdk_project(tmp_path: Path) -> Path:
    """A project as `harness init` and `pytest --harness-mode=record` leave it."""
    record(tmp_path / "fixtures" / "cassettes" / "tests" / "test_agent" / "test_turn.json")
    return tmp_path


def test_the_hook_runs_harness_check_on_the_whole_project() -> None:
    hook = the_hook()
    assert hook["entry"] == "harness check"
    assert hook["language"] == "python"  # pre-commit installs this repository for it
    assert hook["pass_filenames"] is False  # it checks every recording, not the staged files
    entry = shlex.split(hook["entry"])[0]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert entry in scripts, "the entry is a console script the distribution installs"


@pytest.mark.parametrize(
    ("path", "runs"),
    [
        ("fixtures/cassettes/tests/test_agent/test_turn.json", True),
        ("fixtures/weather/requests.jsonl", True),
        ("snapshots/headers/weather/tool-schemas.expected.json", True),
        ("src/agent.py", False),  # the code is judged by pytest's replay, not by this hook
    ],
)
def test_the_hook_runs_when_a_recording_changes(path: str, runs: bool) -> None:
    assert bool(re.search(the_hook()["files"], path)) is runs


@pytest.mark.slow
def test_the_hook_passes_on_good_recordings_and_fails_on_drift(tmp_path: Path) -> None:
    project = sdk_project(tmp_path)
    command = the_hook()["entry"]
    good = run(command, project)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "harness check: 1 cassettes, no finding" in good.stdout

    # The bug it is for: a recording whose second request moved the tools.
    record(project / "fixtures" / "cassettes" / "test_late.json", late_tool=True)
    drifted = run(command, project)
    assert drifted.returncode == 1
    assert "tools_changed" in drifted.stdout
    assert "harness check: 1 of 2 cassettes with findings" in drifted.stdout


@pytest.mark.slow
def test_the_hook_fails_on_a_leaked_key_without_printing_it(tmp_path: Path) -> None:
    project = sdk_project(tmp_path)
    path = next((project / "fixtures").rglob("*.json"))
    data = json.loads(path.read_text())
    key = "sk-ant-api03-" + "k" * 40
    data["exchanges"][0]["request"]["json"]["messages"][0]["content"] = key
    path.write_text(json.dumps(data, indent=2))
    leaked = run(the_hook()["entry"], project)
    assert leaked.returncode == 1
    assert "holds an Anthropic API key" in leaked.stdout
    assert key not in leaked.stdout + leaked.stderr


@pytest.mark.slow
def test_the_hook_refuses_a_project_without_recordings(tmp_path: Path) -> None:
    nothing = run(the_hook()["entry"], tmp_path)
    assert nothing.returncode == 2, "nothing recorded is not a pass"
    assert nothing.stderr.count("\n") == 1 and "fixtures: does not exist" in nothing.stderr


def test_the_github_actions_step_installs_this_distribution_and_runs_the_hooks_command() -> None:
    install, command = (part.strip() for part in the_step().split("&&"))
    # until it is published, the wheel built from the clone (issue 34: an install line that works)
    wheel = f"{DISTRIBUTION.replace('-', '_')}-0.1.0-py3-none-any.whl"
    assert install == f"pip install ./dist/{wheel}"
    assert f"{install_command()} && harness check" in WORKFLOW.read_text()  # once published
    assert command == the_hook()["entry"], "CI and pre-commit run the same gate"


@pytest.mark.slow
def test_the_github_actions_step_writes_the_summary_and_fails_the_job_on_drift(
    tmp_path: Path,
) -> None:
    project = sdk_project(tmp_path / "project")
    summary = tmp_path / "summary.md"
    command = the_step().split("&&")[1]
    github = {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}

    good = run(command, project, **github)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "| cassette | result |" in summary.read_text()

    record(project / "fixtures" / "cassettes" / "test_late.json", late_tool=True)
    drifted = run(command, project, **github)
    assert drifted.returncode == 1, "the job fails"
    assert (
        "::error file=" in drifted.stdout and "title=header drift::tools_changed" in drifted.stdout
    )
    assert "tools_changed" in summary.read_text()
    after = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    assert {p: after[p] for p in before} == before, "CI never writes"
