"""Record -> replay round trips and pins on the shipped scenarios.

Each shipped scenario re-records to identical bytes and replays to its expectation; the CLI's
commands on the same scenarios (check, refresh, diff, demo and their exit codes) are in
`tests/cli/test_commands.py`. `project` (a copy of the shipped fixtures and pins as the working
folder) comes from `tests/conftest.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.scenarios._formats import find_fixtures, load_fixture
from harness.scenarios._record import record_fixture
from harness.scenarios._replay import replay_fixture
from tests.support.paths import ROOT

SHIPPED = sorted(p.name for p in find_fixtures([ROOT / "fixtures"]))


def snapshot_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_the_six_scenarios_of_the_issue_are_shipped() -> None:
    assert {
        "text-turn",
        "tool-turn",
        "multi-step",
        "resume",
        "bad-tool-order",
        "racy-listener",
    } <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_rerecording_a_shipped_scenario_rewrites_identical_bytes(project: Path, name: str) -> None:
    before = snapshot_bytes(project)
    changed = record_fixture(load_fixture(project / "fixtures" / name))
    assert changed == []
    assert snapshot_bytes(project) == before


@pytest.mark.parametrize("name", SHIPPED)
def test_replay_of_a_shipped_scenario_meets_its_expectation(name: str) -> None:
    result = replay_fixture(load_fixture(ROOT / "fixtures" / name))
    assert result.ok, "\n".join(f.to_text() for f in result.findings)
    if result.fixture.scenario.expect == "unstable":
        assert any(f.kind == "rebuild" for f in result.findings)
    else:
        assert result.findings == []


def test_bad_tool_order_logs_balanced_failures_and_sends_nothing() -> None:
    fixture = load_fixture(ROOT / "fixtures" / "bad-tool-order")
    assert fixture.requests is not None and fixture.requests.requests == ()
    types = [type(e).__name__ for e in fixture.log.events]  # type: ignore[union-attr]
    assert types == ["TurnStart", "AgentError", "TurnEnd"] * 2


def test_multi_step_pins_one_header_change_that_is_a_pure_reorder() -> None:
    pin = json.loads((ROOT / "snapshots/headers/multi-step/tool-schemas.expected.json").read_text())
    initial = [t["name"] for t in pin["initial"]]
    (change,) = pin["changes"]
    assert [t["name"] for t in change] == list(reversed(initial))
