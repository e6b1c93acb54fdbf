"""The registration shuffle compares runs by the digests the recorder keeps, and still finds drift.

Each run's requests are kept as the requests file keeps them (their fields, their messages as a
running SHA-256), so comparing two runs costs what each step adds, never the whole conversation
again: the bytes the comparison encodes grow with the number of steps, not its square. A run
that differs is made again whole for the report.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from bench.transcript import Shape, scenario
from harness.scenarios import _shuffle
from harness.scenarios._formats import AppendInLoadOrder, ToolSpec
from harness.scenarios._shuffle import shuffle_scenario


def racy(steps: int) -> Any:
    """The bench's generated agent, with three plugins appending a tool each in the order they
    finished loading (after the authoritative order, so nothing sorts them)."""
    base = scenario(Shape(steps, tools=20, plugins=5, system_bytes=2_000))
    plugins = list(base.plugins)
    for index in range(3):
        late = ToolSpec(name=f"late_{index}", description=f"Late tool {index}.")
        listener = AppendInLoadOrder(tools=(late,))
        plugins[index] = msgspec.structs.replace(plugins[index], listeners=(listener,))
    return msgspec.structs.replace(base, plugins=tuple(plugins))


def test_a_racy_scenario_fails_the_shuffle_with_a_whole_report() -> None:
    found = racy(6)
    result = shuffle_scenario(found, found.script, count=8, seed=1)
    assert not result.stable
    assert result.report is not None
    assert result.report.verdict == "tools_changed"
    assert "late_" in result.report.to_text()
    assert (result.report.label_a, result.report.label_b) == ("order A", "order B")


def test_the_same_scenario_without_the_race_passes() -> None:
    """The near miss: the same agent, its tools ordered by the system prompt alone."""
    found = scenario(Shape(6, tools=20, plugins=5, system_bytes=2_000))
    assert shuffle_scenario(found, found.script, count=8, seed=1).stable


@pytest.mark.parametrize("steps", [60])
def test_comparing_runs_encodes_bytes_linear_in_the_steps(
    steps: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per step, the comparison encodes what the step adds: twice the steps, about twice the
    bytes (the whole message lists, encoded per request, gave about four times)."""
    encoded: list[int] = []
    plain = _shuffle._encode

    def counted(value: Any) -> bytes:
        data = plain(value)
        encoded.append(len(data))
        return data

    monkeypatch.setattr(_shuffle, "_encode", counted)
    totals = []
    for size in (steps, 2 * steps):
        encoded.clear()
        found = scenario(Shape(size, tools=20, plugins=5, system_bytes=2_000))
        assert shuffle_scenario(found, found.script, count=3, seed=1).stable
        totals.append(sum(encoded))
    assert totals[1] <= 2.3 * totals[0], totals
