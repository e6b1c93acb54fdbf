"""What the registration shuffle promises that no other test read (issue 35, hand-made mutants
of `harness.scenarios._shuffle`): the seeded load schedules are each an order of their own, and
vary how long each plugin takes to load, not only which starts first; a drift that reaches only
the conversation (two plugins registering one tool alike, the last one's result answering) is
caught; the report reads order A then order B; the defaults are 16 runs of seed 0; the reproduce
line carries the command it was given; the identity run is the plugins in the order declared;
a fixture is shuffled on its recorded answers."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from bench.transcript import Shape, scenario
from harness.agent._llm import ScriptedReply
from harness.scenarios._formats import AnswersFile, Fixture, PluginSpec, Scenario, load_fixture
from harness.scenarios._shuffle import schedules, shuffle_fixture, shuffle_scenario
from tests.scenarios.test_shuffle_digests import racy
from tests.support.paths import ROOT

NAMES = [f"plugin{n}" for n in range(8)]


def test_the_seeded_load_schedules_are_each_an_order_of_their_own() -> None:
    seeded = schedules(NAMES, 8, seed=1)[2:]
    assert len({schedule.start for schedule in seeded}) == 6
    # and they vary how many steps each plugin's import takes: the registration order is not
    # always the start order
    assert any(schedule.completion_order(NAMES) != list(schedule.start) for schedule in seeded)


def mirrored_tool() -> Scenario:
    """The shipped tool-turn scenario, with a second plugin registering `list_dir` under the
    same schema and another result: the header is the same whichever loads last, but the
    conversation holds the result of the one that did."""
    raw = json.loads((ROOT / "fixtures" / "tool-turn" / "scenario.json").read_text())
    found = msgspec.convert(raw, Scenario)
    listing = next(tool for tool in found.plugins[0].tools if tool.name == "list_dir")
    twin = msgspec.structs.replace(listing, result="nothing here\n")
    mirror = PluginSpec(name="fs-mirror", tools=(twin,))
    return msgspec.structs.replace(found, plugins=(*found.plugins, mirror))


def test_a_drift_only_the_conversation_shows_is_caught() -> None:
    found = mirrored_tool()
    result = shuffle_scenario(found, found.script, count=4, seed=1)
    assert (result.stable, result.runs, result.message) == (False, 2, "")
    report = result.report
    assert report is not None
    assert (report.verdict, report.block) == ("messages_changed", "messages")
    assert report.pointer.startswith("/messages/2/content/0")


def test_the_report_reads_order_a_then_order_b() -> None:
    found = racy(4)
    result = shuffle_scenario(found, found.script, count=8, seed=3, command="harness check x")
    report = result.report
    assert report is not None and report.reproduce is not None
    # order A is the plugins as declared, order B reversed: the late tools follow them
    assert report.tools_a[-3:] == ("late_0", "late_1", "late_2")
    assert report.tools_b[-3:] == ("late_2", "late_1", "late_0")
    assert report.reproduce.command == "harness check x"
    # the report is of the first request that differs (not of its header): the conversation
    # after the tools is lost with them
    assert report.invalidated == ("tools", "system", "messages")
    assert result.message == ""


def test_the_identity_run_loads_the_plugins_in_the_order_declared() -> None:
    found = racy(4)
    declared = tuple(reversed(found.plugins))
    result = shuffle_scenario(msgspec.structs.replace(found, plugins=declared), found.script)
    report = result.report
    assert report is not None and report.reproduce is not None
    assert report.reproduce.order_a == tuple(plugin.name for plugin in declared)


def test_the_shuffle_runs_sixteen_orders_of_seed_zero_unless_told() -> None:
    found: Any = scenario(Shape(1, tools=4, plugins=3, system_bytes=100))
    result = shuffle_scenario(found, found.script)
    assert (result.seed, result.runs, result.stable) == (0, 16, True)


def test_a_fixture_is_shuffled_on_its_recorded_answers_with_the_count_and_seed_asked() -> None:
    found = mirrored_tool()
    recorded = AnswersFile(scenario=found.name, answers=found.script)  # they call list_dir
    edited = msgspec.structs.replace(found, script=(ScriptedReply(text="Nothing to do."),))
    fixture = Fixture(str(ROOT / "fixtures" / "tool-turn"), edited, None, None, recorded)
    result = shuffle_fixture(fixture, count=4, seed=7)
    assert (result.seed, result.runs, result.stable) == (7, 2, False)
    shipped = load_fixture(ROOT / "fixtures" / "text-turn")
    assert shuffle_fixture(shipped, count=3).runs == 3
    result = shuffle_fixture(shipped)
    assert (result.seed, result.runs, result.stable) == (0, 16, True)
