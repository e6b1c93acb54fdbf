"""The `harness` subcommands: demo, check, replay, record, refresh, diff, show, init.

Each takes the parsed arguments and returns the exit code; a `HarnessError` it raises is one line
and its exit code in `main`. The commands work on the user's `fixtures/` (or the folders given)
and say so when there is none; only `harness demo` uses the scenarios shipped with the harness.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import msgspec

from harness._shared._errors import (
    EXIT_DRIFT,
    FixtureError,
    SecretLeak,
)
from harness._shared._files import write_atomic, write_files
from harness._shared._paths import FIXTURES, pins_root, project_fixtures, refuse_linked_folder
from harness._shared._printer import annotation, write_step_summary
from harness._shared._secrets import Redaction
from harness.capture._audit import (
    CassetteAudit,
    audit_cassette,
    find_cassettes,
    summary_lines,
    whole_requests,
)
from harness.capture._cassette import CASSETTE_FORMAT, load_cassette, read_cassette
from harness.capture._prefix import PrefixChain
from harness.capture._writing import encode_cassette
from harness.cli._diff import diff_files
from harness.cli._lint import caches, check_findings, project_policy, rules_markdown
from harness.cli._output import out, print_command
from harness.cost._read import agreement_by_provider
from harness.rules._engine import Finding as RuleFinding
from harness.rules._inputs import cassette_sessions
from harness.scenarios._check import (
    ScenarioCheck,
    check_fixture,
    markdown_table,
    recording_files_of,
    refuse_second_owner,
    text_table,
)
from harness.scenarios._demo import demo_source
from harness.scenarios._formats import Fixture, RecordedRequestHeader, find_fixtures, load_fixture
from harness.scenarios._record import recording_files
from harness.scenarios._replay import Finding, replay_fixture, verdict

EXIT_OK = 0


def _fixtures(paths: Sequence[str]) -> list[Fixture]:
    folders = find_fixtures([Path(p) for p in paths] if paths else [project_fixtures()])
    if not folders:
        raise FixtureError(", ".join(paths) or FIXTURES, "holds no scenario folders")
    return [load_fixture(folder) for folder in folders]


def _targets(paths: Sequence[str]) -> tuple[list[Fixture], list[Path]]:
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
    return [load_fixture(folder) for folder in folders], cassettes


def _check_all(fixtures: list[Fixture], shuffles: int, seed: int) -> list[ScenarioCheck]:
    return [check_fixture(fixture, shuffle=shuffles, seed=seed) for fixture in fixtures]


def _print_findings(name: str, findings: list[Finding], *, fmt: str) -> None:
    for finding in findings:
        if fmt == "markdown" and finding.report is not None:
            out(f"### {name}: {finding.message}\n")
            out(finding.report.to_markdown())
        elif fmt == "json" and finding.report is not None:
            out(finding.report.to_json().decode())
        else:
            out(f"{name}: {finding.to_text()}")


# -- subcommands ---------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    if args.paths:
        fixtures = _fixtures(args.paths)
        out(f"harness demo: {len(fixtures)} scenarios from {', '.join(args.paths)}")
    else:  # the shipped scenarios, never the working directory's fixtures/
        source = demo_source()
        fixtures = _fixtures([str(source.folder)])
        out(
            f"harness demo: {len(fixtures)} shipped scenarios from {source.folder}, {source.origin}"
        )
    out("replay on recorded answers, rebuild invariant at every dispatch,")
    out(
        f"{args.shuffle} registration orders each (identity, reversed, then seed {args.seed}), "
        "header pins, drift report\n"
    )
    checks = _check_all(fixtures, args.shuffle, args.seed)
    out(text_table(checks))
    failed = [check for check in checks if not check.ok]
    for check in checks:
        if check.fixture.scenario.expect == "unstable" and check.observed:
            out(f"\nWhat the harness caught in {check.scenario} (expected):")
            out(check.observed[0].to_text())
    for check in failed:
        out(f"\nUnexpected drift in {check.scenario}:")
        _print_findings(check.scenario, check.findings, fmt="text")
    out(f"\n{len(checks) - len(failed)} of {len(checks)} scenarios behave as expected.")
    return EXIT_DRIFT if failed else EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    fixtures, cassettes = _targets(args.paths)
    with project_policy(args) as policy:
        checks = _check_all(fixtures, args.shuffle, args.seed)
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
        out(text_table(checks))
    for check in failed:
        if args.format == "text":
            out("")
        _print_findings(check.scenario, check.findings, fmt=args.format)
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
        out(msgspec.json.encode({"agreement": value}).decode())
        return
    parts = [f"{name} {a * 100:.0f}% ({n} request(s))" for name, (a, n) in agreements.items()]
    out(f"\nagreement with the providers' recorded cache reads: {', '.join(parts)}")


def _print_rules(found: list[RuleFinding], *, fmt: str) -> None:
    if not found:
        return
    if fmt == "json":
        for finding in found:
            out(msgspec.json.encode({"finding": finding}).decode())
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
                out(msgspec.json.encode({"cassette": str(audit.path), "problem": problem}).decode())
            else:
                out(f"{audit.path}: {problem}")
        for item in audit.breaks:
            if fmt == "markdown":
                out(f"### {audit.path}: {item.to_text().splitlines()[0]}\n")
                out(item.report.to_markdown())
            elif fmt == "json":
                out(item.report.to_json().decode())
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
        lines += markdown_table(checks)
    annotations = []
    for check in failed:
        for finding in check.findings:
            lines += ["", f"### {check.scenario}: {finding.message}"]
            if finding.report is not None:
                lines.append(finding.report.to_markdown())
            annotations.append(annotation(finding.message, file=str(check.fixture.folder)))
    if audits:
        lines += ["", "| cassette | result |", "|---|---|"]
        lines += [f"| `{audit.path}` | {audit.status()} |" for audit in audits]
    for audit in audits:
        for problem in audit.problems:
            annotations.append(annotation(problem, file=str(audit.path), title="cassette"))
        for item in audit.breaks:
            head = item.to_text().splitlines()[0]
            lines += ["", f"### `{audit.path}`: {head}", item.report.to_markdown()]
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


def cmd_replay(args: argparse.Namespace) -> int:
    failed = 0
    for fixture in _fixtures(args.paths):
        result = replay_fixture(fixture)
        ok, status = verdict(result.findings, result.expected_unstable)
        failed += not ok
        found = len(result.findings)
        out(f"{fixture.scenario.name}: {status} ({result.steps} steps, {found} findings)")
        if not ok or args.verbose:
            _print_findings(fixture.scenario.name, result.findings, fmt=args.format)
    return EXIT_DRIFT if failed else EXIT_OK


def cmd_record(args: argparse.Namespace) -> int:
    for path in args.scenarios:
        folder = Path(path)
        if not folder.exists() and not folder.is_absolute() and len(folder.parts) == 1:
            if not Path(FIXTURES).is_dir():  # never the shipped scenarios
                raise FixtureError(
                    path,
                    "does not exist, and there is no fixtures/ folder here to look the name up in",
                    "run it in the project's folder, or pass the scenario folder's path",
                )
            folder = Path(FIXTURES) / path  # a scenario named by its folder under fixtures/
        fixture = load_fixture(folder, scenario_only=True)
        refuse_linked_folder(fixture.folder)
        changed = write_files(recording_files_of(fixture))
        out(f"{fixture.scenario.name}: recorded" + "".join(f"\n  wrote {p}" for p in changed))
    return EXIT_OK


def cmd_refresh(args: argparse.Namespace) -> int:
    fixtures, cassettes = _targets(args.paths)
    for path in cassettes:
        _refresh_cassette(path)
    for fixture in fixtures:
        refuse_linked_folder(fixture.folder)
        before = replay_fixture(fixture)
        if before.run is None:
            _print_findings(fixture.scenario.name, before.findings, fmt="text")
            return EXIT_DRIFT
        files = recording_files(fixture.folder, before.run, answers=False)
        refuse_second_owner(fixture.folder, fixture.scenario, files)
        changed = write_files(files)
        if not changed:
            out(f"{fixture.scenario.name}: unchanged")
            continue
        out(f"{fixture.scenario.name}: rewrote {len(changed)} file(s)")
        for path in changed:
            out(f"  {path}")
        for finding in before.findings:
            out("  " + finding.message)
    return EXIT_OK


def _refresh_cassette(path: Path) -> None:
    """Rewrite a cassette in the format this harness writes (format 3), the same requests byte
    for byte; a file already in it is left alone."""
    refuse_linked_folder(path.parent)
    capture = load_cassette(path)
    data = encode_cassette(capture, path)
    findings = Redaction().scan(data)
    if findings:
        raise SecretLeak(str(path), findings)
    if not write_atomic(path, data):
        out(f"{path}: unchanged")
    elif capture.format != CASSETTE_FORMAT:
        out(f"{path}: rewrote format {capture.format} as format {CASSETTE_FORMAT}")
    else:
        out(f"{path}: rewrote it")


def cmd_diff(args: argparse.Namespace) -> int:
    report = diff_files(Path(args.a), Path(args.b))
    if args.format == "markdown":
        out(report.to_markdown())
    elif args.format == "json":
        out(report.to_json().decode())
    else:
        out(report.to_text())
    return EXIT_OK if report.identical or report.extends else EXIT_DRIFT


def cmd_show(args: argparse.Namespace) -> int:
    from harness.drift._printed import volatile_hints
    from harness.scenarios._pins import load_pin

    fixtures, cassettes = _targets(args.paths)
    wanted = args.request or ()
    with project_policy(args):
        for path in cassettes:
            capture = load_cassette(path)
            if not wanted:
                for line in summary_lines(path, capture, caching=caches):
                    out(line)
            if wanted or args.requests:
                out(f"{path}: the requests as they were sent")
                for line in whole_requests(capture, wanted):
                    out(line)
    for fixture in fixtures:
        scenario = fixture.scenario
        out(f"{scenario.name}: {scenario.description}")
        out(f"  app {scenario.app}, config {msgspec.json.encode(scenario.config).decode()}")
        out(f"  plugins: {', '.join(p.name for p in scenario.plugins) or '(none)'}")
        if fixture.log is not None:
            out(f"  recorded registration order: {', '.join(fixture.log.registration_order)}")
            reasons = [e.reason for e in fixture.log.events if isinstance(e, RecordedRequestHeader)]
            out(f"  {len(fixture.log.events)} events, headers: {', '.join(reasons) or '(none)'}")
        if fixture.requests is not None:
            out(f"  {len(fixture.requests.requests)} requests")
        if scenario.pin is not None:
            pin = load_pin(pins_root(fixture.folder), scenario.pin.name)
            if pin is not None:
                names = ", ".join(t.name for t in pin.tools.initial)
                out(f"  pin {scenario.pin.name}: tools {names}")
                for hint in volatile_hints(pin.system):
                    out(f"  hint: {hint}")
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from harness.cli.init._command import init_project

    return init_project(Path(args.path), tests=args.tests, dry_run=args.dry_run, out=out)
