"""`python -m bench`: the harness against "vcrpy cassettes + syrupy snapshots", side by side.

Prints one Markdown table; `--write-readme` also puts it between the README's bench markers.
Progress goes to stderr, so stdout is exactly the table. `--quick` is a smaller smoke run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import formats, memory, ordering, peers, pipeline, shuffling, transcript
from bench.figures import Figures, Shape
from bench.machine import this_machine
from bench.report import render, write_readme
from harness.fixture import load_fixture
from harness.pins import load_pin
from harness.record import pins_root

README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True)
class Plan:
    """What to measure, and how many times."""

    check_sizes: tuple[int, ...]  # our pipeline in this process (best of `repeats`)
    big: int | None  # our pipeline on the largest transcript, in a fresh process, with memory
    peer_sizes: tuple[int, ...]  # the peer on these (each must be in check_sizes)
    order_sizes: tuple[int, ...]
    permutations: int
    shuffle_steps: int
    tools: int = transcript.TOOLS
    plugins: int = transcript.PLUGINS
    system_bytes: int = transcript.SYSTEM_BYTES
    repeats: int = 3
    peer_repeats: int = 1  # the syrupy pass is slow enough to be steady

    def shape(self, steps: int) -> transcript.Shape:
        return transcript.Shape(steps, self.tools, self.plugins, self.system_bytes)


FULL = Plan(
    check_sizes=(10, 100, 1_000),
    big=10_000,
    peer_sizes=(10, 100),
    order_sizes=(10, 100, 1_000, 10_000),
    permutations=100,
    shuffle_steps=10,
)
QUICK = Plan(
    check_sizes=(10, 100),
    big=1_000,
    peer_sizes=(10,),
    order_sizes=(10, 100, 1_000),
    permutations=20,
    shuffle_steps=10,
    repeats=2,
)


def _say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(plan: Plan, root: Path, command: str) -> Figures:
    sizes = sorted({*plan.check_sizes, *plan.peer_sizes, plan.shuffle_steps})
    if plan.big is not None:
        sizes.append(plan.big)
    folders: dict[int, Path] = {}
    for steps in sizes:
        _say(f"recording the {steps:,}-step transcript")
        folders[steps] = transcript.record(plan.shape(steps), root)

    checks = []
    for steps in plan.check_sizes:
        _say(f"our pipeline on {steps:,} steps")
        checks.append(pipeline.measure(folders[steps], plan.repeats))

    big = None
    if plan.big is not None:
        _say(f"our pipeline on {plan.big:,} steps, in a fresh process (time and memory)")
        big = memory.measure(folders[plan.big])

    peer_figures, format_figures = [], []
    for steps in plan.peer_sizes:
        _say(f"the peer pipeline on {steps:,} steps (writing its cassette)")
        fixture = load_fixture(folders[steps])
        expected = [peers.request_body(r) for r in peers.dispatched_requests(fixture)]
        cassette = root / "cassettes" / f"{steps}.yaml"
        peers.write_cassette(cassette, expected, fixture)
        peer_figures.append(peers.measure(cassette, expected, plan.peer_repeats))
        format_figures.append(
            formats.measure(
                folders[steps],
                transcript.PIN,
                steps,
                cassette,
                plan.repeats,
                plan.peer_repeats,
            )
        )

    body_bytes = {}
    for steps in (*plan.check_sizes, *((plan.big,) if plan.big else ())):
        if steps not in plan.peer_sizes:
            fixture = load_fixture(folders[steps])
            pin = load_pin(pins_root(folders[steps]), transcript.PIN)
            assert pin is not None
            body_bytes[steps] = peers.body_bytes(fixture, pin)

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
    return Figures(
        machine=this_machine(),
        command=command,
        shape=Shape(plan.tools, plan.plugins, plan.system_bytes),
        checks=checks,
        big=big,
        peers=peer_figures,
        formats=format_figures,
        body_bytes=body_bytes,
        orders=orders,
        shuffles=shuffles,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, a smoke run")
    parser.add_argument(
        "--write-readme", action="store_true", help="also write the table into README.md"
    )
    args = parser.parse_args(argv)
    command = "python -m bench" + (" --quick" if args.quick else "")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as folder:
        figures = run(QUICK if args.quick else FULL, Path(folder), command)
    text = render(figures)
    print(text)
    if args.write_readme:
        write_readme(README, text)
        _say(f"wrote the table into {README}")
    _say(f"done in {time.perf_counter() - started:,.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
