"""`harness lint` and `harness rules`: the rules on files, and the rules pack itself.

`harness lint PATH... [--format text|json] [--fail-on RULE,...] [--rules FILE]` runs every rule
on cassettes, folders of them, request bodies and session files (`harness.rules._inputs`), with
the project's rules file applied (`harness-rules.json` here, or `--rules`). Exit 1 when a finding
is an error, 0 otherwise, 2 for bad input. JSON output is an object: `findings` (each with
`rule`, `severity`, `file`, `request`, `message`, and `provider`, `model`, `pointer` when known),
`files`, `requests`, the count per severity, and `unjudged` (requests no provider recognises).

`harness rules [--format text|json]` prints the rules (name, default severity, providers,
meaning, fix) and the pack's rows with their sources, the quote that decides each, dates and
conflicts, the project's rows first. `harness rules --stale DAYS` lists instead the rows not
compared with their source for more than DAYS days (JSON: the same object, with `stale`: the
cutoff date, the days, and those rows), oldest first; it exits 0 (a list, not a verdict).
"""

from __future__ import annotations

import argparse
import datetime
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import msgspec

from harness._shared._errors import EXIT_DRIFT
from harness._shared._formats import code, text
from harness._shared._paths import project_fixtures
from harness.cache._analysis import analyse
from harness.capture._cassette import Exchange
from harness.cli._options import fail_on, rules_file
from harness.cli._output import out, out_json
from harness.providers._pack import (
    AnyRow,
    Breakpoints,
    Caching,
    Compaction,
    Levels,
    Lookback,
    Minimum,
    Setting,
    Ttl,
    overlay,
    rules_pack,
    stale_rows,
)
from harness.rules._engine import Finding, Session
from harness.rules._engine import Policy as RulesPolicy
from harness.rules._inputs import requests_of_exchanges, sessions_of
from harness.rules._project import policy_of, project_rules, rows_of
from harness.rules._registry import lint, registered_rules

__all__ = [
    "add_arguments",
    "cmd_lint",
    "cmd_rules",
    "finding_lines",
    "project_policy",
    "rules_arguments",
]


def add_arguments(command: argparse.ArgumentParser) -> None:
    """`harness lint`'s arguments."""
    command.add_argument(
        "paths",
        nargs="*",
        help="cassettes, folders of cassettes, request bodies (.json) or sessions (.jsonl);"
        " default ./fixtures",
    )
    command.add_argument("--format", choices=("text", "json"), default="text")
    fail_on(command)


def rules_arguments(command: argparse.ArgumentParser) -> None:
    """`harness rules`'s arguments."""
    command.add_argument("--format", choices=("text", "json"), default="text")
    command.add_argument(
        "--stale",
        type=_days,
        default=None,
        metavar="DAYS",
        help="list only the rows not checked against their source for more than DAYS days",
    )
    rules_file(command)


def _days(value: str) -> int:
    try:
        days = int(value)
    except ValueError:
        days = -1
    if days < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days (0 or more)")
    return days


@contextmanager
def project_policy(args: argparse.Namespace) -> Iterator[RulesPolicy]:
    """The project's rows in force and its policy, for one command."""
    files = project_rules(Path.cwd(), getattr(args, "rules", ()) or ())
    policy = policy_of(files, getattr(args, "fail_on", "") or "")
    with overlay(rows_of(files)):
        yield policy


def cmd_lint(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths] if args.paths else [project_fixtures()]
    with project_policy(args) as policy:
        sessions = sessions_of(paths)
        findings = [finding for session in sessions for finding in lint(session, policy)]
    files = len({session.file for session in sessions})
    requests = sum(len(session.requests) for session in sessions)
    unjudged = sum(analysis is None for session in sessions for analysis in session.analyses)
    counts = Counter(finding.severity for finding in findings)
    if args.format == "json":
        out_json(
            {
                "findings": findings,
                "files": files,
                "requests": requests,
                "errors": counts["error"],
                "warnings": counts["warning"],
                "info": counts["info"],
                "unjudged": unjudged,
            }
        )
    else:
        for line in finding_lines(findings):
            out(line)
        where = f"in {requests} requests of {files} file(s)"
        if unjudged:
            where += f" ({unjudged} not judged: no provider recognises them)"
        if findings:
            out(
                f"harness lint: {len(findings)} finding(s) ({counts['error']} error(s),"
                f" {counts['warning']} warning(s), {counts['info']} info) {where}"
            )
        else:
            out(f"harness lint: no findings {where}")
    return EXIT_DRIFT if counts["error"] else 0


def finding_lines(findings: Sequence[Finding]) -> list[str]:
    return [finding.to_text() for finding in findings]


def check_findings(sessions: Sequence[Session], policy: RulesPolicy) -> list[Finding]:
    """The rules' findings on `harness check`'s cassettes (their sessions, read once); the
    gate's certain breaks are the audit's to report (its warnings, of uncertain effect, are
    findings here)."""
    found: list[Finding] = []
    for session in sessions:
        for finding in lint(session):
            if finding.rule == "prefix-broken" and (
                finding.severity == "error" or session.moves_header
            ):
                continue  # the audit reports these (a moves_header test's as expected)
            found.append(policy.apply(finding))
    return found


def rules_markdown(findings: Sequence[Finding]) -> list[str]:
    """The findings as a Markdown table (the GitHub step summary)."""
    if not findings:
        return []
    lines = ["", "### Cache rules", "", "| rule | severity | file | request | message |"]
    lines.append("|---|---|---|---|---|")
    for finding in findings:  # a file name or a message may hold Markdown: shown inert
        lines.append(
            f"| {code(finding.rule, cell=True)} | {text(finding.severity, 20)}"
            f" | {code(finding.file, 200, cell=True)} | {finding.request}"
            f" | {text(finding.message, 400)} |"
        )
    return lines


def caches(exchange: Exchange) -> str:
    """What a recorded request caches under the rules, for `harness show`."""
    analysis = analyse(requests_of_exchanges([exchange])[0])
    return (
        "caching: not judged (no provider)"
        if analysis is None
        else f"caching: {analysis.describe()}"
    )


# -- harness rules -------------------------------------------------------------------------------


def cmd_rules(args: argparse.Namespace) -> int:
    with project_policy(args):
        pack = rules_pack()
        rules = [
            {
                "name": rule.name,
                "severity": rule.severity,
                "providers": rule.providers,
                "meaning": rule.meaning,
                "fix": rule.fix,
            }
            for rule in registered_rules()
        ]
        stale = getattr(args, "stale", None)
        if stale is not None:
            return _print_stale(args.format, rules, pack.rows, stale)
        if args.format == "json":
            out_json({"rules": rules, "pack": list(pack.rows)})
            return 0
        out(f"harness rules: {len(rules)} rules; the pack holds {len(pack.rows)} rows")
        out("")
        for rule in rules:
            out(f"{rule['name']} ({rule['severity']}; {rule['providers']}): {rule['meaning']}")
            out(f"  fix: {rule['fix']}")
        out("")
        for row in pack.rows:
            row_lines(row)
    return 0


def row_lines(row: AnyRow, age: str = "") -> None:
    out(f"{', '.join(row.providers)}: {describe(row)}")
    out(f"  source: {row.source} (checked {row.checked_on.isoformat()}{age})")
    if row.quote:
        out(f'  quote: "{row.quote}"')
    for conflict in row.conflicts:
        out(f"  conflicts: {conflict.claim} ({conflict.source})")
    if row.note:
        out(f"  note: {row.note}")


def _print_stale(fmt: str, rules: list[dict[str, str]], rows: tuple[AnyRow, ...], days: int) -> int:
    today = datetime.date.today()
    found = sorted(stale_rows(rows, days, today), key=lambda row: row.checked_on)
    cutoff = today - datetime.timedelta(days=days)
    if fmt == "json":
        stale = {"days": days, "checked_before": cutoff.isoformat(), "rows": found}
        out_json({"rules": rules, "pack": list(rows), "stale": stale})
        return 0
    out(
        f"harness rules: {len(found)} of {len(rows)} rows not checked for {days} days"
        f" (checked before {cutoff.isoformat()})"
    )
    for row in found:
        row_lines(row, f", {(today - row.checked_on).days} days ago")
    return 0


def describe(row: AnyRow) -> str:
    """One row in words."""
    where = f" on {', '.join(row.surfaces)}" if row.surfaces else ""
    models = f" for {', '.join(row.models)}" if row.models else ""
    text: str
    if isinstance(row, Minimum):
        text = f"minimum {row.tokens:,} tokens{models}"
    elif isinstance(row, Caching):
        marker = f", marker {row.marker}" if row.marker else ""
        auto = f", automatic top-level {row.automatic_marker}" if row.automatic_marker else ""
        text = f"caching {row.mode}{marker}{auto}"
    elif isinstance(row, Breakpoints):
        mode = f" in {row.mode} mode" if row.mode else ""
        text = f"at most {row.limit} breakpoints{mode} ({row.counts}); more are {row.over_limit}"
    elif isinstance(row, Lookback):
        runs = f" (a run of {' or '.join(row.runs)} blocks counts once)" if row.runs else ""
        text = f"a breakpoint looks back {row.reach} {row.unit}{runs}"
    elif isinstance(row, Ttl):
        order = ", longer first" if row.order == "longer-first" else ""
        refused = ", refused otherwise" if row.out_of_order == "refused" else ""
        text = f"TTLs {', '.join(row.values)} (default {row.default}){order}{refused}"
    elif isinstance(row, Levels):
        text = f"cache key levels {' -> '.join(row.order)}"
    elif isinstance(row, Setting):
        level = f", from {row.level}" if row.level else ""
        reach = f" (on some models from {row.may_reach})" if row.may_reach else ""
        word = f" ({row.word}{level}{reach})" if row.word else ""
        absent = f"; same as absent: {_values(row.absent)}" if row.absent else ""
        prewarm = f"; a pre-warm when {_values(row.prewarm)}" if row.prewarm else ""
        text = f"setting {row.field}: {row.effect}{word}{absent}{prewarm}"
    elif isinstance(row, Compaction):
        text = f"compaction items {', '.join(row.item_types)}: {row.word}"
    else:
        text = f"raw key order: {row.last} after {', '.join(row.before)}"
    return f"{text}{where}"


def _values(values: Sequence[object]) -> str:
    return " or ".join(msgspec.json.encode(value).decode() for value in values)
