"""Many sibling tasks under one parent: the order still holds for every one of them.

A perturbed run parks the wake-ups it keeps back per parent, in rank order, and looks again only
at the first of each parent (so a pass costs what changed, not how many tasks wait). These
cases attack that: fifty loaders whose labels share a long prefix, where only the reversed run
can show the race (the natural run finishes in label order already), loaders that hand their
registration to a task of their own and return (their parent finishes while the registrations
wait), and a parked task cancelled while it waits.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import prove_stable

# Each test runs a proof of several runs, some with real sleeps: up to a second each.
pytestmark = pytest.mark.slow

SEEDS = [1, 7, 2026]
NAMES = [f"plugin_with_a_long_shared_name_{index:02d}" for index in range(50)]


def request(tools: list[str]) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "system": "You are an agent.",
        "tools": [{"name": n, "description": n, "input_schema": {}} for n in tools],
        "messages": [{"role": "user", "content": "hi"}],
    }


def loaders(fix: Any) -> Any:
    async def build() -> dict[str, Any]:
        tools: list[str] = []

        async def load(name: str) -> None:
            for _ in range(1 + NAMES.index(name) // 10):  # later names await more often
                await asyncio.sleep(0)
            tools.append(name)

        await asyncio.gather(*(load(name) for name in NAMES))
        return request(fix(tools))

    return build


@pytest.mark.parametrize("seed", SEEDS)
def test_fifty_loaders_race_in_the_reversed_run(seed: int) -> None:
    # Naturally they finish in label order, as the forward run does: only the reversed run
    # (the one other run here) can show that their order reaches the request.
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(loaders(list), permutations=2, seed=seed)
    assert "cause: asyncio completion order" in str(caught.value)


@pytest.mark.parametrize("seed", SEEDS)
def test_fifty_loaders_that_sort_pass(seed: int) -> None:
    prove_stable(loaders(sorted), permutations=4, seed=seed)


def spawning(fix: Any) -> Any:
    async def build() -> dict[str, Any]:
        tools: list[str] = []
        registrations: list[asyncio.Task[None]] = []

        async def register(name: str) -> None:
            for _ in range(1 + NAMES.index(name) % 3):
                await asyncio.sleep(0.001)
            tools.append(name)

        async def load(name: str) -> None:  # hands its registration over and returns
            registrations.append(asyncio.create_task(register(name)))

        await asyncio.gather(*(load(name) for name in NAMES[:12]))
        await asyncio.gather(*registrations)
        return request(fix(tools))

    return build


@pytest.mark.parametrize("seed", SEEDS)
def test_registrations_outliving_their_loaders_race(seed: int) -> None:
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(spawning(list), seed=seed)
    assert "cause: asyncio completion order" in str(caught.value)


@pytest.mark.parametrize("seed", SEEDS)
def test_registrations_outliving_their_loaders_pass_once_sorted(seed: int) -> None:
    prove_stable(spawning(sorted), seed=seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_parked_task_cancelled_by_its_sibling_is_not_held(seed: int) -> None:
    # In the forward run `b_waiter` waits behind `a_keeper`, which is busy sleeping; the keeper
    # cancels it and looks a while later. Cancellation is never held: the waiter has seen it by
    # then in every run, as it has in the natural one.
    async def build() -> dict[str, Any]:
        events: list[str] = []
        cancelled = asyncio.Event()
        tasks: dict[str, asyncio.Task[None]] = {}

        async def b_waiter() -> None:
            try:
                await asyncio.sleep(0)
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        async def a_keeper() -> None:
            await asyncio.sleep(0.005)
            tasks["waiter"].cancel()
            await asyncio.sleep(0.05)
            events.append(f"waiter cancelled: {cancelled.is_set()}")

        tasks["waiter"] = asyncio.create_task(b_waiter())
        await asyncio.gather(a_keeper(), tasks["waiter"], return_exceptions=True)
        return request(events)

    prove_stable(build, seed=seed)
