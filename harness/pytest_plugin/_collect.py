"""Recorded scenarios as tests: with `harness_collect`, every scenario folder under the fixtures
folder is collected and checked (replay, rebuild, shuffle, pins); a corrupt file, or a recording
whose `scenario.json` is gone, is a collection error with one line, not a skipped scenario.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness._shared._errors import FixtureError
from harness.pytest_plugin._api import AgentHarness, shown
from harness.pytest_plugin._state import STATE

__all__ = ["OrphanRecording", "ScenarioFile", "ScenarioItem", "pytest_collect_file"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if not config.getini("harness_collect"):
        return None
    from harness._shared._paths import LOG_FILE, SCENARIO_FILE

    if file_path.name not in (SCENARIO_FILE, LOG_FILE):
        return None
    fixtures = config.stash[STATE].fixtures.resolve()
    if fixtures not in file_path.resolve().parents:
        return None
    if file_path.name == LOG_FILE:  # a recording whose scenario.json was renamed or deleted
        if (file_path.parent / SCENARIO_FILE).exists():
            return None
        return OrphanRecording.from_parent(parent, path=file_path)
    return ScenarioFile.from_parent(parent, path=file_path)


class OrphanRecording(pytest.File):
    """A recording without its scenario.json: a collection error, not a scenario skipped."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness._shared._paths import LOG_FILE, SCENARIO_FILE

        raise self.CollectError(
            f"harness: {self.path.parent}: holds {LOG_FILE} but no {SCENARIO_FILE} (was it"
            " renamed or deleted? restore it from git, or remove the folder)"
        )


class ScenarioFile(pytest.File):
    """A recorded scenario folder; its files are decoded strictly when collected."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.scenarios._formats import load_fixture

        settings = self.config.stash[STATE]
        try:
            fixture = load_fixture(self.path.parent, scenario_only=settings.mode.writes)
        except FixtureError as error:
            raise self.CollectError(shown(f"harness: {error}")) from None
        yield ScenarioItem.from_parent(self, name=fixture.scenario.name)


class ScenarioItem(pytest.Item):
    """Replay, rebuild, shuffle and pin-check one recorded scenario."""

    def runtest(self) -> None:
        AgentHarness(self.config.stash[STATE], self).check(self.path.parent)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.name}"
