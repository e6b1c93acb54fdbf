"""`python -m bench.scan`: `harness scan` against its floor, both tiers, both engines, memory.

For each size (100k and 1M requests; `--quick`: 20k and 100k) it writes synthetic traces
(`bench.scan_data`: proxy JSONL with 7 KB bodies and 1% breaks, and the same sessions as a
Parquet digest table) and measures, each in a fresh process so CPU time and peak RSS are its own:
- the floor: DuckDB reading the same file and hashing each row (`hash()` of each line of the
  JSONL; of the digest columns of the Parquet), the least any engine spends on that input;
- the digest tier: `harness scan digests.parquet` (DuckDB);
- the byte tier: `harness scan bytes.jsonl` (DuckDB), its findings checked against the breaks
  planted (a run that found other breaks is refused, not timed);
- Dask on one machine (`--engine dask --workers 2`) on the smaller size's JSONL.
Requests per second per core are requests over the process's CPU seconds (user + system, its
children included: Dask's worker processes), so a loaded machine's wall clock does not enter
them; each figure is the median of `--repeat` runs with its spread (min-max). With two sizes it
also prints what each request past the smaller size cost (the difference of the two runs' CPU
over the difference of their sizes): what a run pays once, starting Python and importing its
libraries, left out of both the scan's figure and its floor's. `--baseline DIR` runs both
tiers at the smallest size on another tree too (`PYTHONPATH=DIR`), each run taking turns with
this tree's, and prints the two rates side by side: on a machine shared with other jobs, CPU
time per request grows with the load, so only figures of one run compare. The traces are
written by a process of their own, so this one stays small: a child's peak RSS counts the
memory of the process it was forked from. Progress goes to stderr; stdout is the Markdown
table. Targets (issue 31): the digest tier within 3x of its
floor; the byte tier at least 20k requests/s per core; peak RSS flat from 100k to 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

FLOOR_JSONL = (
    'import duckdb,sys; c=duckdb.connect(); c.execute("SET threads=1");'
    " print(c.execute(\"SELECT count(*), sum(hash(l)) FROM read_csv(?, columns={'l': 'VARCHAR'},"
    " delim=chr(1), quote='', escape='', header=false, max_line_size=100000000)\","
    " [sys.argv[1]]).fetchone())"
)
FLOOR_PARQUET = (
    'import duckdb,sys; c=duckdb.connect(); c.execute("SET threads=1");'
    ' print(c.execute("SELECT count(*), sum(hash(session, d_settings, d_tools, d_system, d_ttls,'
    ' conv, items)) FROM read_parquet(?)", [sys.argv[1]]).fetchone())'
)


@dataclass(frozen=True)
class Run:
    cpu_s: float
    wall_s: float
    peak_mib: float
    stdout: str


@dataclass(frozen=True)
class Figure:
    name: str
    requests: int
    per_core: float  # requests per CPU second, median
    low: float
    high: float
    cpu_s: float
    wall_s: float
    peak_mib: float


def measure(args: list[str], pythonpath: str | None = None) -> Run:
    import time

    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
    start = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = process.stdout.read() if process.stdout is not None else b""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(args[:4])}... exited {code}")
    return Run(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, out.decode())


def figure(name: str, requests: int, runs: list[Run]) -> Figure:
    rates = [requests / run.cpu_s for run in runs]
    return Figure(
        name,
        requests,
        statistics.median(rates),
        min(rates),
        max(rates),
        statistics.median(run.cpu_s for run in runs),
        statistics.median(run.wall_s for run in runs),
        max(run.peak_mib for run in runs),
    )


def scan_args(path: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "harness.cli",
        "scan",
        str(path),
        "--quiet",
        "--format",
        "json",
        *extra,
    ]


WRITE = (
    "import sys; from pathlib import Path; from bench.scan_data import write_digests, write_jsonl;"
    " n = int(sys.argv[3]); a = write_jsonl(Path(sys.argv[1]), n);"
    " b = write_digests(Path(sys.argv[2]), n); assert a == b; print(a)"
)


def _written(jsonl: Path, parquet: Path, size: int) -> int:
    """The synthetic traces, written by a process of their own: a child's peak RSS counts the
    memory of the process it was forked from (Linux keeps the larger of the two across exec),
    so this one must stay small, and making a million rows would not leave it so."""
    root = str(Path(__file__).resolve().parents[1])  # where `bench` is
    paths = [root, *filter(None, [os.environ.get("PYTHONPATH")])]
    done = subprocess.run(
        [sys.executable, "-c", WRITE, str(jsonl), str(parquet), str(size)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
    )
    return int(done.stdout)


def checked(run: Run, planted: int) -> Run:
    found = json.loads(run.stdout)["totals"]
    if found["errors"] != planted:
        raise SystemExit(f"the scan found {found['errors']} breaks, {planted} were planted")
    return run


Step = tuple[str, list[str], int | None, str | None]  # name, command, breaks, PYTHONPATH


def bench(sizes: list[int], repeat: int, folder: Path, baseline: str | None = None) -> list[Figure]:
    figures: list[Figure] = []
    for size in sizes:
        jsonl, parquet = folder / f"bytes-{size}.jsonl", folder / f"digests-{size}.parquet"
        print(f"writing {size:,} requests...", file=sys.stderr)
        planted = _written(jsonl, parquet, size)
        digest: list[Step] = [(DIGEST, scan_args(parquet), planted, None)]
        byte: list[Step] = [(BYTES, scan_args(jsonl), planted, None)]
        if baseline is not None and size == min(sizes):  # another tree, taking turns
            digest.append((f"{DIGEST}, {BASELINE}", scan_args(parquet), planted, baseline))
            byte.append((f"{BYTES}, {BASELINE}", scan_args(jsonl), planted, baseline))
        groups: list[list[Step]] = [
            [(FLOOR_P, [sys.executable, "-c", FLOOR_PARQUET, str(parquet)], None, None)],
            digest,
            [(FLOOR_J, [sys.executable, "-c", FLOOR_JSONL, str(jsonl)], None, None)],
            byte,
        ]
        if size == min(sizes):
            groups.append(
                [(DASK, scan_args(jsonl, "--engine", "dask", "--workers", "2"), planted, None)]
            )
        for group in groups:
            runs: dict[str, list[Run]] = {name: [] for name, *_ in group}
            for _ in range(repeat):
                for name, args, breaks, path in group:
                    print(f"{size:,}: {name}", file=sys.stderr)
                    run = measure(args, path)
                    runs[name].append(run if breaks is None else checked(run, breaks))
            figures += [figure(name, size, found) for name, found in runs.items()]
        jsonl.unlink()
        parquet.unlink()
    return figures


BASELINE = "baseline tree"
FLOOR_P, DIGEST, FLOOR_J, BYTES, DASK = (
    "floor: DuckDB reads the Parquet, hashes each row",
    "digest tier (Parquet of digests), DuckDB",
    "floor: DuckDB reads the JSONL, hashes each line",
    "byte tier (JSONL, 7 KB bodies, 1% breaks), DuckDB",
    "byte tier, Dask (2 worker processes, one machine)",
)


def render(figures: list[Figure]) -> str:
    lines = [
        "| requests | what | requests/s per core (median, min-max) | CPU s | wall s | peak RSS"
        " MiB |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for f in figures:
        lines.append(
            f"| {f.requests:,} | {f.name} | {f.per_core:,.0f} ({f.low:,.0f}-{f.high:,.0f}) |"
            f" {f.cpu_s:.1f} | {f.wall_s:.1f} | {f.peak_mib:,.0f} |"
        )
    by = {(f.requests, f.name): f for f in figures}
    sizes = sorted({f.requests for f in figures})
    lines.append("")
    for size in sizes:
        floor, digest = by.get((size, FLOOR_P)), by.get((size, DIGEST))
        if floor and digest:
            lines.append(
                f"- {size:,}: the digest tier takes {floor.per_core / digest.per_core:.1f}x its"
                " floor's CPU time (target: within 3x)"
            )
        floor, byte = by.get((size, FLOOR_J)), by.get((size, BYTES))
        if floor and byte:
            lines.append(
                f"- {size:,}: the byte tier reads {byte.per_core:,.0f} requests/s per core"
                f" (target: 20,000), {floor.per_core / byte.per_core:.1f}x its floor's CPU time"
            )
        for name, what in ((DIGEST, "digest tier"), (BYTES, "byte tier")):
            here, there = by.get((size, name)), by.get((size, f"{name}, {BASELINE}"))
            if here and there:
                lines.append(
                    f"- {size:,}: the {what} reads {here.per_core:,.0f} requests/s per core,"
                    f" the baseline tree {there.per_core:,.0f} in the same runs, taking turns"
                    f" ({here.per_core / there.per_core:.2f}x)"
                )
        dask = by.get((size, DASK))
        if dask and byte:
            lines.append(
                f"- {size:,}: Dask on one machine takes {byte.per_core / dask.per_core:.1f}x"
                f" DuckDB's CPU time ({dask.wall_s:.1f} s against {byte.wall_s:.1f} s wall)"
            )
    if len(sizes) > 1:
        lines += _marginal(by, sizes[0], sizes[-1])
        for name in (DIGEST, BYTES):
            small, large = by.get((sizes[0], name)), by.get((sizes[-1], name))
            if small and large:
                lines.append(
                    f"- {name.split(' (')[0]}: peak RSS {small.peak_mib:,.0f} MiB at"
                    f" {sizes[0]:,}, {large.peak_mib:,.0f} MiB at {sizes[-1]:,}"
                    f" ({large.peak_mib / small.peak_mib:.2f}x for"
                    f" {sizes[-1] // sizes[0]}x the requests)"
                )
    return "\n".join(lines) + "\n"


def _marginal(by: dict[tuple[int, str], Figure], small: int, large: int) -> list[str]:
    """The figures between two sizes: the CPU each request past the smaller size cost, which
    leaves out what every run pays once (starting Python, importing the engine and the judge,
    pricing tables), for the scan and its floor alike."""
    lines = []
    extra = large - small

    def per_request(name: str) -> float | None:
        a, b = by.get((small, name)), by.get((large, name))
        return (b.cpu_s - a.cpu_s) / extra if a and b else None

    for tier, floor, what in ((DIGEST, FLOOR_P, "digest tier"), (BYTES, FLOOR_J, "byte tier")):
        scan, base = per_request(tier), per_request(floor)
        if scan is None:
            continue
        head = f"- {small:,} to {large:,}: each request past {small:,} costs the {what}"
        if scan <= 0:  # toy sizes: the larger run took no more CPU than the smaller
            lines.append(f"{head} no CPU the runs could tell apart")
            continue
        text = f"{head} {scan * 1e6:,.1f} us of CPU ({1 / scan:,.0f} requests/s per core)"
        if base is not None and base > 0:
            text += f", {scan / base:.1f}x its floor's {base * 1e6:,.2f} us"
        lines.append(text)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scan", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20k and 100k requests, one run each")
    parser.add_argument("--sizes", help="comma-separated request counts (default 100000,1000000)")
    parser.add_argument("--repeat", type=int, default=None, help="runs per figure (default 3)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="at the smallest size, also run both tiers with PYTHONPATH=DIR (another tree of"
        " the project), in turns with this one",
    )
    args = parser.parse_args(argv)
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else ([20_000, 100_000] if args.quick else [100_000, 1_000_000])
    )
    repeat = args.repeat or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as folder:
        figures = bench(sizes, repeat, Path(folder), args.baseline)
    sys.stdout.write(render(figures))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(f) for f in figures], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
