"""Prove a header stable: the same bytes under every order the program's own sources can take.

`prove_stable(build)` runs `build` (a plain function or an `async def`, taking no argument) N
times under seeded perturbations of the program's own sources of order (`harness.prove.perturb`):
the order in which its asyncio tasks finish whatever their latencies (sleeps, threads, helper
processes, sockets), the order of thread jobs and threads, folder listings and entry points. A
perturbed run holds work back for at most twice the natural run's time, which is measured here.
`prove_stable(build, units)` also hands `build`
the units (tool functions, plugin objects, MCP server names) in N orders. Run 1 is natural, run 2
reversed, run 3 forward, the rest seeded random, so a race between two loaders through any
source is caught at the default count for every seed. A failure names its cause first
(`cause: asyncio completion order (fs, web, shell vs shell, web, fs)`), then the drift report.

It asserts stability, not alphabetical order: a project may keep its own deliberate order
(built-ins first, say) as long as no source of entropy can move it.

What is judged is what was sent: the requests the build sent through a capture session, else
what it returned (see `harness.prove._builds`). A difference that lies after an Anthropic request's
last `cache_control` breakpoint does not touch the cached prefix: it is kept as a note.

Python's own entropy counts too: with `hash_seeds=(0, 1, 2, 3)` the build also runs in one
subprocess per `PYTHONHASHSEED` value (`harness.prove._hashseed`), because `set` iteration order is
fixed inside one process and differs between processes. That needs an importable build (a
module-level function, or a "module:function" string) and units a subprocess can rebuild (names,
numbers, or module-level objects).
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from harness._shared._views import CacheView, canonical_bytes
from harness.drift._parts import Reproduce
from harness.prove._builds import (
    NotAHeader,
    Observed,
    call_build,
    observe,
    observed_of,
    resolve,
    unit_name,
    view_of_value,
)
from harness.prove._run_diff import HeaderDrift, difference
from harness.prove.perturb._engine import find_cause, perturbed
from harness.prove.perturb._journal import Journal
from harness.prove.perturb._plan import (
    ENTRY_POINTS,
    FILESYSTEM,
    LOAD_SCHEDULE,
    SOURCES,
    UNITS,
    Mode,
    RunPlan,
    plans,
)
from harness.prove.perturb._run import DEFAULT_BUDGET_S, budget_after

if TYPE_CHECKING:
    from harness.capture._proof import ProofRun
    from harness.capture._session import CaptureSession

__all__ = [
    "HeaderDrift",
    "NotAHeader",
    "Observed",
    "PerturbationWarning",
    "StabilityResult",
    "make_prove_stable_fixture",
    "observe",
    "orders_of",
    "prove_stable",
    "resolve",
    "unit_name",
    "view_of_value",
]

U = TypeVar("U")

DEFAULT_PERMUTATIONS = 8
CAUSE_BUDGET = 3  # the budget of a run that looks for the cause, in natural budgets


def orders_of(units: Sequence[U], count: int, seed: int) -> list[list[U]]:
    """`count` orders of `units`: identity, reversed, then seeded shuffles (their own RNG)."""
    rng = random.Random(seed)
    orders = [list(units), list(reversed(units))]
    while len(orders) < count:
        order = list(units)
        rng.shuffle(order)
        orders.append(order)
    return orders[: max(count, 1)]


@dataclass(frozen=True)
class StabilityResult(Generic[U]):
    """What a proof that passed saw: the seed, each run's order of units, its requests."""

    seed: int
    orders: list[list[str]]
    observed: list[list[Observed]] = field(repr=False)
    notes: list[str] = field(default_factory=list)
    hash_seeds: tuple[int, ...] = ()

    @property
    def views(self) -> list[list[CacheView]]:
        return [[item.view for item in run] for run in self.observed]

    @property
    def header_bytes(self) -> list[bytes]:
        return [b"".join(canonical_bytes(v) for v in views) for views in self.views]

    def __await__(self) -> Generator[Any, None, StabilityResult[U]]:
        """`await prove_stable(build)` in an async test: the proof has run; this is its result."""
        return _itself(self).__await__()


async def _itself(result: StabilityResult[U]) -> StabilityResult[U]:
    return result


def _build_callable(build: Callable[..., Any] | str) -> Callable[..., Any]:
    if isinstance(build, str):
        found = resolve(build)
        if not callable(found):
            raise TypeError(f"{build!r} is not callable")
        return found  # type: ignore[no-any-return]
    return build


@dataclass
class _Proof(Generic[U]):
    """One proof's runs: how to run a plan, and what the natural run produced."""

    function: Callable[..., Any]
    units: Sequence[U] | None
    orders: list[list[U]]
    names: list[list[str]]
    proof: ProofRun | None
    captured: Callable[[], list[CacheView]] | None
    notes: list[str]
    budget_s: float = DEFAULT_BUDGET_S  # set from the natural run's time
    finding: bool = False  # re-running for the cause: the budget stays as the search set it

    def order_of(self, plan: RunPlan) -> list[U]:
        if plan.mode_of(UNITS) is Mode.BACKWARD:
            return list(reversed(self.orders[0]))
        return self.orders[plan.index] if plan.perturbs(UNITS) else self.orders[0]

    def run(self, plan: RunPlan) -> tuple[list[Observed], Journal]:
        order = self.order_of(plan)
        args = () if self.units is None else (list(order),)
        started = time.monotonic()
        try:
            if self.proof is None:
                with perturbed(plan, self.budget_s) as journal:
                    result = call_build(self.function, *args)
                sent = None
            else:
                with (
                    self.proof.build(plan.index) as sent,
                    perturbed(plan, self.budget_s) as journal,
                ):
                    result = call_build(self.function, *args)
            if plan.mode is Mode.NATURAL and not plan.overrides and not self.finding:
                self.budget_s = budget_after(time.monotonic() - started)
            return observed_of(
                result, None if sent is None else list(sent), self.captured, self.notes
            ), journal
        except Exception as error:
            shown = f": {', '.join(unit_name(u) for u in order)}" if self.units else ""
            error.add_note(
                f"prove_stable: while building order {plan.index + 1} of {plan.count}"
                f" (seed {plan.seed}){shown} [{plan.mode.value} run]"
            )
            raise


def prove_stable(
    build: Callable[..., Any] | str,
    units: Sequence[U] | None = None,
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    owners: Mapping[str, str | None] | None = None,
    command: str | None = None,
    captured: Callable[[], list[CacheView]] | None = None,
    capture: CaptureSession | None = None,
    hash_seeds: Sequence[int] | int | None = None,
    timeout: float = 120.0,
) -> StabilityResult[U]:
    """Run `build` under `permutations` perturbed runs; raise HeaderDrift if its bytes move.

    `units`: hand `build` these in a new order each run (without them, `build` takes no
    argument). `capture`: the session whose clients the build sends through (every run is
    answered by position from the first run's answers). `captured`, the older hook, is called
    after each build that returned None and sent nothing through `capture`, and must return the
    views of the requests that build sent. `hash_seeds`: also run the build once per
    PYTHONHASHSEED value in a subprocess and compare those runs (a number: that many values
    drawn from `seed`; `set` order differs between two hash seeds only now and then, so more
    values catch more: 8 miss a two-element set about once in 128).
    """
    __tracebackhide__ = True
    count = max(permutations, 1)
    orders = orders_of(units, count, seed) if units is not None else [[] for _ in range(count)]
    names = [[unit_name(u) for u in order] for order in orders]
    proof = capture.proving(names[0]) if capture is not None else None
    runs = _Proof(_build_callable(build), units, orders, names, proof, captured, [])
    every = plans(count, seed)
    base, natural = runs.run(every[0])
    results = [base]
    journals = []
    for plan in every[1:]:
        observed, journal = runs.run(plan)
        results.append(observed)
        journals.append(journal)
        drift = _judge(base, observed, plan, runs, owners=owners, command=command)
        if drift is not None:
            _name_the_cause(drift, plan, runs, units is not None)
            raise drift
    _warn_if_untouched(natural, journals, runs.notes)
    seeds = _hash_seeds(hash_seeds, seed)
    if seeds:
        _prove_hash_seeds(
            build,
            units,
            seeds=seeds,
            seed=seed,
            owners=owners,
            command=command,
            proof=proof,
            capture=capture,
            names=names[0],
            notes=runs.notes,
            timeout=timeout,
        )
    shown = [runs.names[plan.index] for plan in every]
    return StabilityResult(seed, shown, results, runs.notes, seeds)


def _hash_seeds(hash_seeds: Sequence[int] | int | None, seed: int) -> tuple[int, ...]:
    if isinstance(hash_seeds, int):
        rng = random.Random(f"{seed}:hash-seeds")
        return tuple(rng.sample(range(2**32 - 1), hash_seeds))
    return tuple(hash_seeds or ())


class PerturbationWarning(UserWarning):
    """The proof could not perturb a source the build uses (it read it once, then cached it)."""


def _warn_if_untouched(natural: Journal, later: Sequence[Journal], notes: list[str]) -> None:
    """A source the natural run used and no perturbed run touched was read once and cached:
    its first order is kept for the whole process, so the proof could not move it."""
    for source, what in ((FILESYSTEM, "folders"), (ENTRY_POINTS, "entry points")):
        if natural.places.get(source) and later and not any(j.places.get(source) for j in later):
            note = (
                f"the build read {what} in its first run only (a cache?): their order could not"
                f" be perturbed ({'; '.join(natural.places[source][:2])}); clear the cache in"
                " the build, or hand them in as units"
            )
            notes.append(note)
            warnings.warn(PerturbationWarning(note), stacklevel=3)


def _judge(
    base: list[Observed],
    observed: list[Observed],
    plan: RunPlan,
    runs: _Proof[Any],
    *,
    owners: Mapping[str, str | None] | None,
    command: str | None,
) -> HeaderDrift | None:
    names = runs.names
    reproduce = Reproduce(
        seed=plan.seed,
        order_a=tuple(names[0]),
        order_b=tuple(names[plan.index] if plan.perturbs(UNITS) else names[0]),
        command=command,
    )
    return difference(
        base,
        observed,
        owners=owners,
        reproduce=reproduce,
        labels=("order A", "order B"),
        what=(
            "header drift under permutation",
            f"(seed {plan.seed}, order {plan.index + 1} of {plan.count}, {plan.mode.value})",
        ),
        notes=runs.notes,
    )


def _name_the_cause(drift: HeaderDrift, plan: RunPlan, runs: _Proof[Any], with_units: bool) -> None:
    """Find the source that moves the bytes alone, and put it on the drift's first lines."""

    def differs(reference: RunPlan, candidate: RunPlan) -> tuple[Journal, Journal] | None:
        first, first_journal = runs.run(reference)
        second, second_journal = runs.run(candidate)
        moved = difference(
            first, second, owners=None, reproduce=Reproduce(), labels=("a", "b"),
            what=("", ""), notes=[],
        )  # fmt: skip
        return (first_journal, second_journal) if moved is not None else None

    in_play = [
        source for source in SOURCES if source != LOAD_SCHEDULE and (with_units or source != UNITS)
    ]
    orders = (runs.names[0], runs.names[plan.index])
    # On a loaded machine held-back work may be let go before its turn: the search gives every
    # run three times the budget, and judges each source on several pairs (`find_cause`).
    budget, runs.budget_s, runs.finding = runs.budget_s, runs.budget_s * CAUSE_BUDGET, True
    try:
        cause = find_cause(plan, differs, in_play=in_play, orders=orders)
    finally:
        runs.budget_s, runs.finding = budget, False
    drift.seed = plan.seed
    if with_units:
        drift.orders = (tuple(runs.names[0]), tuple(runs.names[plan.index]))
    drift.add_cause(cause.text)


def _prove_hash_seeds(
    build: Callable[..., Any] | str,
    units: Sequence[U] | None,
    *,
    seeds: tuple[int, ...],
    seed: int,
    owners: Mapping[str, str | None] | None,
    command: str | None,
    proof: Any,
    capture: CaptureSession | None,
    names: list[str],
    notes: list[str],
    timeout: float,
) -> None:
    __tracebackhide__ = True
    from harness.prove._hashseed import iter_under_seeds

    reference = proof.reference_file() if proof is not None else None
    runs = iter_under_seeds(
        build, units, seeds=seeds, reference=reference, capture=capture, timeout=timeout
    )
    first: tuple[int, list[Observed]] | None = None
    for hash_seed, observed in runs:
        if first is None:
            first = (hash_seed, observed)
            continue
        again = f"PYTHONHASHSEED={hash_seed} {command}" if command else None
        reproduce = Reproduce(seed=seed, order_a=tuple(names), order_b=tuple(names), command=again)
        drift = difference(
            first[1],
            observed,
            owners=owners,
            reproduce=reproduce,
            labels=(f"PYTHONHASHSEED={first[0]}", f"PYTHONHASHSEED={hash_seed}"),
            what=(
                "header drift under PYTHONHASHSEED",
                "(the same order of units in two processes: hash-ordered iteration, such as a"
                f" set, reaches the header; seed {seed})",
            ),
            notes=notes,
        )
        if drift is not None:
            drift.seed = seed
            drift.hash_seeds = (first[0], hash_seed)
            drift.add_cause(f"PYTHONHASHSEED {first[0]} vs {hash_seed}")
            runs.close()
            raise drift


def make_prove_stable_fixture(
    seed: int,
    permutations: int,
    command: str | None,
    capture: CaptureSession | None,
) -> Callable[..., StabilityResult[Any]]:
    """The callable behind the pytest plugin's `prove_stable` fixture.

    The plugin chooses `seed` per test and `permutations` from its option; the test passes its
    build and units, and may override the permutation count or ask for PYTHONHASHSEED runs.
    """

    def prove(
        build: Callable[..., Any] | str,
        units: Sequence[Any] | None = None,
        permutations: int | None = None,
        hash_seeds: Sequence[int] | int | None = None,
        *,
        owners: Mapping[str, str | None] | None = None,
    ) -> StabilityResult[Any]:
        __tracebackhide__ = True
        return prove_stable(
            build,
            units,
            permutations=permutations if permutations is not None else default_permutations,
            seed=seed,
            owners=owners,
            command=command,
            capture=capture,
            hash_seeds=hash_seeds,
        )

    default_permutations = permutations
    return prove
