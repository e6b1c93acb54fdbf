"""Input that decodes but is wrong, and files that are not files, are refused in one line.

Defects 4, 5 and 11 of the reliability issue, and the recordings' `scenario` field:
- a `scenario.json` that decodes but cannot run (a config key its app preset does not take, a
  wrong type, a malformed tool order, two plugins with one name) gave a traceback and exit 1;
- a FIFO hung `check` and pytest collection forever, and a symlink to `/dev/zero` was read
  without bound (the 64 MiB check trusted the stat size);
- an unreadable scenario folder, or one whose scenario.json was renamed, was skipped silently;
- a `log.json`, `requests.json` or `answers.json` copied from another scenario's folder (its
  `scenario` names another) was never noticed.
Each is now one line naming the file and the field (exit 2), a collection error in pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.inner import inner_pytest
from tests.support.paths import copy_project

from .conftest import Cli, one_line, tree

Edit = Callable[[dict[str, Any]], None]


def edit_json(path: Path, edit: Edit) -> None:
    data = json.loads(path.read_bytes())
    edit(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _config(key: str, value: Any) -> Edit:
    return lambda data: data["config"].__setitem__(key, value)


def _twin_plugin(data: dict[str, Any]) -> None:
    data["plugins"].append({"name": data["plugins"][0]["name"]})


INVALID: dict[str, tuple[Edit, str]] = {
    "unknown-config-key": (_config("temperature", 0.2), "unknown field `temperature`"),
    "wrong-type": (_config("tool_order", "bash"), "at `$.config.tool_order`"),
    "wrong-type-max-steps": (_config("max_steps", "many"), "at `$.config.max_steps`"),
    "tool-order-without-rest": (_config("tool_order", ["bash"]), "<unlisted-tools>"),
    "tool-order-twice": (
        _config("tool_order", ["bash", "bash", "<unlisted-tools>"]),
        'lists "bash" more than once',
    ),
    "tui-key-in-cli-app": (_config("theme", "dark"), "unknown field `theme`"),
    "two-plugins-one-name": (_twin_plugin, "two plugins are named 'fs'"),
    "empty-plugin-name": (
        lambda data: data["plugins"].append({"name": ""}),
        "empty name at `$.plugins[5]`",
    ),
}
SCENARIO = "fixtures/tool-turn/scenario.json"


@pytest.mark.parametrize("command", ["check", "record", "replay", "show"])
@pytest.mark.parametrize("case", list(INVALID))
def test_a_scenario_that_cannot_run_is_one_line_naming_the_field(
    project: Path, cli: Cli, case: str, command: str
) -> None:
    edit, expected = INVALID[case]
    edit_json(project / SCENARIO, edit)
    before = tree(project)

    code, out, err = cli(command, "fixtures/tool-turn")

    assert code == 2, out
    line = one_line(err)
    assert line.startswith(f"harness {command}: {SCENARIO}: ")
    assert expected in line
    assert "Traceback" not in err and out == ""
    assert tree(project) == before


def test_a_scenario_that_cannot_run_is_a_collection_error(pytester: pytest.Pytester) -> None:
    copy_project(pytester.path)
    edit_json(pytester.path / SCENARIO, _config("temperature", 0.2))
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")
    result = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-shuffle=2", "--continue-on-collection-errors"
    )
    result.assert_outcomes(passed=5, errors=1)
    out = result.stdout.str()
    assert "harness: " in out and "unknown field `temperature`" in out
    assert "Traceback" not in out and "ValidationError" not in out


def test_a_scenario_declared_in_a_test_that_cannot_run_fails_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    from .conftest import SCENARIO_IMPORTS, scenario_source

    source = scenario_source("odd").replace(
        'config={"tool_order"', 'config={"temperature": 0.5, "tool_order"'
    )
    pytester.makepyfile(
        test_odd=SCENARIO_IMPORTS
        + f"\n\ndef test_odd(agent_harness):\n    agent_harness.check({source})\n"
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "unknown field `temperature`" in out and "at `$.config`" in out
    assert "Traceback" not in out and "msgspec" not in out
    assert not (pytester.path / "fixtures").exists()


def test_the_shipped_scenarios_are_all_valid(project: Path, cli: Cli) -> None:
    """bad-tool-order names an unregistered tool: its turn fails on purpose, and it is valid."""
    code, out, _ = cli("check", "--shuffle", "0")
    assert code == 0, out


# -- special files -------------------------------------------------------------------------------


def check_in_subprocess(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`harness check` in a child with a timeout: a read that blocks fails the test, not CI."""
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", *args, "--shuffle", "0"],
        cwd=root,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("name", ["log.json", "requests.json", "scenario.json"])
def test_a_fifo_is_refused_not_read(project: Path, name: str) -> None:
    path = project / "fixtures/text-turn" / name
    path.unlink()
    os.mkfifo(path)
    done = check_in_subprocess(project, "fixtures/text-turn")
    assert done.returncode == 2
    line = one_line(done.stderr.decode())
    assert f"fixtures/text-turn/{name}: is a named pipe (FIFO), not a regular file" in line


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize(
    "name", ["fixtures/text-turn/log.json", "snapshots/headers/default/system-prompt.expected.md"]
)
def test_a_link_to_dev_zero_is_refused_not_read_without_bound(project: Path, name: str) -> None:
    path = project / name
    path.unlink()
    path.symlink_to("/dev/zero")
    done = check_in_subprocess(project, "fixtures/text-turn")
    assert done.returncode == 2
    assert f"{name}: is a character device, not a regular file" in one_line(done.stderr.decode())


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_in_a_recording_is_a_collection_error_not_a_hang(pytester: pytest.Pytester) -> None:
    copy_project(pytester.path)
    log = pytester.path / "fixtures/resume/log.json"
    log.unlink()
    os.mkfifo(log)
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")
    result = inner_pytest(
        pytester,
        "-p",
        "no:randomly",
        "--harness-shuffle=2",
        "--continue-on-collection-errors",
        subprocess=True,
        timeout=120,
    )
    result.assert_outcomes(passed=5, errors=1)
    assert "fixtures/resume/log.json: is a named pipe (FIFO)" in result.stdout.str()


def test_diff_refuses_a_device(project: Path, cli: Cli) -> None:
    code, _, err = cli("diff", "/dev/zero", "fixtures/text-turn/requests.json")
    assert code == 2
    assert "/dev/zero: is a character device" in one_line(err)


# -- folders that are skipped silently no more ----------------------------------------------------


def test_a_scenario_folder_whose_scenario_json_was_renamed_is_reported(
    project: Path, cli: Cli
) -> None:
    folder = project / "fixtures/resume"
    (folder / "scenario.json").rename(folder / "scenario.json.bak")
    code, out, err = cli("check", "--shuffle", "0")
    assert code == 2
    line = one_line(err)
    assert (
        "fixtures/resume: holds answers.json, log.json, requests.json but no scenario.json" in line
    )
    assert "renamed" in line and out == ""


def make_unreadable(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 000; as root (who reads everything) the listing fails as it would for a user."""
    folder.chmod(0)  # restored by `restore_modes`
    if os.geteuid() == 0:
        real = os.listdir

        def listdir(path: Any = ".") -> list[str]:
            if Path(path).resolve() == folder.resolve():
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(os, "listdir", listdir)


@pytest.fixture
def restore_modes(project: Path) -> Iterator[Path]:
    yield project
    for path in (project / "fixtures").iterdir():
        path.chmod(0o755)


def test_an_unreadable_scenario_folder_is_reported(
    restore_modes: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_unreadable(restore_modes / "fixtures/multi-step", monkeypatch)
    code, out, err = cli("check", "--shuffle", "0")
    assert code == 2
    line = one_line(err)
    assert "fixtures/multi-step: cannot be listed: Permission denied" in line
    assert out == ""


def test_folders_that_hold_no_recording_are_not_scenarios(project: Path, cli: Cli) -> None:
    """The cassettes folder, notes, and empty folders beside the scenarios are not reported (a
    file in the cassettes folder is read as a cassette: `test_check_cassettes.py`)."""
    (project / "fixtures/cassettes/tests").mkdir(parents=True)
    (project / "fixtures/cassettes/tests/.gitkeep").write_text("")
    (project / "fixtures/notes").mkdir()
    (project / "fixtures/notes/README.md").write_text("about the fixtures\n")
    (project / "fixtures/empty").mkdir()
    code, out, err = cli("check", "--shuffle", "0")
    assert code == 0, err
    assert "6 scenarios, no drift" in out


# -- the recordings' `scenario` field ------------------------------------------------------------


@pytest.mark.parametrize("name", ["log.json", "requests.json", "answers.json"])
def test_a_recording_copied_from_another_scenario_is_refused(
    project: Path, cli: Cli, name: str
) -> None:
    """tool-turn and text-turn have the same tools: a copied file could pass unnoticed."""
    source = project / "fixtures/text-turn" / name
    target = project / "fixtures/tool-turn" / name
    target.write_bytes(source.read_bytes())
    code, _, err = cli("check", "fixtures/tool-turn", "--shuffle", "0")
    assert code == 2
    line = one_line(err)
    assert f"fixtures/tool-turn/{name}: belongs to scenario 'text-turn', not 'tool-turn'" in line
    assert "`$.scenario`" in line


def test_a_recording_without_scenario_json_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    copy_project(pytester.path)
    folder = pytester.path / "fixtures/resume"
    (folder / "scenario.json").rename(folder / "scenario.json.bak")
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")
    result = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-shuffle=2", "--continue-on-collection-errors"
    )
    result.assert_outcomes(passed=5, errors=1)
    assert "fixtures/resume: holds log.json but no scenario.json" in result.stdout.str()
