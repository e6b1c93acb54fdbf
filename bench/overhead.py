"""What `prove_stable` costs beyond the user's own build, on a 200-tool request.

The build is what an SDK user writes: collect the tools of every plugin in the order given,
sort them, and return the Anthropic Messages body. `harness.prove_stable(build, units)` calls it
once per permutation and judges the bodies; the same builds timed alone, interleaved with it,
are the user's cost. The difference per permutation is the harness's.

When `prove_stable` also takes a build with no units (the perturbation engine: it perturbs the
asyncio scheduling of an `async def` build itself), the same comparison gives what perturbing
adds to a concurrent loader's own time; before that engine exists, the figure is absent.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import harness
from bench.contest import Entrant, interleaved
from harness.fixture import Scenario

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
    perturbed_s: float | None  # prove_stable(async build) with no units, median
    loads_s: float | None  # the same number of async builds alone, median

    @property
    def overhead_ms_per_permutation(self) -> float:
        return max(self.prove_s - self.builds_s, 0.0) / self.permutations * 1000

    @property
    def perturbation_added_fraction(self) -> float | None:
        if self.perturbed_s is None or self.loads_s is None:
            return None
        return (self.perturbed_s - self.loads_s) / self.loads_s


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


def concurrent_build(units: Sequence[Unit]) -> Callable[[], Any]:
    """An `async def` build whose plugins load concurrently and register as they finish."""

    async def load(unit: Unit, into: list[dict[str, Any]]) -> None:
        for _ in range(len(unit.name) % 3 + 1):
            await asyncio.sleep(0)
        into.extend(unit.tools)

    async def build_async() -> Body:
        tools: list[dict[str, Any]] = []
        await asyncio.gather(*(load(unit, tools) for unit in units))
        return _body(tools)

    return build_async


def perturbs_without_units() -> bool:
    """Whether `prove_stable(build)` with no units exists (the perturbation engine)."""
    units = inspect.signature(harness.prove_stable).parameters.get("units")
    return units is not None and units.default is not inspect.Parameter.empty


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
    perturbing = perturbs_without_units()
    if perturbing:
        build_async = concurrent_build(units)

        def perturbed() -> None:
            harness.prove_stable(build_async, permutations=permutations, seed=0)

        def loads() -> None:
            for _ in range(permutations):
                asyncio.run(build_async())

        entrants += [Entrant("perturbed", perturbed), Entrant("loads", loads)]
    interleaved(entrants, rounds)
    medians = {e.name: e.median for e in entrants}
    return OverheadFigure(
        permutations,
        sum(len(u.tools) for u in units),
        medians["prove"],
        medians["builds"],
        medians.get("perturbed"),
        medians.get("loads"),
    )
