"""The benchmark's code paths at toy sizes, so `bench/` cannot rot: structure, never timings.

The floor and the peers are checks too: each is shown failing on a recording or a request that
differs, so no contender can be timed while checking nothing.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

pytest.importorskip("vcr")
pytest.importorskip("yaml")

from bench import peers, processes, transcript
from bench.__main__ import Plan, main, run
from bench.bodies import dispatched_requests
from bench.figures import Figures, goals, to_json
from bench.floor import FloorUnsupported, floor_check, verify
from bench.report import END, START, render, write_between_markers
from harness._shared._files import read, write
from harness._shared._paths import LOG_FILE, pins_root
from harness.agent import ToolSchema
from harness.scenarios._formats import LogFile, load_fixture
from harness.scenarios._pins import load_pin

TOY = Plan(
    rounds={3: 2, 4: 1},
    big=(5, 3),
    big_rounds=1,
    order_sizes=(10, 100),
    permutations=3,
    shuffle_steps=3,
    overhead_permutations=3,
    overhead_rounds=1,
    startup_pairs=1,
    perturbation_rounds=1,
    perturbation_plugins=4,
    tools=10,
    plugins=5,
    system_bytes=2_000,
    format_repeats=1,
    process_steps=3,
    process_rounds=1,
)
ISSUE_KEYS = (
    "ratio_vs_strongest_peer",
    "ratio_vs_floor_10k",
    "per_step_growth_1k_to_10k",
    "prove_stable_overhead_ms_per_permutation",
    "pytest_startup_added_ms",
    "perturbation_overhead_ratio",
)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Figures, Path]:
    """One TOY run for every test here: through `main`, as `python -m bench --quick --json PATH`
    runs, with the TOY plan in place of QUICK; the figures `main` rendered, and its JSON file."""
    import bench.__main__ as entry

    target = tmp_path_factory.mktemp("bench") / "figures.json"
    made: list[Figures] = []

    def run_and_keep(plan: Plan, root: Path, command: str) -> Figures:
        made.append(run(plan, root, command))
        return made[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(entry, "QUICK", TOY)
        patch.setattr(entry, "run", run_and_keep)
        assert main(["--quick", "--json", str(target)]) == 0
    (figures,) = made
    return figures, target


@pytest.fixture(scope="module")
def figures(toy_run):  # type: ignore[no-untyped-def]
    return toy_run[0]


@pytest.mark.slow
def test_every_contender_runs_on_every_transcript(figures) -> None:  # type: ignore[no-untyped-def]
    assert [s.steps for s in figures.sizes] == [3, 4]
    for size in figures.sizes:
        assert size.ours.steps == size.steps and size.floor_s > 0
        assert [p.name for p in size.peers] == [p.name for p in peers.PEERS]
        assert all(p.seconds > 0 and p.file_bytes > 0 for p in size.peers)
        assert size.strongest is min(size.peers, key=lambda p: p.seconds)
    big = figures.big
    assert big is not None and (big.steps, big.small_steps) == (5, 3)
    assert big.floor_s > 0 and big.peak_mib > 0 and big.growth > 0
    assert set(figures.body_bytes) == {3, 4, 5}
    assert [o.tools for o in figures.orders] == [10, 100]
    assert [(s.how, s.permutations, s.plugins) for s in figures.shuffles] == [
        ("shuffle_scenario", 3, 5),
        ("prove_stable", 3, 5),
    ]
    assert figures.overhead is not None and figures.overhead.tools == 10
    assert figures.startup is not None and figures.startup.pairs == 1
    assert figures.perturbation is not None and figures.perturbation.plugins == 4
    assert figures.perturbation.natural_ms > 0 and figures.perturbation.perturbed_ms > 0
    assert [row.plugins for row in figures.perturbation_rows][:1] == [4]  # through processes
    assert all(row.natural_ms > 0 and row.worst_ms > 0 for row in figures.perturbation_rows)


@pytest.mark.slow
def test_the_json_has_the_issue_keys(figures) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(to_json(figures)))
    for key in ISSUE_KEYS:
        assert key in data
    assert set(data["ratio_vs_strongest_peer"]) == {"3", "4"}
    size = figures.sizes[0]
    assert data["ratio_vs_strongest_peer"]["3"] == size.strongest.seconds / size.ours.total_s
    assert data["ratio_vs_floor_10k"] == figures.big.replay_s / figures.big.floor_s
    shaken = figures.perturbation
    assert data["perturbation_overhead_ratio"] == shaken.perturbed_ms / shaken.natural_ms
    assert all(isinstance(data[key], float) for key in ISSUE_KEYS[1:])


@pytest.mark.slow
def test_the_markdown_has_every_contender_and_judges_every_goal(figures) -> None:  # type: ignore[no-untyped-def]
    text = render(figures)
    assert "python -m bench --quick" in text  # the command that made the figures
    for name in ("**harness**", "floor", *(p.name for p in peers.PEERS), "**strongest peer"):
        assert any(line.startswith(f"| {name}") for line in text.splitlines()), name
    judged = goals(figures)
    assert len(judged) >= 6
    assert all(f"{'met' if g.met else '**missed**'}: {g.text}" in text for g in judged)


@pytest.mark.slow
def test_main_writes_the_json(toy_run: tuple[Figures, Path]) -> None:
    figures, target = toy_run  # `main` exited 0 (the fixture asserts it)
    data = json.loads(target.read_text(encoding="utf-8"))
    assert all(key in data for key in ISSUE_KEYS)
    assert data == json.loads(json.dumps(to_json(figures)))  # the figures of that run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shape = transcript.Shape(12, tools=10, plugins=5, system_bytes=500)
    return transcript.record(shape, tmp_path_factory.mktemp("floor"))


def test_the_floor_reproduces_a_recording_and_fails_on_one_that_differs(recorded: Path) -> None:
    fixture = load_fixture(recorded)
    pin = load_pin(pins_root(recorded), transcript.PIN)
    assert pin is not None
    assert verify(fixture, pin).ok and floor_check(fixture, pin).steps == 12

    log = read(recorded / LOG_FILE, LogFile)
    events = list(log.events)
    events[4] = msgspec.structs.replace(events[4], stop_reason="end_turn")  # an answer moved
    write(recorded / LOG_FILE, msgspec.structs.replace(log, events=tuple(events)))
    moved = floor_check(load_fixture(recorded), pin)
    assert not moved.log_equal and moved.digests_equal
    with pytest.raises(FloorUnsupported, match="does not reproduce"):
        verify(load_fixture(recorded), pin)
    write(recorded / LOG_FILE, log)

    other = dataclasses.replace(pin, system=pin.system + " ")
    assert not floor_check(fixture, other).headers_equal


def _moved(requests: list[Any], change: Any) -> list[Any]:
    """The requests with the sixth one's tools changed by `change`."""
    moved = list(requests)
    tools = moved[5].tools
    assert isinstance(tools, tuple)
    moved[5] = moved[5].replace(tools=change(tools))
    return moved


def _reordered_keys(tools: tuple[ToolSchema, ...]) -> tuple[ToolSchema, ...]:
    first = tools[0]
    keys = dict(reversed(list(first.parameters.items())))
    return (ToolSchema(first.name, first.description, keys), *tools[1:])


@pytest.mark.parametrize("peer", peers.PEERS, ids=lambda p: p.name)
def test_each_peer_fails_on_a_request_that_differs(
    peer: peers.Peer, recorded: Path, tmp_path: Path
) -> None:
    fixture = load_fixture(recorded)
    pin = load_pin(pins_root(recorded), transcript.PIN)
    assert pin is not None
    requests = dispatched_requests(fixture)
    checker = peer.prepare(peers.Inputs(12, fixture, pin, requests), tmp_path / "expected")
    assert checker.run() == 12

    def recorded_as(moved: list[Any]) -> None:
        """Replace the checker's files with those written from `moved` requests."""
        other = tmp_path / f"other-{len(list(tmp_path.iterdir()))}"
        peer.prepare(peers.Inputs(12, fixture, pin, moved), other)
        for path in other.iterdir():
            (tmp_path / "expected" / path.name).write_bytes(path.read_bytes())

    recorded_as(_moved(requests, lambda tools: (*tools[1:], tools[0])))  # tools reordered
    with pytest.raises(AssertionError, match="request 6"):
        checker.run()
    # What the key-order column says: a schema whose keys moved (cache bytes moved) passes.
    recorded_as(_moved(requests, _reordered_keys))
    if peer.checks.key_order:
        with pytest.raises(AssertionError, match="request 6"):
            checker.run()
    else:
        assert checker.run() == 12


@pytest.mark.slow
def test_the_commands_run_as_processes_against_their_floors(figures) -> None:  # type: ignore[no-untyped-def]
    rows = {(row.what, row.kind): row for row in figures.processes}
    assert set(rows) == {
        ("harness --help", "start-up"),
        ("harness lint", "start-up"),
        ("harness check", "cassette"),
        ("harness check --shuffle 0", "cassette"),
        ("harness lint", "cassette"),
        ("harness cost", "cassette"),
        ("harness check", "scenario"),
        ("harness check --shuffle 0", "scenario"),
    }
    for row in rows.values():
        assert row.seconds > 0 and row.floor_s > 0 and row.runs == 1
        assert row.spread[0] <= row.ratio * 1.0001 and row.spread[1] >= row.ratio * 0.9999
    text = render(figures)
    assert "`harness check`, a process (start-up included)" in text
    assert "`harness lint` (a project with one small cassette) within 3.0x" in text


def test_a_command_that_fails_is_an_error_never_a_time(tmp_path: Path) -> None:
    """The near miss of every process row: `harness check` on a folder that does not exist
    exits 2, and the bench stops instead of timing the error."""
    command = processes.Command("harness check", [*processes.HARNESS, "check", "nowhere"], tmp_path)
    with pytest.raises(RuntimeError, match="harness check exited 2"):
        command.run()
    assert command.times == []
    processes.Command("harness --help", [*processes.HARNESS, "--help"], tmp_path).run()


def test_a_recorded_cassette_is_format_3_and_checks(tmp_path: Path, recorded: Path) -> None:
    cassette = processes.record_cassette(
        dispatched_requests(load_fixture(recorded)), tmp_path / "fixtures" / "cassettes" / "c.json"
    )
    stored = json.loads(cassette.read_bytes())
    assert stored["format"] == 3 and len(stored["exchanges"]) == 12
    assert sum("extends" in e["request"] for e in stored["exchanges"]) == 11


def test_writing_the_figures_replaces_only_what_is_between_the_markers(
    tmp_path: Path,
) -> None:
    readme = tmp_path / "benchmarks.md"
    readme.write_text(f"# x\n\n## Figures\n\n{START}\nold\n{END}\n\n## After\n", encoding="utf-8")
    write_between_markers(readme, "| a |\n|---|")
    assert readme.read_text(encoding="utf-8") == (
        f"# x\n\n## Figures\n\n{START}\n| a |\n|---|\n{END}\n\n## After\n"
    )
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="exactly one"):
        write_between_markers(readme, "x")


def test_write_docs_and_its_old_name_write_the_one_block_of_docs_benchmarks() -> None:
    import bench.__main__ as entry

    assert entry.FIGURES_PAGE == entry.ROOT / "docs" / "benchmarks.md"
    page = entry.FIGURES_PAGE.read_text(encoding="utf-8")
    assert page.count(START) == page.count(END) == 1
    for flag in ("--write-docs", "--write-readme"):
        assert entry.parser().parse_args([flag]).write_docs
