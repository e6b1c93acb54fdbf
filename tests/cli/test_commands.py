"""The CLI's commands on the shipped scenarios: check, refresh, diff and demo, and their exit codes.

`check` passes and writes nothing, fails on a hand-edited pin naming the block, the offset and the
tool, and exits 2 on a damaged recording in one line; `refresh` rewrites only the pin, minimally;
nothing is written under CI. `project` (a copy of the shipped fixtures and pins as the working
folder) comes from `tests/conftest.py`.
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.scenarios._formats import find_fixtures
from tests.support.paths import ROOT

SHIPPED = sorted(p.name for p in find_fixtures([ROOT / "fixtures"]))


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_check_on_shipped_fixtures_exits_0_and_writes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.stat().st_mtime_ns for p in project.rglob("*") if p.is_file()}
    content = snapshot_bytes(project)
    assert main(["check", "fixtures", "--shuffle", "4"]) == 0
    assert "no drift" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in project.rglob("*") if p.is_file()} == before
    assert snapshot_bytes(project) == content


def swap_first_two_tools(pin_file: Path) -> tuple[str, str]:
    data = json.loads(pin_file.read_text())
    first, second = data["initial"][0], data["initial"][1]
    data["initial"][0], data["initial"][1] = second, first
    pin_file.write_text(json.dumps(data, indent=2) + "\n")
    return first["name"], second["name"]


def test_a_hand_edited_tool_order_fails_check_naming_block_offset_and_tool(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = swap_first_two_tools(
        project / "snapshots/headers/default/tool-schemas.expected.json"
    )
    assert main(["check", "fixtures/text-turn", "--shuffle", "0"]) == 1
    out = capsys.readouterr().out
    assert "tools_changed" in out
    assert "reorder" in out
    assert "/tools/0" in out
    assert "byte " in out
    assert f'"{first}"' in out and f'"{second}"' in out
    assert "lost" in out  # the cache cost


def test_refresh_after_an_intended_change_rewrites_only_the_pin_minimally(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario_file = project / "fixtures/multi-step/scenario.json"
    scenario = json.loads(scenario_file.read_text())
    scenario["config"]["tool_order"] = ["bash", "list_dir", "read_file", "<unlisted-tools>"]
    scenario_file.write_text(json.dumps(scenario, indent=2) + "\n")
    pin_file = project / "snapshots/headers/multi-step/tool-schemas.expected.json"
    old = pin_file.read_text().splitlines()
    before = snapshot_bytes(project)

    assert main(["check", "fixtures/multi-step", "--shuffle", "0"]) == 1
    assert main(["refresh", "fixtures/multi-step"]) == 0
    after = snapshot_bytes(project)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed == {"snapshots/headers/multi-step/tool-schemas.expected.json"}
    new = pin_file.read_text().splitlines()
    diff = [
        line
        for line in difflib.unified_diff(old, new, lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    tool_lines = _tool_line_count(new, "list_dir")
    # list_dir moves up in the initial order and down in the reversed change: two moves only
    assert 0 < len(diff) <= 4 * tool_lines + 4
    assert main(["check", "fixtures/multi-step", "--shuffle", "0"]) == 0
    assert "rewrote 1 file" in capsys.readouterr().out


def _tool_line_count(lines: list[str], name: str) -> int:
    start = next(i for i, line in enumerate(lines) if f'"name": "{name}"' in line)
    depth, count = 0, 0
    for line in lines[start - 1 :]:
        depth += line.count("{") - line.count("}")
        count += 1
        if depth <= 0:
            return count
    return count


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda b: b[: len(b) // 2], "is not valid JSON"),
        (lambda b: b"", "is empty"),
        (lambda b: b.replace(b'"format": 1', b'"format": 99'), "format version 99"),
        (
            lambda b: b.replace(b'"kind": "harness/log"', b'"kind": "other/thing"'),
            "holds 'other/thing'",
        ),
        (lambda b: b'{"hello": "world"}', "is not a harness file"),
        (lambda b: b"\xff\xfe" + b, "not valid UTF-8"),
        (
            lambda b: b.replace(b'"turn": 1', b'"turn": "one"'),
            "does not match the harness/log format",
        ),
    ],
    ids=["truncated", "empty", "wrong-version", "wrong-kind", "not-ours", "bad-utf8", "wrong-type"],
)
def test_a_damaged_log_gives_one_clear_line_naming_the_file_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], damage, expected: str
) -> None:
    log = project / "fixtures/text-turn/log.json"
    log.write_bytes(damage(log.read_bytes()))
    assert main(["check", "fixtures/text-turn", "--shuffle", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "fixtures/text-turn/log.json" in err
    assert expected in err


def test_record_and_refresh_refuse_to_write_under_ci(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CI", "true")
    before = snapshot_bytes(project)
    assert main(["record", "fixtures/text-turn"]) == 2
    assert main(["refresh", "fixtures/text-turn"]) == 2
    assert "refusing to write under CI" in capsys.readouterr().err
    assert snapshot_bytes(project) == before


def test_diff_of_two_tool_pins_reports_the_reorder(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = project / "snapshots/headers/default/tool-schemas.expected.json"
    edited = project / "edited.json"
    shutil.copy(original, edited)
    first, _ = swap_first_two_tools(edited)
    assert main(["diff", str(original), str(edited)]) == 1
    out = capsys.readouterr().out
    assert "tools_changed" in out and first in out
    assert main(["diff", str(original), str(original)]) == 0


def test_demo_prints_a_row_per_scenario_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", str(ROOT / "fixtures"), "--shuffle", "3"]) == 0
    out = capsys.readouterr().out
    for name in SHIPPED:
        assert name in out
    assert "caught (expected unstable)" in out
    assert f"{len(SHIPPED)} of {len(SHIPPED)} scenarios behave as expected" in out
