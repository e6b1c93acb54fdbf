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
from harness._shared._paths import (
    FIXTURES,
    find_fixtures,
    pins_root,
    project_fixtures,
    refuse_link_out,
    refuse_linked_folder,
)
from harness._shared._secrets import Redaction
from harness.capture._audit import (
    summary_lines,
    whole_requests,
)
from harness.capture._cassette import CASSETTE_FORMAT, load_cassette
from harness.capture._writing import encode_cassette
from harness.cli._check import check_all, print_findings, targets
from harness.cli._diff import diff_files
from harness.cli._lint import caches, project_policy
from harness.cli._output import out, out_json
from harness.scenarios._check import (
    recording_files_of,
    refuse_second_owner,
    text_table,
)
from harness.scenarios._demo import demo_source
from harness.scenarios._formats import Fixture, RecordedRequestHeader, load_fixture
from harness.scenarios._record import recording_files
from harness.scenarios._replay import replay_fixture, verdict

EXIT_OK = 0


def _fixtures(paths: Sequence[str]) -> list[Fixture]:
    folders = find_fixtures([Path(p) for p in paths] if paths else [project_fixtures()])
    if not folders:
        raise FixtureError(", ".join(paths) or FIXTURES, "holds no scenario folders")
    return [load_fixture(folder) for folder in folders]


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
    checks = check_all(fixtures, args.shuffle, args.seed)
    out(text_table(checks))
    failed = [check for check in checks if not check.ok]
    for check in checks:
        if check.fixture.scenario.expect == "unstable" and check.observed:
            out(f"\nWhat the harness caught in {check.scenario} (expected):")
            out(check.observed[0].to_text())
    for check in failed:
        out(f"\nUnexpected drift in {check.scenario}:")
        print_findings(check.scenario, check.findings, fmt="text")
    out(f"\n{len(checks) - len(failed)} of {len(checks)} scenarios behave as expected.")
    return EXIT_DRIFT if failed else EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    failed = 0
    for fixture in _fixtures(args.paths):
        result = replay_fixture(fixture)
        ok, status = verdict(result.findings, result.expected_unstable)
        failed += not ok
        found = len(result.findings)
        out(f"{fixture.scenario.name}: {status} ({result.steps} steps, {found} findings)")
        if not ok or args.verbose:
            print_findings(fixture.scenario.name, result.findings, fmt=args.format)
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
        refuse_link_out(fixture.folder, Path.cwd())
        changed = write_files(recording_files_of(fixture))
        out(f"{fixture.scenario.name}: recorded" + "".join(f"\n  wrote {p}" for p in changed))
    return EXIT_OK


def cmd_refresh(args: argparse.Namespace) -> int:
    fixtures, cassettes = targets(args.paths)
    for path in cassettes:
        _refresh_cassette(path)
    for fixture in fixtures:
        refuse_linked_folder(fixture.folder)
        refuse_link_out(fixture.folder, Path.cwd())
        before = replay_fixture(fixture)
        if before.run is None:
            print_findings(fixture.scenario.name, before.findings, fmt="text")
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
    refuse_link_out(path, Path.cwd())  # a cassettes folder linked out of the project
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
        out_json(report.printed())
    else:
        out(report.to_text())
    return EXIT_OK if report.identical or report.extends else EXIT_DRIFT


def cmd_show(args: argparse.Namespace) -> int:
    from harness.drift._printed import volatile_hints
    from harness.scenarios._pins import load_pin

    fixtures, cassettes = targets(args.paths)
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
                    out(line, whole=True)  # asked for whole: redacted and escaped, not cut
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
