"""Every field a recording holds is checked, and the system pin's format is decided.

The extra items of the reliability issue: `log.json`'s `scenario` and `registration_order` and
`requests.json`'s `scenario` were decoded but never compared; the system pin (`.md`) has no
envelope, so a corrupt one reads as drift. Decision 0011: the fields are compared (the file
format is unchanged), and the system pin stays the exact system text, so a damaged one is drift
that names the pin's files.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.scenarios._formats import load_fixture
from tests.support.paths import SHIPPED_FIXTURES, SHIPPED_PINS

from .conftest import Cli, tree


def test_a_registration_order_that_replay_does_not_give_is_drift(project: Path, cli: Cli) -> None:
    log = project / "fixtures/tool-turn/log.json"
    data = json.loads(log.read_bytes())
    data["registration_order"] = list(reversed(data["registration_order"]))
    log.write_text(json.dumps(data, indent=2) + "\n")
    code, out, _ = cli("check", "fixtures/tool-turn", "--shuffle", "0")
    assert code == 1
    assert "the plugins registered in another order than the recording says" in out
    assert "registration_order" in out


def test_refresh_restores_the_registration_order(project: Path, cli: Cli) -> None:
    log = project / "fixtures/tool-turn/log.json"
    original = log.read_bytes()
    data = json.loads(original)
    data["registration_order"] = data["registration_order"][1:]
    log.write_text(json.dumps(data, indent=2) + "\n")
    assert cli("refresh", "fixtures/tool-turn")[0] == 0
    assert log.read_bytes() == original


def test_the_shipped_recordings_hold_what_replay_gives() -> None:
    for folder in sorted(SHIPPED_FIXTURES.iterdir()):
        fixture = load_fixture(folder)
        assert fixture.log is not None and fixture.log.scenario == fixture.scenario.name


def test_a_damaged_system_pin_is_drift_naming_the_pin(project: Path, cli: Cli) -> None:
    """No envelope: the `.md` is the system text byte for byte. Cut in half, it is drift (exit 1)
    whose finding names the pin's folder; not UTF-8, it is bad input (exit 2)."""
    system = project / "snapshots/headers/default/system-prompt.expected.md"
    data = system.read_bytes()
    system.write_bytes(data[: len(data) // 2])
    code, out, _ = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 1
    assert "system_changed" in out
    assert "snapshots/headers/default: edited or damaged? git diff it)" in out

    system.write_bytes(data[:40] + b"\xff" + data[40:])
    code, _, err = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 2 and "system-prompt.expected.md: is not valid UTF-8 at byte 40" in err


def test_shipped_fixtures_and_pins_are_unchanged(project: Path, cli: Cli) -> None:
    """Nothing in this issue needed other bytes in the shipped files: re-recording them all
    gives the same bytes."""
    before = tree(project)
    for folder in sorted((project / "fixtures").iterdir()):
        assert cli("record", f"fixtures/{folder.name}")[0] == 0
    assert tree(project) == before
    assert tree(project / "fixtures") == tree(SHIPPED_FIXTURES)
    assert tree(project / "snapshots/headers") == tree(SHIPPED_PINS)
