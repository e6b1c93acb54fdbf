"""The shuffle proof at scale: 50 plugins, 200 tools, many registration orders.

Two ways the harness proves a header stable under registration order:
`shuffle_scenario` re-runs a whole recorded scenario under N load schedules (start order and
import delays of the concurrent loader) and compares every request; `prove_stable` calls a build
with N permutations of the plugins and compares the headers it returns (the pytest fixture).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.timing import timed
from harness.agent import Header, ScriptedAdapter, ScriptedReply
from harness.prove._stable import prove_stable
from harness.scenarios._formats import PluginSpec, Scenario
from harness.scenarios._run import run_sync
from harness.scenarios._shuffle import shuffle_scenario


@dataclass(frozen=True)
class ShuffleFigure:
    how: str
    permutations: int
    plugins: int
    tools: int
    steps: int  # model requests per permutation
    seconds: float

    @property
    def per_permutation_s(self) -> float:
        return self.seconds / self.permutations


def _tools(scenario: Scenario) -> int:
    return sum(len(plugin.tools) for plugin in scenario.plugins)


def shuffle(
    scenario: Scenario, answers: Sequence[ScriptedReply], permutations: int
) -> ShuffleFigure:
    seconds, result = timed(lambda: shuffle_scenario(scenario, answers, count=permutations, seed=0))
    if not result.stable:
        raise AssertionError(f"{scenario.name}: the shuffle found drift: {result.message}")
    return ShuffleFigure(
        "shuffle_scenario",
        result.runs,
        len(scenario.plugins),
        _tools(scenario),
        len(answers),
        seconds,
    )


def one_step(scenario: Scenario) -> Scenario:
    """The scenario cut to one turn of one step: what a header build costs."""
    return Scenario(
        name=scenario.name + "-one-step",
        app=scenario.app,
        config=scenario.config,
        variables=scenario.variables,
        plugins=scenario.plugins,
        loops=(("hello",),),
        script=(ScriptedReply(text="hi"),),
        pin=scenario.pin,
    )


def prove(scenario: Scenario, permutations: int) -> ShuffleFigure:
    single = one_step(scenario)

    def build(order: list[PluginSpec]) -> Header:
        run = run_sync(
            single,
            ScriptedAdapter(single.script),
            plugin_order=[plugin.name for plugin in order],
            rebuild=False,
        )
        return run.headers[0][1]

    seconds, _ = timed(
        lambda: prove_stable(build, list(scenario.plugins), permutations=permutations, seed=0)
    )
    return ShuffleFigure(
        "prove_stable", permutations, len(scenario.plugins), _tools(scenario), 1, seconds
    )
