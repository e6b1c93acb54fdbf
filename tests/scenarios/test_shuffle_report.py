"""What the registration shuffle reports (issue 35): the seed it ran with, how many runs it made
(the reversed run is the first perturbed one and catches a race of plugins), and a report whose
reproduce line holds the seed and both registration orders, with the plugin that registered the
first tool out of place; as many load schedules as asked, one at least."""

from __future__ import annotations

from bench.transcript import Shape, scenario
from harness.scenarios._shuffle import ShuffleResult, schedules, shuffle_scenario
from tests.scenarios.test_shuffle_digests import racy

PLUGINS = ("plugin-00", "plugin-01", "plugin-02", "plugin-03", "plugin-04")


def test_a_racy_scenario_stops_at_the_reversed_run_and_says_how_to_reproduce_it() -> None:
    found = racy(4)
    result = shuffle_scenario(found, found.script, count=8, seed=3)
    assert (result.seed, result.runs, result.stable) == (3, 2, False)
    report = result.report
    assert report is not None and report.reproduce is not None
    assert report.reproduce.seed == 3
    assert (report.reproduce.order_a, report.reproduce.order_b) == (PLUGINS, PLUGINS[::-1])
    assert report.tool is not None and report.tool.startswith("late_")
    assert report.provenance == f'plugin "plugin-0{report.tool[-1]}"'


def test_a_stable_scenario_runs_every_order_asked() -> None:
    found = scenario(Shape(3, tools=6, plugins=3, system_bytes=200))
    result = shuffle_scenario(found, found.script, count=5, seed=9)
    assert (result.seed, result.runs, result.stable) == (9, 5, True)


def test_as_many_load_schedules_as_asked_one_at_least() -> None:
    names = list(PLUGINS)
    assert [s.start for s in schedules(names, 1, seed=4)] == [tuple(names)]
    assert [s.start for s in schedules(names, 0, seed=4)] == [tuple(names)]
    assert len(schedules(names, 6, seed=4)) == 6


def test_runs_that_differ_with_no_drift_found_are_not_stable() -> None:
    odd = ShuffleResult("s", 0, 2, None, "the runs differ but no header or request drift was found")
    assert not odd.stable
    assert ShuffleResult("s", 0, 2, None).stable
