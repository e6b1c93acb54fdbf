"""What `prove_stable` says of its runs that no other test read (issue 35, hand-made mutants of
`harness.prove._stable`): a build that fails in a run is named with that run, its seed, its
order of units and its mode; a passing proof lists each run's order and its seed; the failure's
reproduce line holds the command and both orders, and the report the owner of the tool out of
place; folders read once are a note of the result; no permutations is one run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import (
    PerturbationWarning,
    StabilityResult,
    orders_of,
    prove_stable,
)
from tests.prove.test_proof_promises import request

NAMES = ["tool_0", "tool_1", "tool_2", "tool_3"]


def test_a_build_that_fails_in_a_run_is_named_with_that_run() -> None:
    def build(order: list[str]) -> dict[str, Any]:
        if order[0] == "tool_3":
            raise ValueError("no such plugin")
        return request(sorted(order))

    with pytest.raises(ValueError, match="no such plugin") as caught:
        prove_stable(build, NAMES, permutations=3, seed=5)
    assert caught.value.__notes__ == [
        "prove_stable: while building order 2 of 3 (seed 5): tool_3, tool_2, tool_1, tool_0"
        " [reversed run]"
    ]


def test_a_passing_proof_lists_each_runs_order_and_its_seed() -> None:
    result = prove_stable(lambda order: request(sorted(order)), NAMES, permutations=4, seed=3)
    assert result.seed == 3
    assert result.orders == orders_of(NAMES, 4, seed=3)
    assert len(result.observed) == 4
    # seed 0 unless told
    assert prove_stable(lambda order: request(sorted(order)), NAMES, permutations=2).seed == 0


def test_the_reproduce_line_holds_the_command_and_both_orders() -> None:
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(
            lambda order: request(list(order)),
            NAMES,
            permutations=2,
            seed=4,
            command="pytest tests/test_x.py --randomly-seed=4",
            owners={"tool_3": "fs"},
        )
    report = caught.value.report
    assert report is not None and report.reproduce is not None
    assert report.reproduce.command == "pytest tests/test_x.py --randomly-seed=4"
    assert (report.reproduce.order_a, report.reproduce.order_b) == (
        tuple(NAMES),
        tuple(reversed(NAMES)),
    )
    assert (report.label_a, report.label_b) == ("order A", "order B")
    # the first tool out of place, with the plugin the owners name
    assert (report.tool, report.provenance) == ("tool_3", 'plugin "fs"')
    assert "(seed 4, order 2 of 2, reversed)" in str(caught.value)


def test_folders_read_once_are_a_note_of_the_result_too(tmp_path: Path) -> None:
    for name in ("tools/beta", "tools/alpha", "skills/gamma", "skills/delta", "mcp/one"):
        (tmp_path / name).mkdir(parents=True)
    once: list[str] = []

    def cached() -> dict[str, Any]:
        if not once:  # read once, then kept: the later runs cannot be perturbed
            for folder in ("tools", "skills", "mcp"):
                once.extend(sorted(os.listdir(tmp_path / folder)))
        return request(once)

    with pytest.warns(PerturbationWarning):
        result: StabilityResult[Any] = prove_stable(cached, permutations=3)
    assert result.notes == [
        "the build read folders in its first run only (a cache?): their order could not be"
        f" perturbed (os.listdir of {tmp_path}/tools/; os.listdir of {tmp_path}/skills/);"
        " clear the cache in the build, or hand them in as units"
    ]


def test_a_proof_asked_for_no_permutations_still_runs_the_build_once() -> None:
    calls: list[int] = []

    def build() -> dict[str, Any]:
        calls.append(1)
        return request(NAMES)

    result: StabilityResult[Any] = prove_stable(build, permutations=0)
    assert (result.orders, len(calls)) == ([[]], 1)
    assert len(prove_stable(lambda order: request(order), NAMES, permutations=0).orders) == 1
