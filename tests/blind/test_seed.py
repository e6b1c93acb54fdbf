"""Blind spots of the perturbation (issue 35): the seed changes the shuffled orders (and the same
seed gives them back), for the registration shuffle's load schedules and for every source's
random runs."""

from __future__ import annotations

from harness.prove.perturb._plan import ASYNCIO, Mode, plans
from harness.scenarios._shuffle import schedules

NAMES = [f"plugin{n}" for n in range(8)]


def test_the_seed_changes_the_shuffled_load_orders_and_reproduces_them() -> None:
    def starts(seed: int) -> list[tuple[str, ...]]:
        return [schedule.start for schedule in schedules(NAMES, 8, seed)]

    one, two = starts(1), starts(2)
    assert one[:2] == two[:2] == [tuple(NAMES), tuple(reversed(NAMES))]  # identity, reversed
    assert one[2:] != two[2:]  # the seeded ones differ
    assert one == starts(1)  # and a seed gives them back


def test_the_seed_changes_every_random_run_order_and_reproduces_it() -> None:
    def orders(seed: int) -> list[list[str]]:
        return [plan.arrange(ASYNCIO, NAMES) for plan in plans(8, seed) if plan.mode is Mode.RANDOM]

    assert len(orders(1)) == 5
    assert orders(1) != orders(2)
    assert orders(1) == orders(1)
    # the run and the source pick the stream too: two runs of one seed differ
    first, second = orders(1)[:2]
    assert first != second
