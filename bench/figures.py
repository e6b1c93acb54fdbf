"""Everything one benchmark run measured, the issue's goals judged on it, and the JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.formats import FormatFigure
from bench.machine import Machine
from bench.memory import BigFigure
from bench.ordering import OrderFigure
from bench.overhead import OverheadFigure
from bench.peers import Checks
from bench.perturbation import PerturbationFigure
from bench.pipeline import CheckFigure
from bench.processes import ProcessFigure
from bench.shuffling import ShuffleFigure
from bench.startup import StartupFigure

# ours against the strongest peer on the same transcript: peer time / our time, at least
PEER_GOALS = {10: 1.0, 100: 3.0, 1_000: 10.0}
FLOOR_GOAL = 10.0  # the large replay + check within this many times the floor's time
GROWTH_GOAL = 1.2  # per-step time, large transcript over the one ten times smaller, at most
OVERHEAD_GOAL_MS = 0.3  # prove_stable's own time per permutation, 200-tool request
STARTUP_GOAL_MS = 20.0  # added to a pytest run of 0 tests
PERTURBATION_GOAL = 1.5  # a perturbed run of an agent's start-up over its natural run, at most
CORRECT_GOAL = 3.0  # a perturbed run of a correct program with deadlines over its natural run
SHUFFLE_GOAL_S = 2.0  # 100 permutations of 50 plugins in under this
# commands as processes, start-up included, over their floor: at most
PROCESS_GOALS = {
    ("harness --help", "start-up"): 3.0,
    ("harness lint", "start-up"): 3.0,
    ("harness check --shuffle 0", "cassette"): 10.0,
    ("harness lint", "cassette"): 5.0,
    ("harness cost", "cassette"): 5.0,
}


@dataclass(frozen=True)
class Shape:
    tools: int
    plugins: int
    system_bytes: int


@dataclass(frozen=True)
class PeerFigure:
    name: str
    checks: Checks
    steps: int
    seconds: float  # median of its timed runs: read its files, check every request
    file_bytes: int
    runs: int
    # its time over ours in the same round, lowest and highest over the rounds both ran (a
    # median ratio alone hides how far one noisy round moves it)
    spread: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class SizeFigure:
    """One transcript: ours, the floor and every peer that ran, interleaved, medians."""

    steps: int
    ours: CheckFigure
    floor_s: float  # derivation and comparison only: the floor reads no files
    peers: list[PeerFigure]
    skipped: list[tuple[str, str]]  # peers not run on it, and why
    # our replay over the floor in the same round, lowest and highest over the rounds
    floor_spread: tuple[float, float] = (0.0, 0.0)

    @property
    def strongest(self) -> PeerFigure | None:
        """The fastest peer that ran (every peer checks each request's header)."""
        return min(self.peers, key=lambda peer: peer.seconds, default=None)

    def ratio(self, peer: PeerFigure) -> float:
        """Peer time over our time (above 1: we are faster)."""
        return peer.seconds / self.ours.total_s


@dataclass(frozen=True)
class Figures:
    machine: Machine
    command: str
    shape: Shape
    sizes: list[SizeFigure]
    big: BigFigure | None
    formats: list[FormatFigure]
    body_bytes: dict[int, int]  # steps -> request-body bytes a cassette must hold, at least
    orders: list[OrderFigure]
    shuffles: list[ShuffleFigure]
    overhead: OverheadFigure | None
    startup: StartupFigure | None
    perturbation: PerturbationFigure | None = None  # the in-process start-up
    # the start-up through helper processes, then correct programs with deadlines
    perturbation_rows: list[PerturbationFigure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    processes: list[ProcessFigure] = field(default_factory=list)

    def at(self, steps: int) -> SizeFigure | None:
        return next((s for s in self.sizes if s.steps == steps), None)


@dataclass(frozen=True)
class Goal:
    text: str
    met: bool
    measured: str


def _x(ratio: float) -> str:
    return f"{ratio:,.1f}x" if ratio < 10 else f"{ratio:,.0f}x"


def goals(figures: Figures) -> list[Goal]:
    found: list[Goal] = []
    for steps, wanted in PEER_GOALS.items():
        size = figures.at(steps)
        strongest = size.strongest if size is not None else None
        if size is None or strongest is None:
            continue
        ratio = size.ratio(strongest)
        found.append(
            Goal(
                f"at {steps:,} steps, at least {_x(wanted)} the speed of the strongest peer",
                ratio >= wanted,
                f"{_x(ratio)} against {strongest.name}",
            )
        )
    big = figures.big
    if big is not None:
        found.append(
            Goal(
                f"{big.steps:,} steps within {FLOOR_GOAL:.0f}x of the floor",
                big.floor_ratio <= FLOOR_GOAL,
                f"{_x(big.floor_ratio)} ({big.replay_s * 1e6 / big.steps:,.0f} µs a step against"
                f" {big.floor_s * 1e6 / big.steps:,.1f} µs)",
            )
        )
        found.append(
            Goal(
                f"per-step cost flat from {big.small_steps:,} to {big.steps:,} steps (growth at"
                f" most {GROWTH_GOAL}x)",
                big.growth <= GROWTH_GOAL,
                f"{big.growth:,.2f}x",
            )
        )
    if figures.overhead is not None:
        overhead = figures.overhead
        found.append(
            Goal(
                f"prove_stable's own time under {OVERHEAD_GOAL_MS} ms per permutation"
                f" ({overhead.tools}-tool request)",
                overhead.overhead_ms_per_permutation < OVERHEAD_GOAL_MS,
                f"{overhead.overhead_ms_per_permutation:,.2f} ms",
            )
        )
    starts = [figures.perturbation] if figures.perturbation is not None else []
    starts += [row for row in figures.perturbation_rows if row.plugins]
    for start in starts:
        found.append(
            Goal(
                f"a perturbed run of an agent's {start.what} ({start.plugins} plugins) costs at"
                f" most {_x(PERTURBATION_GOAL)} its natural run",
                start.ratio <= PERTURBATION_GOAL,
                f"{_x(start.ratio)} ({start.natural_ms:,.1f} ms natural, {start.perturbed_ms:,.1f}"
                f" ms perturbed; the slowest kind of run {_x(start.worst_ratio)})",
            )
        )
    correct = [row for row in figures.perturbation_rows if not row.plugins]
    if correct:
        worst = max(correct, key=lambda row: row.worst_ratio)
        found.append(
            Goal(
                f"every kind of perturbed run of a correct program with deadlines costs at most"
                f" {_x(CORRECT_GOAL)} its natural run",
                all(row.worst_ratio <= CORRECT_GOAL for row in correct),
                f"at most {_x(worst.worst_ratio)} ({worst.what})",
            )
        )
    if figures.startup is not None:
        found.append(
            Goal(
                f"the plugin adds under {STARTUP_GOAL_MS:.0f} ms to a pytest run of 0 tests",
                figures.startup.added_ms < STARTUP_GOAL_MS,
                f"{figures.startup.added_ms:,.1f} ms",
            )
        )
    for shuffle in figures.shuffles:
        found.append(
            Goal(
                f"{shuffle.permutations} {shuffle.how} permutations of {shuffle.plugins} plugins"
                f" in under {SHUFFLE_GOAL_S:.0f} s",
                shuffle.seconds < SHUFFLE_GOAL_S,
                f"{shuffle.seconds * 1000:,.0f} ms",
            )
        )
    for row in figures.processes:
        wanted = PROCESS_GOALS.get((row.what, row.kind))
        if wanted is not None:
            found.append(
                Goal(
                    f"`{row.what}` ({row.on}) within {_x(wanted)} of {row.floor}",
                    row.ratio <= wanted,
                    f"{_x(row.ratio)} (rounds {row.spread[0]:,.1f}-{row.spread[1]:,.1f}x;"
                    f" {row.seconds * 1000:,.0f} ms against {row.floor_s * 1000:,.0f} ms)",
                )
            )
    if figures.formats:
        worst = min(f.cassette_bytes / f.fixture_bytes for f in figures.formats)
        found.append(
            Goal(
                "fixture files no larger than the YAML cassette",
                all(f.fixture_bytes <= f.cassette_bytes for f in figures.formats),
                f"the cassette is {worst:,.1f}x larger at least",
            )
        )
    return found


def to_json(figures: Figures) -> dict[str, Any]:
    """The figures as one JSON object; the issue's keys first, then the detail behind them."""
    big, overhead, startup = figures.big, figures.overhead, figures.startup
    perturbation = figures.perturbation
    strongest = {
        str(size.steps): size.ratio(peer)
        for size in figures.sizes
        if (peer := size.strongest) is not None
    }
    return {
        "ratio_vs_strongest_peer": strongest,
        "ratio_vs_floor_10k": big.floor_ratio if big is not None else None,
        "per_step_growth_1k_to_10k": big.growth if big is not None else None,
        "prove_stable_overhead_ms_per_permutation": (
            overhead.overhead_ms_per_permutation if overhead is not None else None
        ),
        "pytest_startup_added_ms": startup.added_ms if startup is not None else None,
        "perturbation_overhead_ratio": perturbation.ratio if perturbation is not None else None,
        "strongest_peer": {
            str(size.steps): peer.name
            for size in figures.sizes
            if (peer := size.strongest) is not None
        },
        "sizes": {
            "peers": [size.steps for size in figures.sizes],
            "floor_and_growth": [big.small_steps, big.steps] if big is not None else None,
        },
        "transcripts": [
            {
                "steps": size.steps,
                "ours_s": size.ours.total_s,
                "ours_load_s": size.ours.load_s,
                "ours_replay_s": size.ours.replay_s,
                "floor_s": size.floor_s,
                "floor_spread": list(size.floor_spread),
                "peers": {
                    peer.name: {
                        "seconds": peer.seconds,
                        "ratio": size.ratio(peer),
                        "ratio_spread": list(peer.spread),
                        "file_bytes": peer.file_bytes,
                        "checks": peer.checks.__dict__,
                    }
                    for peer in size.peers
                },
                "not_run": dict(size.skipped),
            }
            for size in figures.sizes
        ],
        "large": None if big is None else {**big.__dict__, "growth": big.growth},
        "prove_stable": None if overhead is None else overhead.__dict__,
        "pytest_startup": None if startup is None else startup.__dict__,
        "perturbation": None if perturbation is None else perturbation.__dict__,
        "perturbation_rows": [row.__dict__ for row in figures.perturbation_rows],
        "processes": [{**row.__dict__, "ratio": row.ratio} for row in figures.processes],
        "goals": [goal.__dict__ for goal in goals(figures)],
        "machine": figures.machine.__dict__,
        "command": figures.command,
    }
