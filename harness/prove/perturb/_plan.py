"""Which order each source of entropy takes in each run of a proof.

A proof runs the user's build N times. Run 0 is the program as it is (every source `natural`).
Run 1 reverses every source, run 2 puts every source in its canonical `forward` order, and runs 3
and later draw seeded random orders. Together the first three make detection deterministic for
the common race: whatever order two or more loaders finish in naturally, it cannot equal both the
forward and the reversed order, so one of those runs differs from run 0 whenever the order
reaches the request. The random runs find what needs more than a reversal.

A source's random stream depends only on the proof's seed, the run and the source's name, so a
seed reproduces every order exactly, in any process and under any `PYTHONHASHSEED`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, TypeVar

__all__ = ["SOURCES", "Mode", "RunPlan", "plans"]

T = TypeVar("T")


class Mode(StrEnum):
    NATURAL = "natural"  # as the program and the machine order it
    REVERSED = "reversed"
    FORWARD = "forward"  # the source's canonical order (creation, submission, sorted names)
    RANDOM = "random"
    BACKWARD = "backward"  # the canonical order reversed (only when looking for a cause)


# The sources a run perturbs, in the order a cause is looked for.
UNITS: Final = "units"
LOAD_SCHEDULE: Final = "load schedule"
ASYNCIO: Final = "asyncio"
THREADS: Final = "threads"
FILESYSTEM: Final = "filesystem"
ENTRY_POINTS: Final = "entry points"
SOURCES: Final = (UNITS, LOAD_SCHEDULE, ASYNCIO, THREADS, FILESYSTEM, ENTRY_POINTS)


@dataclass(frozen=True)
class RunPlan:
    """The order every source takes in one run: `mode`, except where `overrides` says otherwise
    (that is how a drift's cause is found: one source at a time against a deterministic rest)."""

    index: int
    count: int
    seed: int
    mode: Mode
    overrides: Mapping[str, Mode] = field(default_factory=dict)
    _streams: dict[str, random.Random] = field(default_factory=dict, compare=False, repr=False)

    def mode_of(self, source: str) -> Mode:
        return self.overrides.get(source, self.mode)

    def perturbs(self, source: str) -> bool:
        return self.mode_of(source) is not Mode.NATURAL

    def rng(self, source: str) -> random.Random:
        """This run's random stream for `source` (the same stream on every call)."""
        if source not in self._streams:
            self._streams[source] = random.Random(f"{self.seed}:{self.index}:{source}")
        return self._streams[source]

    def arrange(
        self, source: str, items: Sequence[T], *, key: Callable[[T], Any] | None = None
    ) -> list[T]:
        """`items` in this run's order for `source`. The forward order is `items` sorted by
        `key` (computed only when needed), or as given without a key."""
        mode = self.mode_of(source)
        if mode is Mode.NATURAL:
            return list(items)
        if mode is Mode.REVERSED:
            return list(reversed(items))
        if mode in (Mode.FORWARD, Mode.BACKWARD):
            forward = list(items) if key is None else sorted(items, key=key)
            return forward if mode is Mode.FORWARD else forward[::-1]
        shuffled = list(items)
        self.rng(source).shuffle(shuffled)
        return shuffled

    def neutral(self) -> RunPlan:
        """This run with every source in a deterministic order: the handed-in orders (units, the
        load schedule) as given, every ambient source forward."""
        handed_in = {UNITS: Mode.NATURAL, LOAD_SCHEDULE: Mode.NATURAL}
        return RunPlan(self.index, self.count, self.seed, Mode.FORWARD, handed_in)

    def neutral_except(self, source: str, mode: Mode | None = None) -> RunPlan:
        """`neutral()`, with `source` in `mode` (default: this run's order; fresh random
        streams from the same seeds)."""
        base = self.neutral()
        chosen = mode if mode is not None else self.mode
        return RunPlan(
            self.index, self.count, self.seed, Mode.FORWARD, {**base.overrides, source: chosen}
        )

    def natural_except(self, source: str, mode: Mode) -> RunPlan:
        """This run with every source as the program orders it, but `source` in `mode`."""
        return RunPlan(self.index, self.count, self.seed, Mode.NATURAL, {source: mode})

    def describe(self) -> str:
        return f"run {self.index + 1} of {self.count} ({self.mode.value})"


def plans(count: int, seed: int) -> list[RunPlan]:
    """`count` runs: natural, reversed, forward, then seeded random ones (fewer if `count` < 3)."""
    modes = [Mode.NATURAL, Mode.REVERSED, Mode.FORWARD]
    return [
        RunPlan(index, max(count, 1), seed, modes[index] if index < len(modes) else Mode.RANDOM)
        for index in range(max(count, 1))
    ]
