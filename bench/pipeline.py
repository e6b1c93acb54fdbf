"""Our pipeline on a recorded transcript: what `harness check` does for one scenario.

Load the fixture files (strictly, with the secret scan), replay the scenario on its recorded
answers through the reference runtime with the rebuild check at every dispatch, and compare the
log, the requests and the pins. A replay that finds anything is an error here: a benchmark of a
check that fails measures nothing.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.agent import StepStart
from harness.scenarios._formats import Fixture, load_fixture
from harness.scenarios._replay import replay_fixture


def replay_ok(fixture: Fixture) -> bool:
    """Replay and check `fixture`: True, or AssertionError on any finding."""
    result = replay_fixture(fixture)
    if not result.ok:
        found = "; ".join(finding.message for finding in result.findings[:3])
        raise AssertionError(f"{fixture.path}: the replay found drift: {found}")
    return True


def steps_of(fixture: Fixture) -> int:
    """How many steps the recording holds (counted once, outside any timing)."""
    assert fixture.log is not None
    return sum(isinstance(event, StepStart) for event in fixture.log.events)


@dataclass
class Ours:
    """Load + replay + check of one transcript, timed in parts, run as often as asked."""

    folder: Path
    steps: int = 0
    loads: list[float] = field(default_factory=list)
    replays: list[float] = field(default_factory=list)

    def run(self) -> float:
        start = time.perf_counter()
        fixture = load_fixture(self.folder)
        loaded = time.perf_counter()
        replay_ok(fixture)
        done = time.perf_counter()
        self.steps = self.steps or steps_of(fixture)
        self.loads.append(loaded - start)
        self.replays.append(done - loaded)
        return done - start

    def figure(self) -> CheckFigure:
        return CheckFigure(
            self.steps, statistics.median(self.loads), statistics.median(self.replays)
        )


@dataclass(frozen=True)
class CheckFigure:
    """Medians of several load + replay runs of one transcript."""

    steps: int
    load_s: float
    replay_s: float

    @property
    def total_s(self) -> float:
        return self.load_s + self.replay_s

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.total_s
