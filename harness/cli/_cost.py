"""`harness cost`: what the recorded conversations cost, simulated under the rules and priced.

`harness cost PATH... [--model M] [--format text|json] [--prices FILE] [--rules FILE]` reads what
`harness lint` reads (cassettes, folders, request bodies, sessions `.jsonl` with `time` and
`response`), simulates each conversation (`harness.cost`) and prices each request (the project's
`harness-prices.json` or `--prices` rows first, then the price pack, then genai-prices). JSON: an
object with `sessions` (one per conversation: `file`, `provider`, `model`, `requests`,
`input_tokens`, `cache_read_tokens`, `cache_write_tokens`, `uncached_tokens`, `hit_rate`, `usd`,
`usd_without_cache`, `recorded`, `agreement`, `prices_checked_on`), `totals`, and `prices`: in
the order of `sessions`, where each conversation's prices came from (`sources`: genai-prices with
its `version` and `model` id, a price-pack page or a project file with its `checked_on` and
`quote`; which prices each `gave`), the first request's prices, and what `applied` to how many
requests (a long-context tier, a time-of-day window, a weekday price). `--model` re-simulates and
re-prices under another model's rules and prices; a model nothing prices is one usage line (exit
2). Exit 0; 2 for bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness._shared._errors import UsageError
from harness._shared._files import refuse_non_regular, write_output
from harness._shared._paths import project_fixtures
from harness.cache._replay import Conversation
from harness.cli._output import out, out_json
from harness.cost._cost import cost_of, price_of, prices_used, totals
from harness.cost._prices import overlay_prices, project_prices
from harness.cost._read import conversations_of
from harness.cost._text import breakdown, money, percent
from harness.providers._pack import overlay
from harness.rules._project import project_rules, rows_of

__all__ = ["add_arguments", "cmd_cost", "cmd_report", "prices_in_force", "report_arguments"]


def add_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "paths",
        nargs="*",
        help="cassettes, folders of cassettes, request bodies (.json) or sessions (.jsonl);"
        " default ./fixtures",
    )
    command.add_argument(
        "--model", default=None, help="re-simulate and re-price under this model's rules and prices"
    )
    command.add_argument("--format", choices=("text", "json"), default="text")
    prices_option(command)
    command.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="the project's rules file (default: harness-rules.json here, when there is one)",
    )


def prices_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--prices",
        action="append",
        default=[],
        metavar="FILE",
        help="the project's prices, asked before the price pack and genai-prices (a negotiated"
        " rate; default: harness-prices.json here)",
    )


@contextmanager
def prices_in_force(args: argparse.Namespace) -> Iterator[None]:
    with overlay_prices(project_prices(Path.cwd(), getattr(args, "prices", ()) or ())):
        yield


@contextmanager
def rows_in_force(args: argparse.Namespace) -> Iterator[None]:
    """The project's rules rows in force (`harness-rules.json`, `--rules`), its files checked as
    `harness lint` checks them; no policy: `harness cost` reports no finding, so its rules (and
    every rule's module) are not imported."""
    with overlay(rows_of(project_rules(Path.cwd(), getattr(args, "rules", ()) or ()))):
        yield


def cmd_cost(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths] if args.paths else [project_fixtures()]
    with rows_in_force(args), prices_in_force(args):
        found = conversations_of(paths, args.model)
        known_model(args.model, found)
        costs = [cost_of(conversation) for conversation in found]
        used = [prices_used(conversation) for conversation in found]
    total = totals(costs)
    if args.format == "json":
        out_json({"sessions": costs, "totals": total, "prices": used})
        return 0
    for conversation, cost, prices in zip(found, costs, used, strict=True):
        out(
            f"{cost.file} ({cost.provider} {cost.model or 'no model'}):"
            f" {breakdown(cost, conversation, prices)}"
        )
    out(
        f"harness cost: {total.sessions} conversation(s), {total.requests} request(s):"
        f" {money(total.usd)} ({money(total.usd_without_cache)} without the cache), hit rate"
        f" {percent(total.hit_rate)}"
    )
    return 0


def known_model(model: str | None, found: Sequence[Conversation]) -> None:
    """A `--model` something prices for every conversation's provider; else one usage line (a
    misspelt model would price everything at $0 and say nothing)."""
    if model is None:
        return
    for conversation in found:
        if price_of(conversation) is None:
            from harness.cost._registry import REGISTRY, version

            raise UsageError(
                f"--model {model}: neither {REGISTRY} {version()} nor the price pack prices it on"
                f" {conversation.provider} ({conversation.file}); name a model they price (the"
                " provider's own id), or add a row to harness-prices.json (--prices FILE)"
            )


def report_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "paths", nargs="+", help="cassettes, folders of cassettes, request bodies or sessions"
    )
    command.add_argument("--html", metavar="OUT", help="the HTML page to write")
    command.add_argument(
        "--markdown", metavar="OUT", help="the summary as Markdown (a pull-request comment)"
    )
    command.add_argument("--model", default=None, help="price under this model's rules and prices")
    prices_option(command)
    command.add_argument("--rules", action="append", default=[], metavar="FILE")


def cmd_report(args: argparse.Namespace) -> int:
    from harness.cli._lint import project_policy
    from harness.cost._html import render_html
    from harness.cost._report import markdown, report_items

    if not args.html and not args.markdown:
        raise UsageError("give --html OUT, --markdown OUT or both")
    for option, given in (("--html", args.html), ("--markdown", args.markdown)):
        if given:  # a FIFO or a device is refused before anything is read or written
            refuse_non_regular(Path(given), f"a file for {option}")
    paths = [Path(p) for p in args.paths]
    with project_policy(args) as policy, prices_in_force(args):
        if args.model is not None:
            known_model(args.model, conversations_of(paths, args.model))
        items = report_items(paths, args.model, policy)
    if args.html:
        _write(Path(args.html), render_html(items))
        out(f"harness report: wrote {args.html} ({len(items)} conversation(s))")
    if args.markdown:
        _write(Path(args.markdown), markdown(items))
        out(f"harness report: wrote {args.markdown} ({len(items)} conversation(s))")
    return 0


def _write(path: Path, text: str) -> None:
    """A report file (an output, as under CI too: not a fixture), written atomically; a failure
    is one line, and the old file is whole."""
    write_output(path, text.encode("utf-8"))
