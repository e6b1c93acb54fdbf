"""The perturbation's hold budget (issue 35): a perturbed run holds a sibling back while one
ranked before it is busy, and only until its budget ends. A program that polls for a held
sibling through something the proof cannot see as a poll (a worker thread: every answer is news
from outside, so the poller never counts as spinning) is late, never hung: the budget ends the
hold, the sibling runs, and the run completes with the same result as the natural one.

The poller gives up after a bounded number of polls, so a hold that never ends shows as a
different result instead of a hung test; and a hold that ends at once shows as the sibling
running before the poller gave up under a budget the polls cannot outlast."""

from __future__ import annotations

import asyncio
import time

from harness import prove_stable
from harness.prove.perturb import Mode, RunPlan, perturbed


def rendezvous(polls: int) -> list[str]:
    """`a_waiter` polls (through a worker thread) for the flag `b_setter` sets after one step of
    its own. In the forward order `a_waiter` ranks first and is busy the whole time it polls, so
    `b_setter` is held back behind it until the budget ends."""
    events: list[str] = []

    async def a_waiter(flag: list[bool]) -> None:
        for _ in range(polls):
            if flag:
                events.append("met")
                return
            await asyncio.to_thread(time.sleep, 0.002)
        events.append("gave up")

    async def b_setter(flag: list[bool]) -> None:
        await asyncio.sleep(0)
        flag.append(True)
        events.append("set")

    async def main() -> None:
        flag: list[bool] = []
        await asyncio.gather(a_waiter(flag), b_setter(flag))

    asyncio.run(main())
    return events


def test_the_budget_ends_a_hold_on_a_polled_sibling_and_the_proof_passes() -> None:
    # 2,000 polls of 2 ms outlast the budget (twice the natural run's few milliseconds) by far:
    # the forward run meets only because the budget let the setter go
    def build() -> dict[str, object]:
        return {"system": " ".join(rendezvous(2000))}

    result = prove_stable(build, permutations=3)
    assert [views[0].blocks["system"] for views in result.views] == ["set met"] * 3


def test_a_hold_lasts_until_its_budget() -> None:
    # under a budget the polls cannot reach, the setter is held until the poller gives up;
    # the natural and reversed runs hold nothing back
    forward = RunPlan(2, 3, 0, Mode.FORWARD)
    with perturbed(forward, 60.0):
        assert rendezvous(20) == ["gave up", "set"]
    for mode in (Mode.NATURAL, Mode.REVERSED):
        with perturbed(RunPlan(1, 3, 0, mode), 60.0):
            assert rendezvous(20) == ["set", "met"]
