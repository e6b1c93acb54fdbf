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
from dataclasses import dataclass
from importlib import import_module
from typing import Final, NoReturn

from harness._shared._errors import HarnessError, UsageError, WriteRefused, one_line
from harness.cli._options import fail_on

# -- the subcommands, each imported only when it runs -------------------------------------------


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, what runs it and what defines its arguments (each
    "module:function", imported only when the subcommand is the one asked for, so that
    `harness --help` and every subcommand import what they use and nothing else), its help."""

    name: str
    run: str
    help: str
    arguments: str | Callable[[argparse.ArgumentParser], None] | None = None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, not {value}")
    return value


def _shuffle(command: argparse.ArgumentParser, default: int) -> None:
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


def _formats(command: argparse.ArgumentParser) -> None:
    command.add_argument("--format", choices=("text", "markdown", "json"), default="text")


def _demo(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "paths", nargs="*", help="scenario folders (default: the scenarios shipped with harness)"
    )
    _shuffle(command, 16)


def _check(command: argparse.ArgumentParser) -> None:
    command.add_argument("paths", nargs="*")
    _shuffle(command, 8)
    _formats(command)
    fail_on(command)


def _replay(command: argparse.ArgumentParser) -> None:
    command.add_argument("paths", nargs="*")
    command.add_argument("-v", "--verbose", action="store_true")
    _formats(command)


def _record(command: argparse.ArgumentParser) -> None:
    command.add_argument("scenarios", nargs="+", help="scenario folders or names under fixtures/")


def _paths(command: argparse.ArgumentParser) -> None:
    command.add_argument("paths", nargs="*")


def _diff(command: argparse.ArgumentParser) -> None:
    command.add_argument("a")
    command.add_argument("b")
    _formats(command)


def _show(command: argparse.ArgumentParser) -> None:
    command.add_argument("paths", nargs="*")
    command.add_argument(
        "--requests",
        action="store_true",
        help="after each cassette's summary, every request whole, as it was sent",
    )
    command.add_argument(
        "--request",
        action="append",
        metavar="N",
        help="only this request of each cassette, whole (N, or C.N for prove_stable call C's"
        " exchange N); repeat it for more",
    )


_COMMANDS = "harness.cli._commands"
COMMANDS: Final = (
    Command(
        "demo",
        f"{_COMMANDS}:cmd_demo",
        "replay, rebuild, shuffle and pin-check every shipped scenario; print a table",
        _demo,
    ),
    Command(
        "check",
        "harness.cli._check:cmd_check",
        "CI gate: replay, shuffle and pin-check scenarios; check every cassette under the paths "
        "(format, redaction, the prefix chain per endpoint); exit 1 on drift; never writes",
        _check,
    ),
    Command(
        "replay",
        f"{_COMMANDS}:cmd_replay",
        "replay scenarios on their recorded answers and compare",
        _replay,
    ),
    Command(
        "record",
        f"{_COMMANDS}:cmd_record",
        "run scenarios against their stand-in model and write the recording",
        _record,
    ),
    Command(
        "refresh",
        f"{_COMMANDS}:cmd_refresh",
        "rewrite logs, requests and pins from replay, and cassettes in the current format (3);"
        " print what changed",
        _paths,
    ),
    Command(
        "diff",
        f"{_COMMANDS}:cmd_diff",
        "drift report between two requests files, pins, cassettes or provider request bodies",
        _diff,
    ),
    Command(
        "show",
        f"{_COMMANDS}:cmd_show",
        "summarise scenario folders and cassettes (per request: what it caches under the rules)",
        _show,
    ),
    Command(
        "lint",
        "harness.cli._lint:cmd_lint",
        "run the providers' cache rules on cassettes, request bodies (.json) and sessions"
        " (.jsonl); exit 1 when a finding is an error",
        "harness.cli._lint:add_arguments",
    ),
    Command(
        "rules",
        "harness.cli._lint:cmd_rules",
        "print the rules and the rules pack (sources, dates, conflicts)",
        "harness.cli._lint:rules_arguments",
    ),
    Command(
        "cost",
        "harness.cli._cost:cmd_cost",
        "what the recorded conversations cost: simulated under the cache rules (read,"
        " written per TTL, uncached) and priced at list prices (or the project's)",
        "harness.cli._cost:add_arguments",
    ),
    Command(
        "report",
        "harness.cli._cost:cmd_report",
        "write one self-contained HTML page (and --markdown for a pull-request comment): per"
        " conversation its cost timeline, first divergence, tool order, findings, agreement",
        "harness.cli._cost:report_arguments",
    ),
    Command(
        "scan",
        "harness.cli._scan:cmd_scan",
        "judge production traces (OTel, OpenInference, Langfuse, LiteLLM, Helicone, Bedrock,"
        " proxy JSONL, cassettes) by the cache model: which sessions broke their cached prefix,"
        " where, and what it cost; exit 1 on a break",
        "harness.cli._scan:add_arguments",
    ),
    Command(
        "init",
        f"{_COMMANDS}:cmd_init",
        "set up a project: pytest configuration, a conftest with harness_upstream and "
        "harness_capture_config, and a first proof of stable tool order; never overwrites",
        "harness.cli.init._command:add_arguments",
    ),
)


def resolve(target: str) -> Callable[..., object]:
    """The function a "module:function" string names, imported now."""
    module, _, name = target.partition(":")
    found: Callable[..., object] = getattr(import_module(module), name)
    return found


# -- entry point ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one `UsageError` line (exit 2) instead of usage and exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser. Every subcommand is listed; only the `chosen` one's arguments are defined
    (all of them when None, none when ""), so building it imports no other subcommand's
    module."""
    top = _Parser(
        prog="harness",
        description="Prove an LLM agent's request headers are byte-stable: "
        "record, replay, shuffle, diff.",
        epilog="exit codes: 0 ok, 1 drift found, 2 bad input or usage (the message names the file)",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        made = sub.add_parser(command.name, help=command.help, description=command.help)
        made.set_defaults(run=command.run)
        if command.arguments is not None and chosen in (None, command.name):
            define = command.arguments
            (resolve(define) if isinstance(define, str) else define)(made)
    return top


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` asks for (the first word that is not an option), if it names one."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if any(command.name == first for command in COMMANDS) else None


def main(argv: Sequence[str] | None = None) -> int:
    command = "harness"
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser(_chosen(words) or "").parse_args(words)
        command = f"harness {args.command}"
        if args.command in ("record", "refresh"):
            from harness._shared._ci import detect_ci

            found = detect_ci()
            if found is not None:
                raise WriteRefused(
                    f"refusing to write under CI ({found.describe()}): CI never writes; run it"
                    " locally and commit the result"
                )
        from harness.providers._registry import strict_providers

        with strict_providers():  # a provider that raises: one line and exit 2, not a verdict
            code = resolve(args.run)(args)
            assert isinstance(code, int), f"{args.run} returned {code!r}, not an exit code"
            return code
    except HarnessError as error:  # every error a user can cause: one line, its exit code
        from harness.cli._output import err

        err(one_line(f"{command}: {error}"))
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `harness check | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # as a shell reports a process SIGPIPE ended


if __name__ == "__main__":
    sys.exit(main())
