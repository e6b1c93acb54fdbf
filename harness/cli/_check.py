"""`harness check`: the CI gate over scenario folders and cassettes, and what it prints.

Scenario folders are replayed, shuffled and pin-checked (`harness.scenarios._check`, imported only
when the paths hold a scenario: a project of cassettes alone starts no agent runtime); each
cassette is read once, split and judged once for its audit (format, redaction, the prefix chain),
the cache rules and the cost model's agreement. `targets`, `check_all` and `print_findings` serve
the other scenario commands too (`harness.cli._commands`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness._shared._actions import annotation, write_step_summary
from harness._shared._errors import EXIT_DRIFT, FixtureError
from harness._shared._formats import code, text
from harness._shared._paths import find_fixtures, project_fixtures
from harness.capture._audit import CassetteAudit, audit_cassette
from harness.capture._cassette import read_cassette
from harness.capture._found import find_cassettes
from harness.capture._prefix import PrefixChain
from harness.cli._lint import check_findings, project_policy, rules_markdown
from harness.cli._output import out, out_json, print_command
from harness.cost._read import agreement_by_provider
from harness.rules._engine import Finding as RuleFinding
from harness.rules._inputs import cassette_sessions

if TYPE_CHECKING:
    from harness.scenarios._check import ScenarioCheck
    from harness.scenarios._formats import Fixture
    from harness.scenarios._replay import Finding

__all__ = ["check_all", "cmd_check", "print_findings", "targets"]

EXIT_OK = 0


def targets(paths: Sequence[str]) -> tuple[list[Fixture], list[Path]]:
    """The scenario folders and the cassettes (SDK projects' recordings) under `paths`."""
    roots = [Path(p) for p in paths] if paths else [project_fixtures()]
    cassettes = find_cassettes(roots)
    folders: list[Path] = []
    for root in roots:
        if root.is_file() and root in cassettes:
            continue
        if not root.exists():
            raise FixtureError(root, "does not exist", "check the path")
        found = find_fixtures([root]) if root.is_dir() else []
        if root.is_file() and not found:
            found = find_fixtures([root])  # a scenario.json, or one line on what it is not
        folders += found
    if not folders and not cassettes:
        raise FixtureError(
            ", ".join(map(str, roots)),
            "holds no scenario folders and no cassettes",
            "pass a fixtures folder, a project with fixtures/cassettes, or a cassette file",
        )
    if not folders:  # cassettes alone: no scenario runtime to import
        return [], cassettes
    from harness.scenarios._formats import load_fixture

    return [load_fixture(folder) for folder in folders], cassettes


def check_all(fixtures: list[Fixture], shuffles: int, seed: int) -> list[ScenarioCheck]:
    """Each scenario checked (its runtime imported only when there is one)."""
    if not fixtures:
        return []
    from harness.scenarios._check import check_fixture

    return [check_fixture(fixture, shuffle=shuffles, seed=seed) for fixture in fixtures]


def print_findings(name: str, findings: list[Finding], *, fmt: str) -> None:
    for finding in findings:
        if fmt == "markdown" and finding.report is not None:
            out(f"### {code(name)}: {text(finding.message)}\n")
            out(finding.report.to_markdown())
        elif fmt == "json" and finding.report is not None:
            out_json(finding.report.printed())
        else:
            out(f"{name}: {finding.to_text()}")


def cmd_check(args: argparse.Namespace) -> int:
    fixtures, cassettes = targets(args.paths)
    with project_policy(args) as policy:
        checks = check_all(fixtures, args.shuffle, args.seed)
        # Each cassette is read and decoded once, and each request split once; its sessions are
        # analysed once and shared by the audit, the rules and the cost model's agreement.
        reads = [read_cassette(path) for path in cassettes]
        per_read = [cassette_sessions(read.path, read.capture) for read in reads]
        audits = [
            audit_cassette(read, judged=[([r.split for r in s.requests], s.chain) for s in each])
            for read, each in zip(reads, per_read, strict=True)
        ]
        sessions = [s for each in per_read for s in each]
        del reads, per_read
        found = check_findings(sessions, policy)
        agreements = agreement_by_provider(cassettes, sessions) if cassettes else {}
    failed = [check for check in checks if not check.ok]
    broken = [audit for audit in audits if not audit.ok]
    errors = [finding for finding in found if finding.severity == "error"]
    if args.format == "text" and checks:
        from harness.scenarios._check import text_table

        out(text_table(checks))
    for check in failed:
        if args.format == "text":
            out("")
        print_findings(check.scenario, check.findings, fmt=args.format)
    if audits:
        _print_audits(audits, fmt=args.format)
    _print_rules(found, fmt=args.format)
    _print_agreement(agreements, fmt=args.format)
    _github(checks, failed, audits, found)
    if args.format == "text":
        parts = []
        if checks:
            parts.append(
                f"{len(failed)} of {len(checks)} scenarios drifted"
                if failed
                else f"{len(checks)} scenarios, no drift"
            )
        costly = [finding for finding in found if finding.severity != "info"]
        if audits:  # "no finding" only when the cache rules found nothing either
            parts.append(
                f"{len(broken)} of {len(audits)} cassettes with findings"
                if broken
                else f"{len(audits)} cassettes, no prefix break or redaction problem"
                if costly
                else f"{len(audits)} cassettes, no finding"
            )
        if costly:
            parts.append(
                f"cache rules: {len(costly)} finding(s), {len(errors)} error(s)"
                f" and {len(costly) - len(errors)} warning(s)"
            )
        out(f"\nharness check: {'; '.join(parts)}")
    return EXIT_DRIFT if failed or broken or errors else EXIT_OK


def _print_agreement(agreements: dict[str, tuple[float, int]], *, fmt: str) -> None:
    """The cost model's predicted cache reads against the providers' recorded counters."""
    if not agreements:
        return
    if fmt == "json":
        value = {name: {"agreement": a, "requests": n} for name, (a, n) in agreements.items()}
        out_json({"agreement": value})
        return
    parts = [f"{name} {a * 100:.0f}% ({n} request(s))" for name, (a, n) in agreements.items()]
    out(f"\nagreement with the providers' recorded cache reads: {', '.join(parts)}")


def _print_rules(found: list[RuleFinding], *, fmt: str) -> None:
    if not found:
        return
    if fmt == "json":
        for finding in found:
            out_json({"finding": finding})
    elif fmt == "markdown":
        for line in rules_markdown(found):
            out(line)
    else:
        # a toy request under the model's minimum is counted, not listed (harness lint lists it),
        # as in the pytest summary: a tutorial's check would be all `info below-minimum` lines
        listed = [f for f in found if not (f.severity == "info" and f.rule == "below-minimum")]
        toys = len(found) - len(listed)
        head = f"\ncache rules ({len(found)} finding(s)"
        if toys:
            head += (
                f"; {toys} request(s) under the model's minimum not listed: harness lint lists them"
            )
        out(f"{head}){':' if listed else ''}")
        for finding in listed:
            out(f"  {finding.to_text()}")


def _print_audits(audits: list[CassetteAudit], *, fmt: str) -> None:
    chain = PrefixChain()
    for audit in audits:
        chain.add(audit.chain)
    if fmt == "text":
        out(f"\ncassettes ({len(audits)}):")
        for audit in audits:
            out(f"  {audit.path}: {audit.status()}")
    for audit in audits:
        for problem in audit.problems:
            if fmt == "json":
                out_json({"cassette": str(audit.path), "problem": problem})
            else:
                out(f"{audit.path}: {problem}")
        for item in audit.breaks:
            if fmt == "markdown":
                out(f"### {code(str(audit.path), 300)}: {text(item.to_text().splitlines()[0])}\n")
                out(item.report.to_markdown())
            elif fmt == "json":
                out_json(item.report.printed())
            else:
                out(f"\n{audit.path}: {item.to_text()}")
    if fmt == "text":
        out(chain.coverage())


def _github(
    checks: list[ScenarioCheck],
    failed: list[ScenarioCheck],
    audits: list[CassetteAudit],
    found: list[RuleFinding],
) -> None:
    lines = ["## Header drift", ""]
    if checks:
        from harness.scenarios._check import markdown_table

        lines += markdown_table(checks)
    annotations = []
    for check in failed:
        for finding in check.findings:
            lines += ["", f"### {code(check.scenario)}: {text(finding.message)}"]
            if finding.report is not None:
                lines.append(finding.report.to_markdown())
            annotations.append(annotation(finding.message, file=str(check.fixture.folder)))
    if audits:
        lines += ["", "| cassette | result |", "|---|---|"]
        lines += [
            f"| {code(str(audit.path), 300, cell=True)} | {text(audit.status())} |"
            for audit in audits
        ]
    for audit in audits:
        for problem in audit.problems:
            annotations.append(annotation(problem, file=str(audit.path), title="cassette"))
        for item in audit.breaks:
            head = item.to_text().splitlines()[0]
            lines += ["", f"### {code(str(audit.path), 300)}: {text(head)}"]
            lines.append(item.report.to_markdown())
            annotations.append(annotation(head, file=str(audit.path), title="header drift"))
    lines += rules_markdown(found)
    annotations += [
        annotation(
            f"request {rule.request}: {rule.message}",
            file=rule.file,
            title=f"cache rule {rule.rule}",
            level=rule.severity,
        )
        for rule in found
        if rule.severity != "info"
    ]
    if write_step_summary("\n".join(lines)):
        for line in annotations:
            print_command(line)
