"""The figures as Markdown (printed, and written into `docs/benchmarks.md` between markers)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from bench.figures import Figures, Goal, SizeFigure, goals
from bench.peers import CHECK_COLUMNS, OURS, Checks

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"
FLOOR = Checks(key_order=True, messages=True, rebuild=False, invariant=False, log=True)


def _ms(seconds: float) -> str:
    if seconds >= 10:
        return f"{seconds:,.1f} s"
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    if seconds >= 0.001:
        return f"{seconds * 1000:,.1f} ms"
    return f"{seconds * 1e6:,.1f} µs"


def _bytes(size: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size:,.0f} B"


def _x(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:,.1f}x"


def _faster(ratio: float) -> str:
    """`ratio` = their time / ours, in words."""
    return f"{_x(ratio)} faster" if ratio >= 1 else f"{_x(1 / ratio)} slower"


def _smaller(ratio: float) -> str:
    """`ratio` = their size / ours, in words."""
    return f"{_x(ratio)} smaller" if ratio >= 1 else f"{_x(1 / ratio)} larger"


def _per_step(seconds: float, steps: int) -> str:
    return f"{seconds / steps * 1e6:,.1f} µs a step"


def _markdown(header: list[str], body: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *map(line, body)])


def contest_table(figures: Figures) -> str:
    """Every contender on every transcript: what it checks, its median time, the ratio."""
    sizes = figures.sizes
    header = ["contender", *CHECK_COLUMNS, *(f"{s.steps:,} steps" for s in sizes)]
    rows = [
        [
            "**harness**: load + replay + check",
            *OURS.cells(),
            *(f"**{_ms(s.ours.total_s)}** (load {_ms(s.ours.load_s)})" for s in sizes),
        ],
        [
            "floor: the derivation alone (no files read)",
            *FLOOR.cells(),
            *(
                f"{_ms(s.floor_s)} ({_x(s.ours.replay_s / s.floor_s)} ours,"
                f" {_range(s.floor_spread)})"
                for s in sizes
            ),
        ],
    ]
    names = list(dict.fromkeys(p.name for s in sizes for p in s.peers))
    names += [n for s in sizes for n, _ in s.skipped if n not in names]
    for name in names:
        cells: list[str] = []
        checks: Checks | None = None
        for size in sizes:
            peer = next((p for p in size.peers if p.name == name), None)
            if peer is None:
                reason = dict(size.skipped).get(name, "not run")
                bound = figures.body_bytes.get(size.steps)
                cells.append(f"{reason} (≥ {_bytes(bound)} of bodies)" if bound else reason)
                continue
            checks = peer.checks
            cells.append(
                f"{_ms(peer.seconds)} (ours {_faster(size.ratio(peer))};"
                f" {_range(peer.spread)} its time over ours)"
            )
        rows.append([name, *(checks.cells() if checks else ["?"] * len(CHECK_COLUMNS)), *cells])
    rows.append(
        [
            "**strongest peer / harness**",
            *([""] * len(CHECK_COLUMNS)),
            *(_strongest(s) for s in sizes),
        ]
    )
    return _markdown(header, rows)


def _strongest(size: SizeFigure) -> str:
    peer = size.strongest
    if peer is None:
        return "-"
    return f"**{_x(size.ratio(peer))}** ({_range(peer.spread)}; {peer.name})"


def _range(spread: tuple[float, float]) -> str:
    """A ratio's lowest and highest over the interleaved rounds."""
    low, high = spread
    return f"{low:,.2f}-{high:,.2f}x" if high < 10 else f"{low:,.0f}-{high:,.0f}x"


def other_rows(figures: Figures) -> list[list[str]]:
    table: list[list[str]] = []
    big = figures.big
    if big is not None:
        table += [
            [
                "replay + check, fresh process",
                f"{big.steps:,} steps",
                f"{_ms(big.replay_s)}, {_per_step(big.replay_s, big.steps)} (load"
                f" {_ms(big.load_s)} apart); with the garbage collector off {_ms(big.no_gc_s)}",
                f"floor {_ms(big.floor_s)}, {_per_step(big.floor_s, big.steps)}",
                f"{_x(big.floor_ratio)} the floor",
            ],
            [
                "per-step growth",
                f"{big.small_steps:,} -> {big.steps:,} steps",
                f"{_per_step(big.small_replay_s, big.small_steps)} ->"
                f" {_per_step(big.replay_s, big.steps)}",
                f"floor {_per_step(big.small_floor_s, big.small_steps)} ->"
                f" {_per_step(big.floor_s, big.steps)}",
                f"x{big.growth:,.2f}",
            ],
            [
                "peak memory, replay",
                f"{big.steps:,} steps",
                f"{big.peak_mib:,.0f} MiB resident"
                + (" during the replay" if big.replay_only else " (whole process)")
                + (
                    f" ({big.rss_before_mib:,.0f} MiB before it)"
                    if big.rss_before_mib is not None
                    else ""
                ),
                "-",
                "-",
            ],
        ]
    for fmt in figures.formats:
        table += [
            [
                "fixture size",
                f"{fmt.steps:,} steps",
                f"{_bytes(fmt.fixture_bytes)} (4 files + pin)",
                f"{_bytes(fmt.cassette_bytes)} (vcrpy YAML cassette)",
                _smaller(fmt.cassette_bytes / fmt.fixture_bytes),
            ],
            [
                "fixture load",
                f"{fmt.steps:,} steps",
                f"{_ms(fmt.load_s)}, of which msgspec decoding {_ms(fmt.decode_s)} and the"
                f" secret scan {_ms(fmt.scan_s)} (the rest: reading the files); stdlib json"
                f" {_ms(fmt.stdlib_s)}",
                f"{_ms(fmt.cassette_load_s)} (vcrpy, libyaml)",
                _faster(fmt.cassette_load_s / fmt.load_s),
            ],
        ]
    previous = None
    for order in figures.orders:
        growth = "-"
        if previous is not None:
            measured = order.unset_s / previous.unset_s
            expected = (order.tools * math.log2(order.tools)) / (
                previous.tools * math.log2(previous.tools)
            )
            growth = (
                f"x{measured:,.1f} for n x{order.tools // previous.tools}"
                f" (n log n: x{expected:,.1f})"
            )
        table.append(
            [
                "order_tools",
                f"{order.tools:,} tools",
                f"{_ms(order.unset_s)} per call ({_ms(order.listed_s)} with tool_order)",
                "-",
                growth,
            ]
        )
        previous = order
    for shuffle in figures.shuffles:
        steps = f", {shuffle.steps} steps" if shuffle.steps > 1 else ", 1 step"
        table.append(
            [
                shuffle.how,
                f"{shuffle.plugins} plugins, {shuffle.tools} tools{steps}",
                f"{shuffle.permutations} permutations in {_ms(shuffle.seconds)}"
                f" ({_ms(shuffle.per_permutation_s)} each)",
                "-",
                "-",
            ]
        )
    cost = figures.overhead
    if cost is not None:
        table.append(
            [
                "prove_stable's own time",
                f"{cost.tools}-tool request, {cost.permutations} permutations",
                f"{cost.overhead_ms_per_permutation:,.2f} ms a permutation beyond the build",
                f"the build alone: {_ms(cost.builds_s / cost.permutations)} a permutation",
                "-",
            ]
        )
    shaken = figures.perturbation
    if shaken is not None:
        table.append(
            [
                "perturbation",
                f"an agent's start-up: {shaken.plugins} plugins through asyncio and to_thread,"
                " a thread pool, a folder listing, an entry-point group",
                f"perturbed {shaken.perturbed_ms:,.1f} ms (slowest kind {shaken.worst_ms:,.1f} ms)",
                f"natural {shaken.natural_ms:,.1f} ms",
                f"{_x(shaken.ratio)} ({shaken.overhead:+.0%})",
            ]
        )
    for row in figures.perturbation_rows:
        size = f"an agent's {row.what}: {row.plugins} plugins" if row.plugins else row.what
        table.append(
            [
                "perturbation" if row.plugins else "perturbation, a correct program",
                size,
                f"perturbed {row.perturbed_ms:,.1f} ms (slowest kind {row.worst_ms:,.1f} ms)",
                f"natural {row.natural_ms:,.1f} ms",
                f"{_x(row.ratio)} (slowest {_x(row.worst_ratio)})",
            ]
        )
    for row in figures.processes:
        table.append(
            [
                f"`{row.what}`, a process (start-up included)",
                row.on,
                f"{_ms(row.seconds)} of CPU (median of {row.runs})",
                f"{row.floor}: {_ms(row.floor_s)}",
                f"{_x(row.ratio)} the floor ({_range(row.spread)})",
            ]
        )
    if figures.startup is not None:
        up = figures.startup
        table.append(
            [
                "pytest startup",
                "a run of 0 tests",
                f"+{up.added_ms:,.1f} ms of CPU with the plugin (median of {up.pairs} pairs)",
                f"pytest with an empty plugin: {_ms(up.without_s)}",
                "-",
            ]
        )
    return table


def _goal_line(goal: Goal) -> str:
    return f"- {'met' if goal.met else '**missed**'}: {goal.text}: {goal.measured}"


def render(figures: Figures) -> str:
    shape = figures.shape
    parts = [
        f"Measured on {figures.machine.line()} with `{figures.command}`. Transcripts: generated"
        f" scenarios with {shape.tools} tools over {shape.plugins} plugins and a"
        f" {shape.system_bytes // 1000} KB system section, mostly tool-call steps. Every"
        " contender checks the same transcript in the same process; they run interleaved, and"
        " each figure is a median. A peer reads its files and checks that every recorded request"
        " equals the expected one; it is handed what it expects for free and re-runs nothing.",
        "",
        contest_table(figures),
        "",
        _markdown(["measure", "size", "harness", "against", "ratio"], other_rows(figures)),
        "",
        "Goals:",
        "",
        *map(_goal_line, goals(figures)),
    ]
    if figures.notes:
        parts += ["", *figures.notes]
    return "\n".join(parts)


def write_between_markers(page: Path, text: str) -> None:
    """Replace exactly what is between the bench markers of the Markdown `page` with `text`."""
    content = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)
    if len(pattern.findall(content)) != 1:
        raise ValueError(f"{page} must hold exactly one {START} ... {END} block")
    replaced = pattern.sub(lambda _: f"{START}\n{text}\n{END}", content)
    page.write_text(replaced, encoding="utf-8")
