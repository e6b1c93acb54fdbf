"""The `harness` command.

Exit codes (the same for every subcommand):
  0  everything checked is as recorded (or the command did what it was asked)
  1  drift or another finding: the report says which block, where, and what it costs
  2  bad input or usage: an unreadable, corrupt or foreign file, an unsafe name, a write refused
     under CI; one line names the file and what to do
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from harness.drift import CacheView, DriftReport, compare, compare_values, view_of_header
from harness.fixture import (
    Fixture,
    FixtureError,
    RecordedRequest,
    RecordedRequestHeader,
    RequestsFile,
    ToolSchemasPin,
    WriteRefused,
    decode,
    find_fixtures,
    load_fixture,
    read_checked,
    with_position,
    writes_allowed,
)
from harness.paths import UnsafeName
from harness.record import pins_root, record_fixture, write_recording
from harness.replay import Finding, ReplayResult, replay_fixture
from harness.secrets import SecretLeak
from harness.shuffle import ShuffleResult, shuffle_fixture

EXIT_OK, EXIT_DRIFT, EXIT_USAGE = 0, 1, 2


def out(text: str = "") -> None:
    print(text)


def shipped_fixtures() -> Path:
    """`fixtures/` in the working directory if it has one, else the one shipped with the source."""
    local = Path("fixtures")
    if local.is_dir():
        return local
    return Path(__file__).resolve().parent.parent / "fixtures"


def _fixtures(paths: Sequence[str]) -> list[Fixture]:
    folders = find_fixtures([Path(p) for p in paths] if paths else [shipped_fixtures()])
    if not folders:
        raise FixtureError(", ".join(paths) or str(shipped_fixtures()), "holds no scenario folders")
    return [load_fixture(folder) for folder in folders]


def _verdict(result: ReplayResult, shuffle: ShuffleResult | None) -> tuple[bool, str]:
    if result.expected_unstable:
        caught = result.caught or (shuffle is not None and not shuffle.stable)
        return caught, "caught (expected unstable)" if caught else "NOT CAUGHT"
    ok = result.ok and (shuffle is None or shuffle.stable)
    return ok, "ok" if ok else "DRIFT"


def _shuffle_finding(shuffle: ShuffleResult) -> Finding:
    message = (
        f"registration shuffle: run {shuffle.runs} of seed {shuffle.seed} sent other bytes "
        "than the identity order"
    )
    return Finding("shuffle", shuffle.message or message, shuffle.report)


def _check_all(
    fixtures: list[Fixture], shuffles: int, seed: int
) -> list[tuple[Fixture, ReplayResult, ShuffleResult | None]]:
    results = []
    for fixture in fixtures:
        result = replay_fixture(fixture)
        shuffle = shuffle_fixture(fixture, count=shuffles, seed=seed) if shuffles > 0 else None
        if shuffle is not None and not shuffle.stable:
            result.findings.append(_shuffle_finding(shuffle))
        results.append((fixture, result, shuffle))
    return results


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _summary_rows(
    results: list[tuple[Fixture, ReplayResult, ShuffleResult | None]],
) -> list[list[str]]:
    rows = []
    for fixture, result, shuffle in results:
        counts = result.header_counts()
        kinds = {f.kind for f in result.findings}
        rows.append(
            [
                fixture.scenario.name,
                fixture.scenario.expect,
                str(result.steps),
                str(len(result.run.recorder.requests) if result.run else 0),
                f"{counts['initial']}/{counts['resume']}/{counts['change']}",
                "drift" if kinds & {"log", "requests", "answers", "error"} else "ok",
                "drift" if "rebuild" in kinds else "ok",
                "-"
                if shuffle is None
                else ("ok" if shuffle.stable else "drift") + f" x{shuffle.runs}",
                "-" if fixture.scenario.pin is None else ("drift" if "pin" in kinds else "ok"),
                _verdict(result, shuffle)[1],
            ]
        )
    return rows


HEADERS = [
    "scenario",
    "expect",
    "steps",
    "requests",
    "headers i/r/c",
    "replay",
    "rebuild",
    "shuffle",
    "pin",
    "verdict",
]


def _print_findings(result: ReplayResult, *, fmt: str) -> None:
    for finding in result.findings:
        if fmt == "markdown" and finding.report is not None:
            out(f"### {result.fixture.scenario.name}: {finding.message}\n")
            out(finding.report.to_markdown())
        elif fmt == "json" and finding.report is not None:
            out(finding.report.to_json().decode())
        else:
            out(f"{result.fixture.scenario.name}: {finding.to_text()}")


# -- subcommands ---------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    fixtures = _fixtures(args.paths)
    out(f"harness demo: {len(fixtures)} shipped scenarios from {fixtures[0].folder.parent}")
    out("replay on recorded answers, rebuild invariant at every dispatch,")
    out(
        f"{args.shuffle} registration orders each (identity, reversed, then seed {args.seed}), "
        "header pins, drift report\n"
    )
    results = _check_all(fixtures, args.shuffle, args.seed)
    out(_table(_summary_rows(results), HEADERS))
    failed = [r for _, r, s in results if not _verdict(r, s)[0]]
    for _, result, _ in results:
        if result.expected_unstable and result.findings:
            first = result.findings[0]
            out(f"\nWhat the harness caught in {result.fixture.scenario.name} (expected):")
            out(first.to_text())
    for result in failed:
        out(f"\nUnexpected drift in {result.fixture.scenario.name}:")
        _print_findings(result, fmt="text")
    out(f"\n{len(results) - len(failed)} of {len(results)} scenarios behave as expected.")
    return EXIT_DRIFT if failed else EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    results = _check_all(_fixtures(args.paths), args.shuffle, args.seed)
    failed = [(r, s) for _, r, s in results if not _verdict(r, s)[0]]
    if args.format == "text":
        out(_table(_summary_rows(results), HEADERS))
    for result, _ in failed:
        if args.format == "text":
            out("")
        _print_findings(result, fmt=args.format)
    _github_summary(results, failed)
    if args.format == "text":
        out(
            f"\nharness check: {len(failed)} of {len(results)} scenarios drifted"
            if failed
            else f"\nharness check: {len(results)} scenarios, no drift"
        )
    return EXIT_DRIFT if failed else EXIT_OK


def _github_summary(
    results: list[tuple[Fixture, ReplayResult, ShuffleResult | None]],
    failed: list[tuple[ReplayResult, ShuffleResult | None]],
) -> None:
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary or os.environ.get("GITHUB_ACTIONS") != "true":
        return
    lines = ["## Header drift", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in _summary_rows(results)]
    for result, _ in failed:
        for finding in result.findings:
            lines += ["", f"### {result.fixture.scenario.name}: {finding.message}"]
            if finding.report is not None:
                lines.append(finding.report.to_markdown())
            print(f"::error file={result.fixture.folder}::{finding.message}")
    with open(summary, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def cmd_replay(args: argparse.Namespace) -> int:
    failed = 0
    for fixture in _fixtures(args.paths):
        result = replay_fixture(fixture)
        ok, verdict = _verdict(result, None)
        failed += not ok
        found = len(result.findings)
        out(f"{fixture.scenario.name}: {verdict} ({result.steps} steps, {found} findings)")
        if not ok or args.verbose:
            _print_findings(result, fmt=args.format)
    return EXIT_DRIFT if failed else EXIT_OK


def cmd_record(args: argparse.Namespace) -> int:
    for path in args.scenarios:
        folder = Path(path)
        if not folder.exists() and (shipped_fixtures() / path).is_dir():
            folder = shipped_fixtures() / path
        fixture = load_fixture(folder, scenario_only=True)
        changed = record_fixture(fixture)
        out(f"{fixture.scenario.name}: recorded" + "".join(f"\n  wrote {p}" for p in changed))
    return EXIT_OK


def cmd_refresh(args: argparse.Namespace) -> int:
    for fixture in _fixtures(args.paths):
        before = replay_fixture(fixture)
        if before.run is None:
            _print_findings(before, fmt="text")
            return EXIT_DRIFT
        changed = write_recording(fixture.folder, before.run, answers=False)
        if not changed:
            out(f"{fixture.scenario.name}: unchanged")
            continue
        out(f"{fixture.scenario.name}: rewrote {len(changed)} file(s)")
        for path in changed:
            out(f"  {path}")
        for finding in before.findings:
            out("  " + finding.message)
    return EXIT_OK


def _load_json(path: Path) -> object:
    data = read_checked(path, missing_hint="check the path")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise FixtureError(path, f"is not valid JSON: {with_position(data, str(error))}") from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be read") from None


def _diff_report(a: Path, b: Path) -> DriftReport:
    raw_a, raw_b = _load_json(a), _load_json(b)
    kinds = {x.get("kind") if isinstance(x, dict) else None for x in (raw_a, raw_b)}
    if kinds == {"harness/requests"}:
        ra = decode(a.read_bytes(), RequestsFile, a).requests
        rb = decode(b.read_bytes(), RequestsFile, b).requests
        for x, y in zip(ra, rb, strict=False):
            if msgspec.json.encode(x) != msgspec.json.encode(y):
                return _request_report(x, y, a, b)
        return compare_values(len(ra), len(rb), label_a=str(a), label_b=str(b))
    if kinds == {"harness/tool-schemas"}:
        pa = decode(a.read_bytes(), ToolSchemasPin, a)
        pb = decode(b.read_bytes(), ToolSchemasPin, b)
        from harness.agent.session import Header, LlmConfig

        config = LlmConfig("pinned", "pinned")
        return compare(
            view_of_header(Header(config=config, tools=pa.initial)),
            view_of_header(Header(config=config, tools=pb.initial)),
            label_a=str(a),
            label_b=str(b),
        )
    return compare_values(raw_a, raw_b, label_a=str(a), label_b=str(b))


def _view_of_recorded(request: RecordedRequest) -> CacheView:
    """A recorded request as a cache sees it (placeholders and digests compare as they are)."""
    wire = msgspec.to_builtins(request)
    blocks = {key: wire[key] for key in ("tools", "system", "messages") if key in wire}
    settings = {k: v for k, v in wire.items() if k not in blocks and k != "session_id"}
    return CacheView(settings, blocks)


def _request_report(x: RecordedRequest, y: RecordedRequest, a: Path, b: Path) -> DriftReport:
    return compare(_view_of_recorded(x), _view_of_recorded(y), label_a=str(a), label_b=str(b))


def cmd_diff(args: argparse.Namespace) -> int:
    report = _diff_report(Path(args.a), Path(args.b))
    if args.format == "markdown":
        out(report.to_markdown())
    elif args.format == "json":
        out(report.to_json().decode())
    else:
        out(report.to_text())
    return EXIT_OK if report.identical else EXIT_DRIFT


def cmd_show(args: argparse.Namespace) -> int:
    from harness.drift import volatile_hints

    for fixture in _fixtures(args.paths):
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
            from harness.pins import load_pin

            pin = load_pin(pins_root(fixture.folder), scenario.pin.name)
            if pin is not None:
                names = ", ".join(t.name for t in pin.tools.initial)
                out(f"  pin {scenario.pin.name}: tools {names}")
                for hint in volatile_hints(pin.system):
                    out(f"  hint: {hint}")
    return EXIT_OK


# -- entry point ---------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
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
            type=int,
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
    demo.add_argument("paths", nargs="*", help="scenario folders (default: the shipped fixtures/)")
    shuffle_options(demo, 16)

    check = add(
        "check", cmd_check, "CI gate: replay, shuffle and pin-check; exit 1 on drift; never writes"
    )
    check.add_argument("paths", nargs="*")
    shuffle_options(check, 8)
    formats(check)

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

    diff = add("diff", cmd_diff, "drift report between two requests files, pins or request bodies")
    diff.add_argument("a")
    diff.add_argument("b")
    formats(diff)

    show = add("show", cmd_show, "summarise scenario folders")
    show.add_argument("paths", nargs="*")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command in ("record", "refresh") and not writes_allowed():
        print(
            f"harness {args.command}: refusing to write under CI; "
            "run it locally and commit the result",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        return int(args.fn(args))
    except (FixtureError, UnsafeName, WriteRefused, SecretLeak) as error:
        print(f"harness {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
