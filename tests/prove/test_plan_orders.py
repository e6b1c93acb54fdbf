"""The orders a proof's runs take, per source (issue 35): natural, reversed, forward, then seeded
random; a random order depends on the seed, the run and the source, the same in any process (a
printed seed reproduces it later); the deterministic runs a cause is looked for against keep the
handed-in orders as given and put every ambient source forward."""

from __future__ import annotations

from harness.prove.perturb import ASYNCIO, FILESYSTEM, LOAD_SCHEDULE, THREADS, UNITS, Mode, plans

ITEMS = ["c", "a", "d", "b"]


def test_the_runs_are_natural_reversed_forward_then_random() -> None:
    every = plans(5, seed=7)
    assert [plan.mode for plan in every] == [
        Mode.NATURAL,
        Mode.REVERSED,
        Mode.FORWARD,
        Mode.RANDOM,
        Mode.RANDOM,
    ]
    assert [plan.describe() for plan in every[:2]] == [
        "run 1 of 5 (natural)",
        "run 2 of 5 (reversed)",
    ]
    natural, reverse, forward = every[:3]
    assert natural.arrange(ASYNCIO, ITEMS, key=str) == ITEMS  # as the program has them
    assert reverse.arrange(ASYNCIO, ITEMS, key=str) == ITEMS[::-1]
    assert forward.arrange(ASYNCIO, ITEMS, key=str) == ["a", "b", "c", "d"]  # by the key
    assert forward.arrange(ASYNCIO, ITEMS) == ITEMS  # no key: the canonical order is as given
    assert [p.perturbs(THREADS) for p in every] == [False, True, True, True, True]
    assert [len(plans(count, 1)) for count in (0, 1, 2, 9)] == [1, 1, 2, 9]


def test_a_seed_reproduces_each_random_order_in_any_process() -> None:
    # recorded from another interpreter: the order a printed seed gives back, run after run
    run = plans(5, seed=7)[3]
    assert run.arrange(ASYNCIO, list("abcdef")) == ["a", "e", "b", "d", "f", "c"]
    assert run.arrange(THREADS, list("abcdef")) == ["c", "e", "d", "a", "b", "f"]
    # the stream goes on within a run: a second listing of a source is drawn afresh
    assert run.arrange(ASYNCIO, list("abcdef")) == ["a", "b", "f", "e", "c", "d"]


def test_the_deterministic_runs_of_a_cause_search() -> None:
    reverse = plans(3, seed=7)[1]
    neutral = reverse.neutral()
    # handed-in orders as given, every ambient source forward
    assert neutral.arrange(UNITS, ITEMS, key=str) == ITEMS
    assert neutral.arrange(LOAD_SCHEDULE, ITEMS, key=str) == ITEMS
    assert neutral.arrange(ASYNCIO, ITEMS, key=str) == ["a", "b", "c", "d"]
    assert not neutral.perturbs(UNITS) and neutral.perturbs(FILESYSTEM)
    # one source in this run's order (reversed), the rest neutral
    alone = reverse.neutral_except(ASYNCIO)
    assert alone.arrange(ASYNCIO, ITEMS, key=str) == ITEMS[::-1]
    assert alone.arrange(THREADS, ITEMS, key=str) == ["a", "b", "c", "d"]
    assert alone.arrange(UNITS, ITEMS, key=str) == ITEMS
    # or in the order asked for; the canonical order reversed is backward
    back = reverse.neutral_except(ASYNCIO, Mode.BACKWARD)
    assert back.arrange(ASYNCIO, ITEMS, key=str) == ["d", "c", "b", "a"]
    # everything as the program orders it but one source
    natural = reverse.natural_except(THREADS, Mode.FORWARD)
    assert natural.arrange(THREADS, ITEMS, key=str) == ["a", "b", "c", "d"]
    assert natural.arrange(ASYNCIO, ITEMS, key=str) == ITEMS
    assert not natural.perturbs(ASYNCIO) and natural.perturbs(THREADS)
