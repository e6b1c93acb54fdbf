"""Everything one benchmark run measured, and the issue's goals judged on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.formats import FormatFigure
from bench.machine import Machine
from bench.memory import ReplayMemory
from bench.ordering import OrderFigure
from bench.peers import PeerFigure
from bench.pipeline import CheckFigure
from bench.shuffling import ShuffleFigure

SPEEDUP_GOAL = 20.0  # replay + check against the peer pipeline, same transcript
BIG_STEPS_GOAL_S = 1.0  # the big transcript (10,000 steps) checked in under this
SHUFFLE_GOAL_S = 2.0  # 100 permutations of 50 plugins in under this


@dataclass(frozen=True)
class Shape:
    tools: int
    plugins: int
    system_bytes: int


@dataclass(frozen=True)
class Figures:
    machine: Machine
    command: str
    shape: Shape
    checks: list[CheckFigure]  # ours, in this process
    big: ReplayMemory | None  # ours on the largest transcript, in a fresh process
    peers: list[PeerFigure]  # the peer on the transcripts it can handle
    formats: list[FormatFigure]
    body_bytes: dict[int, int]  # steps -> request-body bytes a cassette must hold, at least
    orders: list[OrderFigure]
    shuffles: list[ShuffleFigure]
    notes: list[str] = field(default_factory=list)

    def check_at(self, steps: int) -> CheckFigure | None:
        return next((c for c in self.checks if c.steps == steps), None)


@dataclass(frozen=True)
class Goal:
    text: str
    met: bool
    measured: str


def _seconds(value: float) -> str:
    return f"{value * 1000:,.0f} ms" if value < 1 else f"{value:,.1f} s"


def goals(figures: Figures) -> list[Goal]:
    found: list[Goal] = []
    pairs = [(figures.check_at(p.steps), p) for p in figures.peers]
    ratios = [(c.steps_per_s / p.steps_per_s, p.steps) for c, p in pairs if c is not None]
    if ratios:
        worst, at = min(ratios)
        found.append(
            Goal(
                f"replay + check at least {SPEEDUP_GOAL:.0f}x the peer pipeline's speed on the"
                " same transcript",
                worst >= SPEEDUP_GOAL,
                f"{worst:,.0f}x at {at:,} steps (the lowest of "
                + ", ".join(f"{r:,.0f}x at {s:,}" for r, s in ratios)
                + ")",
            )
        )
    if figures.big is not None:
        big = figures.big
        found.append(
            Goal(
                f"{big.steps:,} steps checked in under {BIG_STEPS_GOAL_S:.0f} s",
                big.replay_s < BIG_STEPS_GOAL_S,
                f"replay + check {_seconds(big.replay_s)}, plus {_seconds(big.load_s)} to load"
                " the files",
            )
        )
    for shuffle in figures.shuffles:
        found.append(
            Goal(
                f"{shuffle.permutations} {shuffle.how} permutations of {shuffle.plugins} plugins"
                f" in under {SHUFFLE_GOAL_S:.0f} s",
                shuffle.seconds < SHUFFLE_GOAL_S,
                _seconds(shuffle.seconds),
            )
        )
    if figures.formats:
        worst_ratio = min(f.cassette_bytes / f.fixture_bytes for f in figures.formats)
        found.append(
            Goal(
                "fixture files no larger than the YAML cassette",
                all(f.fixture_bytes <= f.cassette_bytes for f in figures.formats),
                f"the cassette is {worst_ratio:,.1f}x larger at least",
            )
        )
    return found
