"""What a writing run writes, and what it refuses to (defects 6, 7, 9, 10 and 14).

- update never saved a changed scenario.json whose replay still passed, so `check` kept asking
  for an update;
- two scenarios owning one pin: record and update passed, the next check failed;
- a symlinked scenario folder wrote its pin outside the repository;
- with `CI` set, `--snapshot-update` still let syrupy delete `.header.json` files;
- a write error (read-only folder, full disk) ended in a traceback and exit 1.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.inner import inner_pytest
from tests.support.paths import copy_project

from .conftest import SCENARIO_IMPORTS, Cli, one_line, scenario_source
from .conftest import tree as files_under


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return inner_pytest(pytester, "-p", "no:randomly", *args)


def scenario_file(name: str, **options: Any) -> str:
    source = scenario_source(name, **options)
    return (
        SCENARIO_IMPORTS
        + f"\n\ndef test_{name}(agent_harness):\n"
        + f"    agent_harness.check({source.replace(chr(10), chr(10) + '    ')})\n"
    )


# -- 6: update saves a changed scenario.json ------------------------------------------------------


def test_update_saves_a_scenario_json_that_changed_while_the_replay_passes(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_s=scenario_file("s", pin="s", description="first words"))
    run(pytester, "--harness-mode=record").assert_outcomes(passed=1)
    pytester.makepyfile(test_s=scenario_file("s", pin="s", description="better words"))
    result = run(pytester)
    result.assert_outcomes(failed=1)  # check: the test's scenario differs from the file
    assert "re-record it with `pytest --harness-mode=update`" in result.stdout.str()

    run(pytester, "--harness-mode=update").assert_outcomes(passed=1)

    stored = json.loads((pytester.path / "fixtures/s/scenario.json").read_bytes())
    assert stored["description"] == "better words"
    run(pytester).assert_outcomes(passed=1)  # and check is satisfied now


# -- 7: one pin, one owner -------------------------------------------------------------------------


def own_default_pin_with_another_tool(project: Path) -> None:
    path = project / "fixtures/tool-turn/scenario.json"
    data = json.loads(path.read_bytes())
    data["pin"] = {"name": "default", "owner": True}
    data["plugins"][0]["tools"][0]["description"] = "Read a file (another header)."
    path.write_text(json.dumps(data, indent=2) + "\n")


@pytest.mark.parametrize("command", [["record"], ["refresh"]])
def test_a_second_owner_of_a_pin_is_refused_when_it_would_rewrite_it(
    project: Path, cli: Cli, command: list[str]
) -> None:
    own_default_pin_with_another_tool(project)
    before = files_under(project / "snapshots")
    code, _, err = cli(*command, "fixtures/tool-turn")
    assert code == 2
    line = one_line(err)
    assert "scenario 'tool-turn' would rewrite pin 'default'" in line
    assert "fixtures/text-turn/scenario.json also owns" in line and "Nothing was written" in line
    assert files_under(project / "snapshots") == before
    code, _, err = cli("check", "--shuffle", "0")  # the other owner still checks
    assert code in (0, 1) and "text-turn" not in err


def test_two_owners_that_agree_may_both_record(project: Path, cli: Cli) -> None:
    path = project / "fixtures/tool-turn/scenario.json"
    data = json.loads(path.read_bytes())
    data["pin"] = {"name": "default", "owner": True}  # same tools and system as text-turn
    path.write_text(json.dumps(data, indent=2) + "\n")
    code, _, err = cli("record", "fixtures/tool-turn")
    assert code == 0, err


def test_the_plugin_refuses_a_second_owner_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a=scenario_file("alpha", pin="shared"),
        test_b=scenario_file("bravo", pin="shared", tool_result="other").replace(
            '"Read a file."', '"Read a file, differently."'
        ),
    )
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(passed=1, failed=1)
    assert "scenario 'bravo' would rewrite pin 'shared'" in result.stdout.str()
    run(pytester).assert_outcomes(passed=1, failed=1)  # alpha's pin is intact; bravo unrecorded


@pytest.mark.slow
def test_the_controller_keeps_the_first_of_two_different_writes_to_one_file(
    pytester: pytest.Pytester,
) -> None:
    """Under xdist two owners record at once, before either pin exists: the controller, which
    writes everything, refuses the second content for the same file and fails the run."""
    pytester.makepyfile(
        test_a=scenario_file("alpha", pin="shared"),
        test_b=scenario_file("bravo", pin="shared").replace(
            '"Read a file."', '"Read a file, differently."'
        ),
    )
    result = inner_pytest(pytester, "-n", "2", "-p", "no:randomly", "--harness-mode=record")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "would write other bytes than an earlier test of this run" in out or (
        "would rewrite pin 'shared'" in out
    )


# -- 9: a linked scenario folder ------------------------------------------------------------------


@pytest.fixture
def linked(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fixtures/linked -> a scenario folder in another project (with its own snapshots/)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    copy_project(elsewhere)
    (project / "fixtures/linked").symlink_to(elsewhere / "fixtures/text-turn")
    return elsewhere


@pytest.mark.parametrize("command", ["record", "refresh"])
def test_a_linked_scenario_folder_is_refused_and_nothing_is_written_outside(
    project: Path, linked: Path, cli: Cli, command: str
) -> None:
    pin = linked / "snapshots/headers/default/system-prompt.expected.md"
    pin.write_text(pin.read_text() + "edited elsewhere\n")  # refresh would rewrite it
    before = files_under(linked)
    code, _, err = cli(command, "fixtures/linked")
    assert code == 2
    line = one_line(err)
    assert "refusing to write into fixtures/linked: it is a link to" in line
    assert files_under(linked) == before


def test_the_plugin_refuses_to_record_into_a_linked_folder(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "fixtures/s").mkdir(parents=True)
    (pytester.path / "fixtures").mkdir()
    (pytester.path / "fixtures/s").symlink_to(elsewhere / "fixtures/s")
    pytester.makepyfile(test_s=scenario_file("s", pin="s"))
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(failed=1)
    assert "it is a link to" in result.stdout.str()
    assert files_under(elsewhere) == {}


# -- 10: syrupy under CI ---------------------------------------------------------------------------

SNAPSHOT_TEST = """
from harness.agent import ToolSchema, LlmConfig, canonical_header


def test_header(header_snapshot):
    tools = [ToolSchema(n, n + " tool", {"type": "object"}) for n in "ab"]
    assert canonical_header(LlmConfig("p", "m"), "system", tools) == header_snapshot
"""


def test_under_ci_snapshot_update_deletes_no_header_snapshot(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_snap=SNAPSHOT_TEST)
    run(pytester, "--snapshot-update").assert_outcomes(passed=1)
    (stored,) = (pytester.path / "__snapshots__").rglob("*.header.json")
    pytester.makepyfile(test_snap="def test_header():\n    pass\n")  # the snapshot is unused now
    content = stored.read_bytes()

    monkeypatch.setenv("TEAMCITY_VERSION", "2025.03")
    result = run(pytester, "--snapshot-update")

    assert stored.read_bytes() == content
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--snapshot-update would let syrupy write and delete header snapshots" in err
    assert "this is a CI run (TEAMCITY_VERSION=2025.03)" in err


def test_under_ci_snapshot_update_fails_a_header_snapshot_test_in_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_snap=SNAPSHOT_TEST)
    monkeypatch.setenv("CI", "true")
    result = run(pytester, "--snapshot-update")
    result.assert_outcomes(errors=1)  # no header snapshot yet: the fixture refuses
    assert "this is a CI run (CI=true): CI never writes" in result.stdout.str()
    assert not (pytester.path / "__snapshots__").exists()


# -- 14: a write that fails -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "code", "hint"),
    [
        ("mkstemp", errno.EROFS, "read-only"),
        ("mkstemp", errno.EACCES, "permissions"),
        ("fsync", errno.ENOSPC, "free some disk space"),
    ],
)
def test_a_failed_write_is_one_line_exit_2_and_leaves_the_old_files(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, where: str, code: int, hint: str
) -> None:
    log = project / "fixtures/multi-step/log.json"
    log.write_bytes(log.read_bytes().replace(b'"{{time}}"', b'"{{time}} "', 1))  # refresh it
    before = files_under(project)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile if where == "mkstemp" else os, where, fail)
    exit_code, _, err = cli("refresh", "fixtures/multi-step")

    assert exit_code == 2
    line = one_line(err)
    assert line.startswith("harness refresh: cannot write ")
    assert os.strerror(code) in line and "the old file is intact" in line and hint in line
    monkeypatch.undo()
    assert files_under(project) == before
    assert not list(project.rglob(".*.tmp"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line_exit_2(project: Path, cli: Cli) -> None:
    folder = project / "fixtures/multi-step"
    log = folder / "log.json"
    log.write_bytes(log.read_bytes().replace(b'"{{time}}"', b'"{{time}} "', 1))
    before = files_under(project)
    folder.chmod(0o555)
    try:
        code, _, err = cli("refresh", "fixtures/multi-step")
    finally:
        folder.chmod(0o755)
    assert code == 2 and "cannot write" in one_line(err)
    assert files_under(project) == before


def test_the_header_snapshot_extension_refuses_to_delete_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.pytest_plugin import _snapshot as snapshot

    stored = tmp_path / "test_header.header.json"
    stored.write_bytes(b"{}")
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setattr(snapshot, "refused_deletions", [])
    extension = snapshot.HeaderSnapshotExtension()
    extension.delete_snapshots(snapshot_location=str(stored), snapshot_names={"test_header"})
    assert stored.read_bytes() == b"{}"
    assert snapshot.refused_deletions == [(str(stored), "GITLAB_CI=true")]
