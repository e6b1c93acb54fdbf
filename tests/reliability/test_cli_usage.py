"""The CLI works on the user's folder, refuses bad arguments in one line, and prints on any stdout.

Defects 13 and 16 of the reliability issue: with an ASCII or Latin-1 stdout `harness demo`
crashed with UnicodeEncodeError; with no `fixtures/` folder `check` silently checked the
harness's own shipped scenarios and `refresh` wrote into the package's source tree; a negative
`--shuffle` was accepted. The shipped scenarios are for `harness demo` only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT, copy_project

from .conftest import Cli, one_line, tree


def run_cli(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_demo_prints_on_an_ascii_or_latin1_stdout(tmp_path: Path, encoding: str) -> None:
    done = run_cli(tmp_path, "demo", "--shuffle", "2", PYTHONIOENCODING=encoding)
    assert done.returncode == 0, done.stderr.decode(encoding, "replace")
    assert done.stderr == b""
    out = done.stdout.decode(encoding)  # every byte is in the stream's encoding
    assert "6 of 6 scenarios behave as expected." in out
    assert "\\u2026" in out  # the report's "…", escaped rather than a crash


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_drift_report_prints_on_an_ascii_stdout(tmp_path: Path, encoding: str) -> None:
    """A report holds `…`, `->`, `—` and whatever the fixture holds: nothing may crash it."""
    copy_project(tmp_path)
    system = tmp_path / "snapshots/headers/default/system-prompt.expected.md"
    system.write_text(system.read_text(encoding="utf-8") + "\n日本語 ✓ — ü\n", encoding="utf-8")
    done = run_cli(
        tmp_path, "check", "fixtures/text-turn", "--shuffle", "0", PYTHONIOENCODING=encoding
    )
    assert done.returncode == 1, done.stderr.decode(encoding, "replace")
    out = done.stdout.decode(encoding)
    assert "system_changed" in out and "Traceback" not in done.stderr.decode(encoding, "replace")


@pytest.mark.parametrize("command", ["check", "replay", "refresh", "show"])
def test_without_a_fixtures_folder_the_cli_says_so_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    shipped = tree(ROOT / "fixtures") | {
        f"pins/{k}": v for k, v in tree(ROOT / "snapshots").items()
    }

    code, out, err = cli(command)

    assert code == 2
    line = one_line(err)
    assert line.startswith(f"harness {command}: ")
    assert "fixtures" in line and "does not exist" in line and "harness demo" in line
    assert out == ""  # not a table of the harness's own scenarios
    after = tree(ROOT / "fixtures") | {f"pins/{k}": v for k, v in tree(ROOT / "snapshots").items()}
    assert after == shipped  # nothing written into the package's source tree


def test_record_by_name_looks_in_the_project_not_in_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    monkeypatch.chdir(tmp_path)
    before = tree(ROOT / "fixtures")
    code, _, err = cli("record", "text-turn")
    assert code == 2
    assert "does not exist" in one_line(err)
    assert tree(ROOT / "fixtures") == before


def test_demo_still_runs_the_shipped_scenarios_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Cli
) -> None:
    (tmp_path / "fixtures").mkdir()  # a user's (empty) project: demo does not use it
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("demo", "--shuffle", "2")
    assert code == 0
    assert "6 of 6 scenarios behave as expected." in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["check", "--shuffle", "-1"], "--shuffle: expected 0 or more, not -1"),
        (["demo", "--shuffle", "-5"], "--shuffle: expected 0 or more, not -5"),
        (["check", "--shuffle", "many"], "--shuffle: expected a whole number, not 'many'"),
        (["check", "--seed", "x"], "--seed"),
        (["check", "--format", "yaml"], "--format"),
        (["frobnicate"], "frobnicate"),
        ([], "COMMAND"),
        (["diff", "only-one.json"], "b"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(
    project: Path, cli: Cli, argv: list[str], expected: str
) -> None:
    before = tree(project)
    code, out, err = cli(*argv)
    assert code == 2
    line = one_line(err)
    assert line.startswith("harness") and expected in line and "--help" in line
    assert out == ""
    assert tree(project) == before
