"""The `harness` command.

Exit codes (the same for every subcommand):
  0  everything checked is as recorded (or the command did what it was asked)
  1  drift or another finding: the report says which block, where, and what it costs
  2  bad input or usage: an unreadable, corrupt or foreign file, an unsafe name, a bad argument, a
     write refused under CI or one that failed, a provider plugin that raises; one line names
     the file (or the provider) and what to do

The commands work on the user's `fixtures/` (or the folders given) and say so when there is none;
only `harness demo` uses the scenarios shipped with the harness. Everything printed goes through
the printer (`harness._shared._printer`: redacted, and safe for GitHub Actions) and is encodable on
any
terminal (a character the output encoding lacks is escaped, never a crash).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from harness._shared._ci import detect_ci
from harness._shared._errors import HarnessError, UsageError, WriteRefused, one_line
from harness.cli._commands import (
    cmd_check,
    cmd_demo,
    cmd_diff,
    cmd_init,
    cmd_record,
    cmd_refresh,
    cmd_replay,
    cmd_show,
)
from harness.cli._cost import add_arguments as cost_arguments
from harness.cli._cost import cmd_cost, cmd_report, report_arguments
from harness.cli._lint import add_arguments as lint_arguments
from harness.cli._lint import cmd_lint, cmd_rules
from harness.cli._lint import fail_on as fail_on_option
from harness.cli._output import err
from harness.cli._scan import add_arguments as scan_arguments
from harness.cli._scan import cmd_scan
from harness.cli.init._command import HELP as INIT_HELP
from harness.cli.init._command import add_arguments as init_arguments
from harness.providers._registry import strict_providers

# -- entry point ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one `UsageError` line (exit 2) instead of usage and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, not {value}")
    return value


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="harness",
        description="Prove an LLM agent's request headers are byte-stable: "
        "record, replay, shuffle, diff.",
        epilog="exit codes: 0 ok, 1 drift found, 2 bad input or usage (the message names the file)",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, fn: Callable[[argparse.Namespace], int], help_: str
    ) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_, description=help_)
        command.set_defaults(fn=fn)
        return command

    def shuffle_options(command: argparse.ArgumentParser, default: int) -> None:
        command.add_argument(
            "--shuffle",
            type=_count,
            default=default,
            metavar="N",
            help=f"registration orders per scenario (default {default}; 0 skips)",
        )
        command.add_argument(
            "--seed", type=int, default=0, help="seed of the shuffled orders (default 0)"
        )

    def formats(command: argparse.ArgumentParser) -> None:
        command.add_argument("--format", choices=("text", "markdown", "json"), default="text")

    demo = add(
        "demo",
        cmd_demo,
        "replay, rebuild, shuffle and pin-check every shipped scenario; print a table",
    )
    demo.add_argument(
        "paths", nargs="*", help="scenario folders (default: the scenarios shipped with harness)"
    )
    shuffle_options(demo, 16)

    check = add(
        "check",
        cmd_check,
        "CI gate: replay, shuffle and pin-check scenarios; check every cassette under the paths "
        "(format, redaction, the prefix chain per endpoint); exit 1 on drift; never writes",
    )
    check.add_argument("paths", nargs="*")
    shuffle_options(check, 8)
    formats(check)
    fail_on_option(check)

    replay = add("replay", cmd_replay, "replay scenarios on their recorded answers and compare")
    replay.add_argument("paths", nargs="*")
    replay.add_argument("-v", "--verbose", action="store_true")
    formats(replay)

    record = add(
        "record", cmd_record, "run scenarios against their stand-in model and write the recording"
    )
    record.add_argument("scenarios", nargs="+", help="scenario folders or names under fixtures/")

    refresh = add(
        "refresh", cmd_refresh, "rewrite logs, requests and pins from replay; print what changed"
    )
    refresh.add_argument("paths", nargs="*")

    diff = add(
        "diff",
        cmd_diff,
        "drift report between two requests files, pins, cassettes or provider request bodies",
    )
    diff.add_argument("a")
    diff.add_argument("b")
    formats(diff)

    show = add(
        "show",
        cmd_show,
        "summarise scenario folders and cassettes (per request: what it caches under the rules)",
    )
    show.add_argument("paths", nargs="*")

    lint_arguments(
        add(
            "lint",
            cmd_lint,
            "run the providers' cache rules on cassettes, request bodies (.json) and sessions"
            " (.jsonl); exit 1 when a finding is an error",
        ),
        add("rules", cmd_rules, "print the rules and the rules pack (sources, dates, conflicts)"),
    )

    cost_arguments(
        add(
            "cost",
            cmd_cost,
            "what the recorded conversations cost: simulated under the cache rules (read,"
            " written per TTL, uncached) and priced at list prices (or the project's)",
        )
    )

    report_arguments(
        add(
            "report",
            cmd_report,
            "write one self-contained HTML page (and --markdown for a pull-request comment): per"
            " conversation its cost timeline, first divergence, tool order, findings, agreement",
        )
    )

    scan_arguments(
        add(
            "scan",
            cmd_scan,
            "judge production traces (OTel, OpenInference, Langfuse, LiteLLM, Helicone, Bedrock,"
            " proxy JSONL, cassettes) by the cache model: which sessions broke their cached prefix,"
            " where, and what it cost; exit 1 on a break",
        )
    )

    init_arguments(add("init", cmd_init, INIT_HELP))
    return top


def main(argv: Sequence[str] | None = None) -> int:
    command = "harness"
    try:
        args = parser().parse_args(argv)
        command = f"harness {args.command}"
        found = detect_ci()
        if args.command in ("record", "refresh") and found is not None:
            raise WriteRefused(
                f"refusing to write under CI ({found.describe()}): CI never writes; run it"
                " locally and commit the result"
            )
        with strict_providers():  # a provider that raises: one line and exit 2, not a verdict
            return int(args.fn(args))
    except HarnessError as error:  # every error a user can cause: one line, its exit code
        err(one_line(f"{command}: {error}"))
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `harness check | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # as a shell reports a process SIGPIPE ended


if __name__ == "__main__":
    sys.exit(main())
