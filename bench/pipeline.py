"""Our pipeline on a recorded transcript: what `harness check` does for one scenario.

Load the fixture files (strictly, with the secret scan), replay the scenario on its recorded
answers through the reference runtime with the rebuild check at every dispatch, and compare the
log, the requests and the pins. A replay that finds anything is an error here: a benchmark of a
check that fails measures nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.timing import timed
from harness.fixture import load_fixture
from harness.replay import replay_fixture


@dataclass(frozen=True)
class CheckFigure:
    """The best of several load + replay runs of one transcript."""

    steps: int
    load_s: float
    replay_s: float

    @property
    def total_s(self) -> float:
        return self.load_s + self.replay_s

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.total_s


def measure(folder: Path, repeats: int) -> CheckFigure:
    best: CheckFigure | None = None
    for _ in range(max(repeats, 1)):
        load_s, fixture = timed(lambda: load_fixture(folder))
        replay_s, result = timed(lambda: replay_fixture(fixture))  # noqa: B023 - called at once
        if not result.ok:
            found = "; ".join(finding.message for finding in result.findings[:3])
            raise AssertionError(f"{folder}: the replay found drift: {found}")
        figure = CheckFigure(result.steps, load_s, replay_s)
        if best is None or figure.total_s < best.total_s:
            best = figure
    assert best is not None
    return best
