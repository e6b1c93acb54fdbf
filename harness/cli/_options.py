"""Options several `harness` subcommands share, defined without importing what they drive (the
parser is built before any subcommand's module is imported: see `harness.cli._main`)."""

from __future__ import annotations

import argparse

__all__ = ["fail_on", "rules_file"]


def fail_on(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--fail-on",
        default="",
        metavar="RULE,...",
        help="rules whose findings fail (exit 1), besides the errors; 'all' for every rule",
    )
    rules_file(command)


def rules_file(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="the project's rules file (default: harness-rules.json here, when there is one)",
    )
