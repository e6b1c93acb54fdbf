"""One scan: the paths, the options and the engine in; a `ScanResult` out.

`scan(paths, settings)` expands the paths, reads them through the chosen engine (which calls the
one judge), and gathers the result. Bad input is a `HarnessError` (one line, exit 2): a path that
names nothing, a file given by name that no reader recognises, and an input that holds no
request at all ("no requests found" is never a green).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness._shared._errors import FixtureError, UsageError
from harness.scan._engines import run_dask, run_duckdb
from harness.scan._judge import forget_prices
from harness.scan._progress import Progress
from harness.scan._read import Options, Tally
from harness.scan._readers import readers
from harness.scan._result import ScanResult, result
from harness.scan._sources import files

__all__ = ["Settings", "scan"]


@dataclass(frozen=True)
class Settings:
    options: Options = field(default_factory=Options)
    engine: str = "duckdb"
    scheduler: str | None = None
    workers: int | None = None
    quiet: bool = False


def scan(paths: Sequence[str], settings: Settings) -> ScanResult:
    found = files(paths)
    if not found:
        raise UsageError(
            f"{', '.join(paths)}: holds no trace file (.json, .jsonl, .ndjson, .yaml, .parquet,"
            " gzip or zstd); give the files or the folder that holds them"
        )
    tally = Tally()
    forget_prices()
    progress = Progress(settings.quiet)
    try:
        if settings.engine == "dask":
            judged = run_dask(
                found,
                settings.options,
                tally,
                scheduler=settings.scheduler,
                workers=settings.workers,
                progress=progress.show,
            )
        else:
            judged = list(run_duckdb(found, settings.options, tally, progress.show))
    finally:
        progress.done()
    named = {str(Path(p)) for p in paths}
    for path in tally.unknown:
        if path in named:
            names = ", ".join(reader.name for reader in readers())
            raise FixtureError(
                path,
                "is no trace format the scan knows",
                f"the formats are {names}; name one with --from FORMAT",
            )
    outcome = result(judged, tally)
    if outcome.totals.requests == 0:
        why = f"; {tally.malformed:,} malformed record(s) skipped" if tally.malformed else ""
        window = f"; {tally.outside:,} outside --since/--until" if tally.outside else ""
        raise FixtureError(
            ", ".join(paths),
            f"no requests found{why}{window}",
            "a scan that judged nothing is not a pass: check the paths and --from",
        )
    return outcome
