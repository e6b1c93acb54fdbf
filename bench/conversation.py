"""`python -m bench.conversation`: a long agent conversation recorded and checked (issue 33).

For each size (250 and 1,000 turns; `--turns` to choose) a child process records one Anthropic
conversation through a capture session, as `@pytest.mark.header_capture` does: 20 tools, a 6 KB
system prompt, each turn a question and a 300-byte answer, the cache marker on the newest user
message (moved forward every turn, as an agent's is). Each request carries the whole
conversation, so the bytes sent grow with the square of the turns; what is measured is the
harness's CPU per byte sent, which a linear recorder keeps flat:
- recording: the child's CPU from the first request to the written cassette (the prefix chain
  judged, the cassette encoded as format 3), over the bytes of every request sent;
- checking: `harness check --shuffle 0` on the project, a process with its start-up, billed its
  CPU, over the same bytes;
- the cassette's size against its last request's (the goal: at most 5x at 1,000 turns).
Each size is recorded and checked `--repeat` times (default 3), the sizes taking turns; a figure
is the median, with the lowest and highest run beside it: the machines are shared, and one
recording's CPU moved by 2x between runs of the same code. Progress goes to stderr; stdout is the
Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

URL = "https://api.anthropic.com/v1/messages"
SIZE_GOAL = 5.0


def bodies(turns: int, reply: int = 300) -> Iterator[bytes]:
    """Each request of a `turns`-turn conversation, encoded as an SDK sends it."""
    rng = random.Random(turns)
    tools = [
        {
            "name": f"tool_{n}",
            "description": " ".join(str(rng.random()) for _ in range(20)),
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        for n in range(20)
    ]
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if messages:  # the marker moves to the newest question
            messages[-2]["content"] = [{"type": "text", "text": messages[-2]["content"][0]["text"]}]
        text = f"question {turn}: " + " ".join(str(rng.random()) for _ in range(10))
        block = {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
        messages.append({"role": "user", "content": [block]})
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You help. " * 600,
            "tools": tools,
            "messages": messages,
        }
        yield msgspec.json.encode(body)
        messages.append({"role": "assistant", "content": "x" * reply})


def record(turns: int, project: Path) -> dict[str, float]:
    """In this process: the conversation through a capture session, the cassette written."""
    from harness.capture import CaptureSession

    path = project / "fixtures" / "cassettes" / "test_conversation.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    sent = last = 0
    started = time.process_time()
    session = CaptureSession.for_test(path, "record", writes_allowed=True)
    for data in bodies(turns):
        ticket = session.receive("POST", URL, [("x-api-key", "k")], data)
        session.complete(ticket, 200, [("content-type", "application/json")], b'{"id":"m"}')
        sent, last = sent + len(data), len(data)
    for target, data in session.finish().files:
        target.write_bytes(data)
    cpu = time.process_time() - started
    return {"turns": turns, "sent": sent, "last": last, "cpu": cpu, "size": path.stat().st_size}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(turns: int, folder: Path) -> dict[str, float]:
    project = folder / f"t{turns}"
    print(f"[conversation] recording {turns:,} turns", file=sys.stderr, flush=True)
    child = [sys.executable, "-m", "bench.conversation", "--record", str(turns), str(project)]
    figures: dict[str, float] = json.loads(
        subprocess.run(child, check=True, capture_output=True).stdout
    )
    print(f"[conversation] checking {turns:,} turns", file=sys.stderr, flush=True)
    before = _child_cpu()
    check = [sys.executable, "-m", "harness.cli", "check", "--shuffle", "0", "fixtures"]
    done = subprocess.run(check, cwd=project, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"harness check failed on {turns} turns: {done.stdout[-2000:]!r}")
    figures["check"] = _child_cpu() - before
    return figures


def _per_mb(runs: list[dict[str, float]], key: str) -> tuple[float, float, float]:
    """The median, lowest and highest of `key`'s CPU per megabyte sent, in milliseconds."""
    values = sorted(run[key] / run["sent"] * 1e9 for run in runs)
    return statistics.median(values), values[0], values[-1]


def render(sizes: list[list[dict[str, float]]]) -> str:
    lines = [
        "| turns | bytes sent | last request | cassette | cassette / last | record, CPU per MB"
        " sent | `harness check --shuffle 0`, CPU per MB sent |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for runs in sizes:
        row = runs[0]
        record_ms, record_low, record_high = _per_mb(runs, "cpu")
        check_ms, check_low, check_high = _per_mb(runs, "check")
        lines.append(
            f"| {row['turns']:,.0f} | {row['sent'] / 1e6:,.1f} MB | {row['last'] / 1e3:,.0f} KB"
            f" | {row['size'] / 1e3:,.0f} KB | {row['size'] / row['last']:.2f}x"
            f" | {record_ms:,.0f} ms ({record_low:,.0f}-{record_high:,.0f})"
            f" | {check_ms:,.0f} ms ({check_low:,.0f}-{check_high:,.0f}) |"
        )
    first, largest = sizes[0], sizes[-1]
    growth = _per_mb(largest, "cpu")[0] / _per_mb(first, "cpu")[0]
    check_growth = _per_mb(largest, "check")[0] / _per_mb(first, "check")[0]
    ratio = largest[0]["size"] / largest[0]["last"]
    met = "met" if ratio <= SIZE_GOAL else "**missed**"
    span = f"{first[0]['turns']:,.0f} -> {largest[0]['turns']:,.0f} turns"
    lines += [
        "",
        f"- {met}: a {largest[0]['turns']:,.0f}-turn cassette at most {SIZE_GOAL:.0f}x its last"
        f" request: {ratio:.2f}x",
        f"- CPU per byte sent, {span} (medians, {len(largest)} run(s) each): recording"
        f" x{growth:.2f}, checking x{check_growth:.2f}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.conversation", description=__doc__)
    parser.add_argument("--turns", default="250,1000", help="comma-separated sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each size (default 3)")
    parser.add_argument("--record", nargs=2, metavar=("TURNS", "PROJECT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:  # the child: one recording, its figures as JSON on stdout
        print(json.dumps(record(int(args.record[0]), Path(args.record[1]))))
        return 0
    turns = [int(n) for n in args.turns.split(",")]
    sizes: list[list[dict[str, float]]] = [[] for _ in turns]
    with tempfile.TemporaryDirectory(prefix="bench-conversation-") as folder:
        for repeat in range(max(args.repeat, 1)):  # the sizes take turns
            for index, count in enumerate(turns):
                sizes[index].append(measure(count, Path(folder) / str(repeat)))
    sys.stdout.write(render(sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
