"""`harness scan`: production traces judged by the cache model, at fleet scale.

`harness scan PATH... [--from FORMAT] [--session-key KEY] [--request-id-key KEY] [--deploy-key
KEY] [--format text|json|markdown] [--sarif FILE] [--html FILE] [--engine duckdb|dask]
[--scheduler ADDR | --workers N] [--since T] [--until T] [--fail-on-loss USD] [--quiet]`

Exit 0 when no break is found, 1 when one is (with `--fail-on-loss USD`: when the dollars lost
pass USD instead), 2 for bad input or usage (one line). Everything printed and every file
written goes through the printer's redaction. See docs/scan.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness._shared._errors import UsageError
from harness._shared._files import refuse_non_regular, write_output
from harness._shared._formats import as_json
from harness._shared._printer import redact
from harness.cli._output import out, out_json
from harness.scan._extras import require_scan
from harness.scan._keys import seconds
from harness.scan._readers import readers

__all__ = ["add_arguments", "cmd_scan"]


def _time(value: str) -> float:
    found = seconds(value)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"expected epoch seconds or an ISO 8601 time (2026-12-01T00:00:00Z), not {value!r}"
        )
    return found


def _usd(value: str) -> float:
    try:
        found = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount in USD, not {value!r}") from None
    if not found >= 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, not {value}")
    return found


def _workers(value: str) -> int:
    try:
        found = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {value!r}") from None
    if found < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, not {found}")
    return found


def add_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace files, folders or globs (gzip, zstd too)"
    )
    formats = [reader.name for reader in readers()]
    command.add_argument(
        "--from",
        dest="fmt",
        choices=formats,
        metavar="FORMAT",
        help=f"the format of every file ({', '.join(formats)}); default: detected per file",
    )
    command.add_argument("--session-key", metavar="KEY", help="dotted path to the session id")
    command.add_argument("--request-id-key", metavar="KEY", help="dotted path to the request id")
    command.add_argument("--deploy-key", metavar="KEY", help="dotted path to the deploy")
    command.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    command.add_argument("--sarif", metavar="FILE", help="write SARIF 2.1.0 (one result a finding)")
    command.add_argument("--html", metavar="FILE", help="write one self-contained HTML page")
    command.add_argument("--engine", choices=("duckdb", "dask"), default="duckdb")
    where = command.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR", help="a Dask scheduler (tcp://HOST:PORT)")
    where.add_argument(
        "--workers", type=_workers, metavar="N", help="a local Dask cluster of N workers"
    )
    command.add_argument("--since", type=_time, metavar="T", help="only requests from T on")
    command.add_argument("--until", type=_time, metavar="T", help="only requests up to T")
    command.add_argument(
        "--fail-on-loss", type=_usd, metavar="USD", help="exit 1 only when the loss passes USD"
    )
    command.add_argument("--quiet", action="store_true", help="no progress line")


def cmd_scan(args: argparse.Namespace) -> int:
    require_scan(args.engine)
    from harness.scan import Options, Settings, markdown, render_html, sarif, scan, text

    if (args.scheduler or args.workers) and args.engine != "dask":
        raise UsageError("--scheduler and --workers are for --engine dask")
    if args.since is not None and args.until is not None and args.since > args.until:
        raise UsageError("--since is after --until: nothing could be in that window")
    for option, given in (("--sarif", args.sarif), ("--html", args.html)):
        if given:  # a FIFO or a device is refused before anything is read or written
            refuse_non_regular(Path(given), f"a file for {option}")
    settings = Settings(
        options=Options(
            fmt=args.fmt,
            session_key=args.session_key,
            request_id_key=args.request_id_key,
            deploy_key=args.deploy_key,
            since=args.since,
            until=args.until,
        ),
        engine=args.engine,
        scheduler=args.scheduler,
        workers=args.workers,
        quiet=args.quiet,
    )
    found = scan(args.paths, settings)
    if args.sarif:
        _write(Path(args.sarif), as_json(sarif(found), indent=2))  # redacted as it is made
    if args.html:
        _write(Path(args.html), redact(render_html(found)))
    if args.format == "json":
        out_json(found)
    elif args.format == "markdown":
        out(markdown(found))
    else:
        out(text(found))
    if args.fail_on_loss is not None:
        return 1 if found.totals.usd_lost > args.fail_on_loss else 0
    return 1 if found.totals.errors else 0


def _write(path: Path, content: str) -> None:
    """An output file, redacted already as everything printed is (an output, written under CI
    too): SARIF each string before it is encoded, HTML as a whole (its escapes hold no token
    character a key shape reads); written atomically: a failure is one line, the old file whole."""
    write_output(path, content.encode("utf-8"))
