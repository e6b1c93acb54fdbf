"""The order a perturbed run imposes on sibling tasks that share one label (issue 35): tasks whose
first argument names nothing (`load(into, name)`: a list first) are told apart by how many of
that label came before, so the reversed run finishes them in reverse creation order and each
random run draws each one its own place."""

from __future__ import annotations

import asyncio

from harness.prove.perturb import ASYNCIO, Mode, perturbed, plans


async def loader() -> list[str]:
    done: list[str] = []

    async def load(into: list[str], name: str) -> None:
        await asyncio.sleep(0)
        into.append(name)

    await asyncio.gather(*(load(done, name) for name in "abcdef"))
    return done


def test_siblings_of_one_label_take_the_runs_order_by_their_creation() -> None:
    seen = {}
    for plan in plans(6, seed=3):
        with perturbed(plan) as journal:
            seen.setdefault(plan.mode, []).append(asyncio.run(loader()))
        assert journal.finished_order[ASYNCIO].count("load") == 6
    assert seen[Mode.FORWARD] == [list("abcdef")]
    assert seen[Mode.REVERSED] == [list("fedcba")]
    randoms = seen[Mode.RANDOM]
    assert len({tuple(order) for order in randoms}) == 3  # each run draws its own
    assert all(sorted(order) == list("abcdef") for order in randoms)
