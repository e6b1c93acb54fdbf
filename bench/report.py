"""The figures as one Markdown table (printed, and written into the README between markers)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from bench.figures import Figures, Goal, goals

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"


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


def _rate(steps_per_s: float) -> str:
    return f"{steps_per_s:,.0f} steps/s" if steps_per_s >= 10 else f"{steps_per_s:,.1f} steps/s"


def _x(ratio: float) -> str:
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:,.1f}x"


def _faster(ratio: float) -> str:
    """`ratio` = their time / ours, in words."""
    return f"{_x(ratio)} faster" if ratio >= 1 else f"{_x(1 / ratio)} slower"


def rows(figures: Figures) -> list[list[str]]:
    table: list[list[str]] = []
    peers = {p.steps: p for p in figures.peers}
    for check in figures.checks:
        peer = peers.get(check.steps)
        ours = (
            f"{_rate(check.steps_per_s)} (load {_ms(check.load_s)} + replay {_ms(check.replay_s)})"
        )
        if peer is None:
            bound = figures.body_bytes.get(check.steps)
            theirs = f"not run: a cassette holds ≥ {_bytes(bound)}" if bound else "not run"
            table.append(["1", "replay + check", f"{check.steps:,} steps", ours, theirs, "-"])
            continue
        theirs = f"{_rate(peer.steps_per_s)} (load {_ms(peer.load_s)} + syrupy {_ms(peer.check_s)})"
        ratio = _x(check.steps_per_s / peer.steps_per_s)
        table.append(["1, 2", "replay + check", f"{check.steps:,} steps", ours, theirs, ratio])
    big = figures.big
    if big is not None:
        bound = figures.body_bytes.get(big.steps)
        table.append(
            [
                "1",
                "replay + check (fresh process)",
                f"{big.steps:,} steps",
                f"{_rate(big.steps / (big.load_s + big.replay_s))} (load {_ms(big.load_s)}"
                f" + replay {_ms(big.replay_s)})",
                f"not run: a cassette holds ≥ {_bytes(bound)}" if bound else "not run",
                "-",
            ]
        )
    for fmt in figures.formats:
        table.append(
            [
                "3",
                "fixture size",
                f"{fmt.steps:,} steps",
                f"{_bytes(fmt.fixture_bytes)} (4 files + pin)",
                f"{_bytes(fmt.cassette_bytes)} (YAML cassette)",
                f"{_x(fmt.cassette_bytes / fmt.fixture_bytes)} smaller",
            ]
        )
        table.append(
            [
                "3",
                "fixture load",
                f"{fmt.steps:,} steps",
                f"{_ms(fmt.load_s)}, of which msgspec decoding {_ms(fmt.decode_s)} (the rest:"
                f" reading the files and the secret scan); stdlib json {_ms(fmt.stdlib_s)}",
                f"{_ms(fmt.cassette_load_s)} (vcrpy, libyaml)",
                f"{_faster(fmt.cassette_load_s / fmt.load_s)}"
                f" ({_faster(fmt.cassette_load_s / fmt.decode_s)} decoding alone)",
            ]
        )
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
                "4",
                "order_tools",
                f"{order.tools:,} tools",
                f"{_ms(order.unset_s)} per call ({_ms(order.listed_s)} with tool_order);"
                f" {order.per_n_log_n_ns:,.0f} ns per n log2 n",
                "-",
                growth,
            ]
        )
        previous = order
    for shuffle in figures.shuffles:
        steps = f", {shuffle.steps} steps" if shuffle.steps > 1 else ", 1 step"
        table.append(
            [
                "5",
                shuffle.how,
                f"{shuffle.plugins} plugins, {shuffle.tools} tools{steps}",
                f"{shuffle.permutations} permutations in {_ms(shuffle.seconds)}"
                f" ({_ms(shuffle.per_permutation_s)} each)",
                "-",
                "-",
            ]
        )
    if big is not None:
        before = (
            f" ({big.rss_before_mib:,.0f} MiB resident before it)"
            if big.rss_before_mib is not None
            else ""
        )
        scope = "during the replay" if big.replay_only else "whole process"
        table.append(
            [
                "6",
                "peak memory, replay",
                f"{big.steps:,} steps",
                f"{big.peak_mib:,.0f} MiB resident, {scope}{before}",
                "-",
                "-",
            ]
        )
    return table


def _markdown(header: list[str], body: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *map(line, body)])


def _goal_line(goal: Goal) -> str:
    return f"- {'met' if goal.met else '**missed**'}: {goal.text}: {goal.measured}"


def notes(figures: Figures) -> list[str]:
    """Why the peer is not run everywhere, and what is left where a goal is missed."""
    found: list[str] = []
    peer_steps = [p.steps for p in figures.peers]
    bounds = sorted(figures.body_bytes.items())
    if peer_steps and bounds:
        largest = max(figures.peers, key=lambda p: p.steps)
        found.append(
            "The peer runs on the "
            + " and ".join(f"{s:,}" for s in peer_steps)
            + ("-step transcripts" if len(peer_steps) > 1 else "-step transcript")
            + " only. A cassette stores every request in full, header and"
            " conversation so far, so it grows with steps x (header + conversation): the request"
            " bodies alone come to "
            + ", ".join(f"{_bytes(b)} at {s:,} steps" for s, b in bounds)
            + f"; and its syrupy pass already takes {_ms(largest.check_s)} at"
            f" {largest.steps:,} steps. Our files grow linearly: the header is pinned once and"
            " a request stores its messages as a count and a SHA-256 (the log holds them). The"
            " peer is handed its expected requests and re-runs no agent, no rebuild and no"
            " invariant, which favours it."
        )
    judged = {goal.text: goal for goal in goals(figures)}
    left: list[str] = []
    speed = next((g for t, g in judged.items() if t.startswith("replay + check at least")), None)
    small = min(figures.formats, key=lambda f: f.steps, default=None)
    check = figures.check_at(small.steps) if small is not None else None
    if speed is not None and not speed.met and small is not None and check is not None:
        fixture_scan = max(small.load_s - small.decode_s, 0.0)
        scan = fixture_scan + small.pin_scan_s
        left.append(
            f"- **Small transcripts.** At {small.steps:,} steps fixed costs dominate our"
            f" {_ms(check.total_s)}: the secret scan that loading now runs on every file"
            f" (`harness/secrets.py`) takes about {_ms(scan)} of it ({_ms(fixture_scan)} on"
            f" the fixture, {_ms(small.pin_scan_s)} on the tool pin, which each replay reads"
            f" again), against {_ms(small.decode_s)} for msgspec to decode the files; the rest"
            " is booting the plugins and the first step. The peer's cost grows with every"
            " request, so the ratio grows with the transcript. The scan already skips a"
            " pattern whose required literal (`sk-`, `Bearer`, `AKIA`, ...) is absent, so what"
            " it costs is one substring search per literal over every file; a single-pass"
            " multi-literal search would need a dependency (an Aho-Corasick automaton)."
        )
    big = figures.big
    if big is not None and big.replay_s >= 1.0:
        per_step = big.replay_s / big.steps * 1e6
        mid = max(figures.checks, key=lambda c: c.steps, default=None)
        at_mid = (
            f" ({mid.replay_s / mid.steps * 1e6:,.0f} µs at {mid.steps:,} steps)"
            if mid is not None
            else ""
        )
        left.append(
            f"- **{big.steps:,} steps in under 1 s.** Replay + check takes {_ms(big.replay_s)},"
            f" {per_step:,.0f} µs a step{at_mid}. Every step assembles the"
            f" {figures.shape.tools} tools twice (the loop, then the harness's rebuild, which"
            " must run every listener again). Assembly hands out shared frozen tool copies"
            " when no listener can see them, but the tool registry keeps mutable schemas, so"
            " each assembly re-encodes their parameters to prove none was edited in place; a"
            " registry of deep-frozen schemas would make that an identity check (in-place"
            " edits of a registered schema would then raise: an API change, not made here)."
            " And each request holds the whole conversation as a tuple of its own, so a step"
            " costs time in proportion to the conversation so far: building that tuple and"
            " freeing it. The garbage collector's passes over the growing log cost the rest"
            f" (the same replay with the collector off takes {_ms(big.no_gc_s)}; making the"
            " message types untracked, `gc=False`, did not change it). Sharing the"
            " conversation between requests would need another request type in the runtime."
            " Loading the files"
            f" adds {_ms(big.load_s)} (reading, strict decoding and the secret scan)."
        )
    for shuffle in figures.shuffles:
        goal = next(
            (g for t, g in judged.items() if t.startswith(f"{shuffle.permutations} {shuffle.how}")),
            None,
        )
        if goal is not None and not goal.met:
            left.append(
                f"- **{shuffle.how}.** {_ms(shuffle.per_permutation_s)} a permutation: each boots"
                f" the {shuffle.plugins} plugins afresh through the concurrent loader (one task"
                " and its scheduling points per plugin) and registers every tool before running"
                f" {shuffle.steps} step(s)."
            )
    if left:
        found += ["", "What is left:", "", *left]
    return found


def render(figures: Figures) -> str:
    shape = figures.shape
    parts = [
        f"Measured on {figures.machine.line()} with `{figures.command}`. Transcripts: generated"
        f" scenarios with {shape.tools} tools over {shape.plugins} plugins and a"
        f" {shape.system_bytes // 1000} KB system section, mostly tool-call steps; ours and the"
        " peer's on the same transcript in the same process, best of several runs.",
        "",
        _markdown(["#", "measure", "size", "harness", "vcrpy + syrupy", "ratio"], rows(figures)),
        "",
        "Goals:",
        "",
        *map(_goal_line, goals(figures)),
    ]
    extra = [*figures.notes, *notes(figures)]
    if extra:
        parts += ["", *extra]
    return "\n".join(parts)


def write_readme(readme: Path, text: str) -> None:
    """Replace exactly what is between the bench markers with `text`."""
    content = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)
    if len(pattern.findall(content)) != 1:
        raise ValueError(f"{readme} must hold exactly one {START} ... {END} block")
    replaced = pattern.sub(lambda _: f"{START}\n{text}\n{END}", content)
    readme.write_text(replaced, encoding="utf-8")
