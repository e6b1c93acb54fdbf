"""Prove a header stable under permutation of whatever the user registers.

`prove_stable(build, units)` calls `build(order)` with permutations of the user's registration
units (tool functions, plugin objects, MCP server names) and compares what each call produced.
It asserts stability under permutation, not alphabetical order: a project may keep its own
deliberate order (built-ins first, say) as long as registration order cannot move it.

What `build` returns is the header, in any of these forms: a harness `Header` or `Request`, a
`CacheView`, a request body (`dict`, JSON `str` or `bytes`), a tool list, or None when the build
sent requests through a capture session (`harness.capture`), whose captured bodies are then
compared. A difference that lies after an Anthropic request's last `cache_control` breakpoint
does not touch the cached prefix: it is kept as a note, not raised.

Python's own entropy counts too: with `hash_seeds=(0, 1, 2, 3)` the build also runs in one
subprocess per `PYTHONHASHSEED` value (`harness.hashseed`), because `set` iteration order is
fixed inside one process and differs between processes. That needs an importable build (a
module-level function, or a "module:function" string) and units a subprocess can rebuild (names,
numbers, or module-level objects).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from harness.builds import Observed, observe, resolve, run_build, unit_name, view_of_value
from harness.drift import DriftReport, Reproduce, compare, first_byte_difference
from harness.errors import Drift
from harness.views import CacheView, canonical_bytes

if TYPE_CHECKING:
    from harness.capture import CaptureSession

__all__ = [
    "HeaderDrift",
    "Observed",
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


class HeaderDrift(Drift):
    """Header bytes moved under a permutation. `str()` is the whole report, seed and orders."""

    def __init__(
        self,
        message: str,
        report: DriftReport | None,
        *,
        seed: int | None = None,
        orders: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
        hash_seeds: tuple[int, int] | None = None,
    ) -> None:
        self.report = report
        self.seed = seed
        self.orders = orders
        self.hash_seeds = hash_seeds
        text = message if report is None else f"{message}\n\n{report.to_text()}"
        super().__init__(text)


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
    seed: int
    orders: list[list[str]]
    views: list[list[CacheView]]
    notes: list[str] = field(default_factory=list)
    hash_seeds: tuple[int, ...] = ()

    @property
    def header_bytes(self) -> list[bytes]:
        return [b"".join(canonical_bytes(v) for v in views) for views in self.views]


def _build_callable(build: Callable[[list[U]], Any] | str) -> Callable[[list[U]], Any]:
    if isinstance(build, str):
        found = resolve(build)
        if not callable(found):
            raise TypeError(f"{build!r} is not callable")
        return found  # type: ignore[no-any-return]
    return build


def prove_stable(
    build: Callable[[list[U]], Any] | str,
    units: Sequence[U],
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    owners: Mapping[str, str | None] | None = None,
    command: str | None = None,
    captured: Callable[[], list[CacheView]] | None = None,
    capture: CaptureSession | None = None,
    hash_seeds: Sequence[int] | None = None,
    timeout: float = 120.0,
) -> StabilityResult[U]:
    """Call `build` under `permutations` orders of `units`; raise HeaderDrift if bytes move.

    `capture`: the session whose clients the build sends through (a build that returns None is
    judged by the requests it sent; every order is answered by position from the first one's
    answers). `captured`, the older hook, is called after each build that returned None and
    must return the views of the requests that build sent. `hash_seeds`: also run the identity
    order once per PYTHONHASHSEED value in a subprocess and compare those runs.
    """
    __tracebackhide__ = True
    function = _build_callable(build)
    orders = orders_of(units, permutations, seed)
    names = [[unit_name(u) for u in order] for order in orders]
    proof = capture.proving(names[0]) if capture is not None else None
    results: list[list[Observed]] = []
    notes: list[str] = []
    for index, order in enumerate(orders):
        try:
            observed = run_build(function, order, proof=proof, index=index, captured=captured)
        except Exception as error:
            error.add_note(
                f"prove_stable: while building order {index + 1} of {len(orders)} (seed {seed}):"
                f" {', '.join(names[index])}"
            )
            raise
        results.append(observed)
        if index == 0:
            continue
        reproduce = Reproduce(
            seed=seed, order_a=tuple(names[0]), order_b=tuple(names[index]), command=command
        )
        drift = _judge(
            results[0],
            observed,
            owners=owners,
            reproduce=reproduce,
            labels=("order A", "order B"),
            what=(
                "header drift under permutation",
                f"(seed {seed}, order {index + 1} of {len(orders)})",
            ),
            notes=notes,
        )
        if drift is not None:
            drift.seed = seed
            drift.orders = (tuple(names[0]), tuple(names[index]))
            raise drift
    seeds = tuple(hash_seeds or ())
    if seeds:
        _prove_hash_seeds(
            build,
            units,
            seeds=seeds,
            seed=seed,
            owners=owners,
            command=command,
            proof=proof,
            names=names[0],
            notes=notes,
            timeout=timeout,
        )
    views = [[item.view for item in observed] for observed in results]
    return StabilityResult(seed, names, views, notes, seeds)


def _prove_hash_seeds(
    build: Callable[[list[U]], Any] | str,
    units: Sequence[U],
    *,
    seeds: tuple[int, ...],
    seed: int,
    owners: Mapping[str, str | None] | None,
    command: str | None,
    proof: Any,
    names: list[str],
    notes: list[str],
    timeout: float,
) -> None:
    __tracebackhide__ = True
    from harness.hashseed import iter_under_seeds

    reference = proof.reference_file() if proof is not None else None
    runs = iter_under_seeds(build, units, seeds=seeds, reference=reference, timeout=timeout)
    first: tuple[int, list[Observed]] | None = None
    for hash_seed, observed in runs:
        if first is None:
            first = (hash_seed, observed)
            continue
        again = f"PYTHONHASHSEED={hash_seed} {command}" if command else None
        reproduce = Reproduce(seed=seed, order_a=tuple(names), order_b=tuple(names), command=again)
        drift = _judge(
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
            runs.close()
            raise drift


def _judge(
    base: list[Observed],
    other: list[Observed],
    *,
    owners: Mapping[str, str | None] | None,
    reproduce: Reproduce,
    labels: tuple[str, str],
    what: tuple[str, str],
    notes: list[str],
) -> HeaderDrift | None:
    """The drift between two builds' requests, or None; differences past the prefix are notes."""
    title, where = what
    label_a, label_b = labels
    for position, (a, b) in enumerate(zip(base, other, strict=False)):
        if canonical_bytes(a.view) == canonical_bytes(b.view):
            continue
        report = compare(
            a.view, b.view, owners=owners, reproduce=reproduce, label_a=label_a, label_b=label_b
        )
        which = f"request {position + 1} " if len(base) > 1 or len(other) > 1 else ""
        if (
            a.prefix is not None
            and b.prefix is not None
            and canonical_bytes(a.prefix) == canonical_bytes(b.prefix)
        ):
            notes.append(
                f"{which}differs between {label_a} and {label_b} only after the last"
                f" cache_control breakpoint (information: the cached prefix is unaffected):"
                f" {report.summary}"
            )
            continue
        raw = ""
        if a.body is not None and b.body is not None:
            offset = first_byte_difference(a.body, b.body)
            raw = f"\nthe request bodies as sent first differ at byte {offset:,} of {len(a.body):,}"
        message = f"{title}: {which}bytes differ between {label_a} and {label_b} {where}{raw}"
        return HeaderDrift(message, report)
    if len(base) != len(other):
        return HeaderDrift(
            f"{title}: {label_a} sent {len(base)} requests, {label_b} sent {len(other)} {where}",
            None,
        )
    return None


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
        build: Callable[[list[Any]], Any] | str,
        units: Sequence[Any],
        permutations: int | None = None,
        hash_seeds: Sequence[int] | None = None,
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
