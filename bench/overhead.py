"""What `prove_stable` costs beyond the user's own build, on a 200-tool request.

The build is what an SDK user writes: collect the tools of every plugin in the order given,
sort them, and return the Anthropic Messages body. `harness.prove_stable(build, units)` calls it
once per permutation and judges the bodies; the same builds timed alone, interleaved with it,
are the user's cost. The difference per permutation is the harness's.

`prove_stable` runs as users run it: every run under its perturbation of asyncio, thread pools,
folder listings and entry points (installed and removed around each build), the units in a new
order, the body observed as canonical bytes and compared with the natural run's. What the
perturbation costs a build that does use those sources is `bench/perturbation.py`'s figure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import harness
from bench.contest import Entrant, interleaved
from harness.scenarios._formats import Scenario

Body = dict[str, Any]


@dataclass(frozen=True)
class Unit:
    """A plugin as a build sees it: a name and its tools as plain dicts."""

    name: str
    tools: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class OverheadFigure:
    permutations: int
    tools: int
    prove_s: float  # prove_stable with the build, median
    builds_s: float  # the same number of builds alone, median

    @property
    def overhead_ms_per_permutation(self) -> float:
        return max(self.prove_s - self.builds_s, 0.0) / self.permutations * 1000


def units_of(scenario: Scenario) -> list[Unit]:
    return [
        Unit(
            plugin.name,
            tuple(
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in plugin.tools
            ),
        )
        for plugin in scenario.plugins
    ]


def _body(tools: list[dict[str, Any]]) -> Body:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are a careful agent.",
        "tools": sorted(tools, key=lambda tool: tool["name"]),
        "messages": [{"role": "user", "content": "hello"}],
    }


def build(order: list[Unit]) -> Body:
    """The user's build: every plugin's tools in the order given, sorted, as a request body."""
    return _body([tool for unit in order for tool in unit.tools])


def measure(scenario: Scenario, permutations: int, rounds: int) -> OverheadFigure:
    units = units_of(scenario)
    rng = random.Random(0)
    orders = []
    for _ in range(permutations):
        order = list(units)
        rng.shuffle(order)
        orders.append(order)

    def prove() -> None:
        harness.prove_stable(build, units, permutations=permutations, seed=0)

    def builds() -> None:
        for order in orders:
            build(order)

    entrants = [Entrant("prove", prove), Entrant("builds", builds)]
    interleaved(entrants, rounds)
    medians = {e.name: e.median for e in entrants}
    return OverheadFigure(
        permutations,
        sum(len(u.tools) for u in units),
        medians["prove"],
        medians["builds"],
    )
