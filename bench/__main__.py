"""`python -m bench`: the harness against its peers and against the floor, side by side.

Prints the figures as Markdown; `--json PATH` also writes them as one JSON object, and
`--write-docs` puts the Markdown between the bench markers of `docs/benchmarks.md` (where the
figures live; `--write-readme` is its old name, kept as an alias). Progress goes to stderr, so
stdout is exactly the Markdown. `--quick` is a smaller, shorter run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import (
    formats,
    memory,
    ordering,
    overhead,
    peers,
    perturbation,
    pipeline,
    processes,
    shuffling,
    startup,
    transcript,
)
from bench.bodies import body_bytes, dispatched_requests
from bench.contest import Entrant, interleaved, spread, whole
from bench.figures import Figures, PeerFigure, Shape, SizeFigure, to_json
from bench.floor import floor_check, verify
from bench.machine import this_machine
from bench.report import render, write_between_markers
from harness._shared._paths import pins_root
from harness.scenarios._formats import load_fixture
from harness.scenarios._pins import Pin, load_pin

ROOT = Path(__file__).resolve().parent.parent
FIGURES_PAGE = ROOT / "docs" / "benchmarks.md"  # the one page holding the bench markers


@dataclass(frozen=True)
class Plan:
    """What to measure, and how many times."""

    rounds: dict[int, int]  # transcript size -> interleaved rounds of ours, the floor, the peers
    big: tuple[int, int] | None  # (large, small): floor ratio, growth, memory in a fresh process
    big_rounds: int
    order_sizes: tuple[int, ...]
    permutations: int  # shuffle_scenario and prove_stable rows
    shuffle_steps: int
    overhead_permutations: int
    overhead_rounds: int
    startup_pairs: int  # 0: not measured
    perturbation_rounds: int = 30  # natural and perturbed start-ups, interleaved; 0: not measured
    perturbation_plugins: int = 50
    process_steps: int = 100  # the transcript `harness` commands run on as processes
    process_rounds: int = 5  # 0: not measured
    tools: int = transcript.TOOLS
    plugins: int = transcript.PLUGINS
    system_bytes: int = transcript.SYSTEM_BYTES
    format_repeats: int = 5
    peer_pool: tuple[peers.Peer, ...] = peers.PEERS

    def shape(self, steps: int) -> transcript.Shape:
        return transcript.Shape(steps, self.tools, self.plugins, self.system_bytes)


FULL = Plan(
    rounds={10: 21, 100: 9, 1_000: 5},
    big=(10_000, 1_000),
    big_rounds=3,
    order_sizes=(10, 100, 1_000, 10_000),
    permutations=100,
    shuffle_steps=10,
    overhead_permutations=100,
    overhead_rounds=7,
    startup_pairs=30,
)
QUICK = Plan(
    rounds={10: 7, 100: 3, 1_000: 2},
    big=(2_000, 200),
    big_rounds=2,
    order_sizes=(10, 100, 1_000),
    permutations=20,
    shuffle_steps=10,
    overhead_permutations=20,
    overhead_rounds=3,
    startup_pairs=5,
    perturbation_rounds=10,
    format_repeats=2,
    process_steps=10,
    process_rounds=2,
)


def _say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _pin(folder: Path) -> Pin:
    pin = load_pin(pins_root(folder), transcript.PIN)
    assert pin is not None
    return pin


def contest(plan: Plan, steps: int, folder: Path, root: Path) -> tuple[SizeFigure, Path | None]:
    """Ours, the floor and every peer that fits, on one transcript, interleaved."""
    fixture = load_fixture(folder)
    pin = _pin(folder)
    verify(fixture, pin)
    inputs = peers.Inputs(steps, fixture, pin, dispatched_requests(fixture))
    ours = pipeline.Ours(folder)
    entrants = [Entrant("ours", ours.run), Entrant("floor", whole(floor_check, fixture, pin))]
    running: list[tuple[peers.Peer, peers.Prepared]] = []
    skipped: list[tuple[str, str]] = []
    cassette = None
    for peer in plan.peer_pool:
        if steps > peer.max_steps:
            skipped.append((peer.name, peer.too_large))
            continue
        _say(f"  writing the files of {peer.name}")
        files = root / "peers" / f"{steps}-{len(running)}"
        files.mkdir(parents=True)
        prepared = peer.prepare(inputs, files)
        running.append((peer, prepared))
        entrants.append(Entrant(peer.name, whole(prepared.run), rounds=peer.rounds))
        cassette = prepared.yaml_cassette or cassette
    del inputs
    _say(f"  {plan.rounds[steps]} interleaved rounds")
    interleaved(entrants, plan.rounds[steps])
    peer_figures = [
        PeerFigure(
            peer.name,
            peer.checks,
            steps,
            entrant.median,
            prepared.file_bytes,
            len(entrant.times),
            spread(entrant.times, entrants[0].times),
        )
        for (peer, prepared), entrant in zip(running, entrants[2:], strict=True)
    ]
    floor_spread = spread(ours.replays, entrants[1].times)
    figure = SizeFigure(
        steps, ours.figure(), entrants[1].median, peer_figures, skipped, floor_spread
    )
    return figure, cassette


def run(plan: Plan, root: Path, command: str) -> Figures:
    sizes = sorted({*plan.rounds, plan.shuffle_steps, *(plan.big or ())})
    if plan.process_rounds:
        sizes = sorted({*sizes, plan.process_steps})
    folders: dict[int, Path] = {}
    for steps in sizes:
        _say(f"recording the {steps:,}-step transcript")
        folders[steps] = transcript.record(plan.shape(steps), root)

    size_figures, format_figures = [], []
    for steps in sorted(plan.rounds):
        _say(f"{steps:,} steps: ours, the floor and the peers")
        figure, cassette = contest(plan, steps, folders[steps], root)
        size_figures.append(figure)
        if cassette is not None:
            format_figures.append(
                formats.measure(
                    folders[steps],
                    transcript.PIN,
                    steps,
                    cassette,
                    plan.format_repeats,
                    min(plan.format_repeats, 3),
                )
            )

    big = None
    if plan.big is not None:
        large, small = plan.big
        _say(f"{large:,} and {small:,} steps in a fresh process: floor, growth, memory")
        big = memory.measure(folders[large], folders[small], plan.big_rounds)

    body = {}
    for steps in sorted({*plan.rounds, *(plan.big or ())}):
        body[steps] = body_bytes(load_fixture(folders[steps]), _pin(folders[steps]))

    _say("order_tools")
    orders = ordering.measure(plan.order_sizes)

    _say(f"the shuffle proof: {plan.permutations} permutations")
    shuffle_fixture = load_fixture(folders[plan.shuffle_steps])
    assert shuffle_fixture.answers is not None
    shuffles = [
        shuffling.shuffle(
            shuffle_fixture.scenario, shuffle_fixture.answers.answers, plan.permutations
        ),
        shuffling.prove(shuffle_fixture.scenario, plan.permutations),
    ]
    _say(f"prove_stable's own time: {plan.overhead_permutations} permutations")
    cost = overhead.measure(
        shuffle_fixture.scenario, plan.overhead_permutations, plan.overhead_rounds
    )
    shaken = None
    shaken_rows: list[perturbation.PerturbationFigure] = []
    if plan.perturbation_rounds:
        _say(f"the perturbation's cost: {plan.perturbation_rounds} rounds of an agent's start-up")
        shaken = perturbation.measure(plan.perturbation_plugins, plan.perturbation_rounds)
        rounds = max(plan.perturbation_rounds // 3, 1)
        _say(f"  {rounds} rounds of a start-up through helper processes")
        shaken_rows.append(perturbation.measure_subprocesses(plan.perturbation_plugins, rounds))
        _say(f"  {rounds} rounds of each correct program with deadlines")
        shaken_rows += perturbation.measure_correct(rounds)
    commands: list[processes.ProcessFigure] = []
    if plan.process_rounds:
        _say(f"harness commands as processes: {plan.process_rounds} rounds")
        folder = folders[plan.process_steps]
        sent = dispatched_requests(load_fixture(folder))
        commands = processes.measure(sent, folder, root, plan.process_rounds)
    started = None
    if plan.startup_pairs:
        _say(f"pytest startup: {plan.startup_pairs} pairs of runs")
        started = startup.measure(plan.startup_pairs)
    return Figures(
        machine=this_machine(),
        command=command,
        shape=Shape(plan.tools, plan.plugins, plan.system_bytes),
        sizes=size_figures,
        big=big,
        formats=format_figures,
        body_bytes=body,
        orders=orders,
        shuffles=shuffles,
        overhead=cost,
        startup=started,
        perturbation=shaken,
        perturbation_rows=shaken_rows,
        processes=commands,
    )


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    found.add_argument("--quick", action="store_true", help="smaller sizes, a shorter run")
    found.add_argument("--json", metavar="PATH", type=Path, help="also write the figures as JSON")
    found.add_argument(
        "--write-docs",
        "--write-readme",
        dest="write_docs",
        action="store_true",
        help="also write the table into docs/benchmarks.md (--write-readme: the old name)",
    )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command = "python -m bench" + (" --quick" if args.quick else "")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as folder:
        figures = run(QUICK if args.quick else FULL, Path(folder), command)
    text = render(figures)
    print(text)
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(figures), indent=2) + "\n", encoding="utf-8")
        _say(f"wrote the figures to {args.json}")
    if args.write_docs:
        write_between_markers(FIGURES_PAGE, text)
        _say(f"wrote the table into {FIGURES_PAGE}")
    _say(f"done in {time.perf_counter() - started:,.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
