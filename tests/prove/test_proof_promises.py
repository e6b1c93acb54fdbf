"""What `prove_stable` promises about its runs (issue 35): eight orders by default (identity,
reversed, then shuffles the seed reproduces and another seed changes), as many as asked, the
fixture's seed and count unless the test overrides the count, and a race in the units' order
blamed on the units' order, on the failure's first line."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import (
    PerturbationWarning,
    make_prove_stable_fixture,
    orders_of,
    prove_stable,
)

NAMES = [f"tool_{n}" for n in range(8)]


def request(tools: list[str]) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "system": "You are an agent.",
        "tools": [{"name": name, "input_schema": {"type": "object"}} for name in tools],
        "messages": [{"role": "user", "content": "hi"}],
    }


def sorted_build(order: list[str]) -> dict[str, Any]:
    return request(sorted(order))


def racy_build(order: list[str]) -> dict[str, Any]:
    return request(list(order))


def test_a_proof_runs_eight_orders_by_default_the_first_two_identity_and_reversed() -> None:
    result = prove_stable(sorted_build, NAMES)
    assert len(result.orders) == 8
    assert result.orders[:2] == [NAMES, NAMES[::-1]]
    assert len({tuple(order) for order in result.orders[2:]}) > 1
    assert len(prove_stable(sorted_build, NAMES, permutations=3).orders) == 3


def test_the_seed_changes_the_shuffled_unit_orders_and_reproduces_them() -> None:
    one, two = orders_of(NAMES, 8, seed=1), orders_of(NAMES, 8, seed=2)
    assert one[:2] == two[:2] == [NAMES, NAMES[::-1]]
    assert one[2:] != two[2:]
    assert one == orders_of(NAMES, 8, seed=1)
    assert prove_stable(sorted_build, NAMES, seed=1).orders == one
    # as many orders as asked, one at least
    assert orders_of(NAMES, 1, seed=1) == [NAMES]
    assert orders_of(NAMES, 0, seed=1) == [NAMES]


def test_the_fixture_takes_its_seed_and_count_and_a_test_may_ask_for_another_count() -> None:
    prove = make_prove_stable_fixture(seed=7, permutations=4, command=None, capture=None)
    result = prove(sorted_build, NAMES)
    assert (result.seed, len(result.orders)) == (7, 4)
    assert result.orders == [[str(n) for n in order] for order in orders_of(NAMES, 4, seed=7)]
    assert len(prove(sorted_build, NAMES, permutations=2).orders) == 2


def test_a_race_in_the_units_order_is_blamed_on_it_first() -> None:
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(racy_build, NAMES[:4], permutations=3, seed=5)
    first = str(caught.value).splitlines()[0]
    assert first == (
        "cause: registration order of units"
        " (tool_0, tool_1, tool_2, tool_3 vs tool_3, tool_2, tool_1, tool_0)"
    )
    assert caught.value.seed == 5
    # the report's reproduce lines hold the seed and both orders
    report = caught.value.report
    assert report is not None and report.reproduce is not None
    assert report.reproduce.seed == 5
    assert report.reproduce.order_b == tuple(NAMES[:4][::-1])


def test_a_folder_read_again_in_some_perturbed_runs_is_no_cache_warning(tmp_path: Path) -> None:
    for name in ("beta", "alpha"):
        (tmp_path / name).mkdir()
    calls: list[int] = []

    def build() -> dict[str, Any]:
        calls.append(1)
        if len(calls) % 2:  # the natural run and every other one list the folder
            listed[:] = sorted(os.listdir(tmp_path))
        return request(listed)

    listed: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerturbationWarning)
        result = prove_stable(build, permutations=4)
    assert not any("a cache?" in note for note in result.notes)
    # near miss: listed in the first run only, a cache the proof could not perturb
    calls.clear()
    once: list[str] = []

    def cached() -> dict[str, Any]:
        if not once:
            once[:] = sorted(os.listdir(tmp_path))
        return request(once)

    with pytest.warns(PerturbationWarning, match="folders in its first run only"):
        prove_stable(cached, permutations=4)


def test_a_build_named_module_colon_function_is_proved_in_process() -> None:
    result = prove_stable(f"{__name__}:sorted_build", NAMES, permutations=2)
    assert result.orders == [NAMES, NAMES[::-1]]
    with pytest.raises(HeaderDrift):
        prove_stable(f"{__name__}:racy_build", NAMES, permutations=2)


def fixed_build() -> dict[str, Any]:
    return request(NAMES)


@pytest.mark.slow
def test_a_count_of_hash_seeds_is_drawn_from_the_proofs_seed() -> None:
    def drawn(seed: int) -> tuple[int, ...]:
        build = f"{__name__}:fixed_build"
        return prove_stable(build, permutations=1, hash_seeds=2, seed=seed).hash_seeds

    first = drawn(1)
    assert len(set(first)) == 2
    assert drawn(1) == first and drawn(2) != first
