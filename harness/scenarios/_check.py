"""One orchestration of a scenario: record, replay, update, shuffle, and one verdict.

The CLI (`harness check`, `harness demo`), the pytest plugin (`agent_harness`, collected
scenarios) and the benchmark all check a scenario here:
1. record it (mode `record`, or `update-new-only` without a recording), or load the recording;
2. replay it on the recorded answers, with the rebuild invariant and the pins;
3. in `update` mode, when the replay found something, refresh the recording from the replay (or
   re-record it from the script when the answers no longer fit) and replay again;
4. run the registration shuffle;
5. judge, with the one rule for a scenario that expects to be unstable: it passes when the
   rebuild or the shuffle caught it and nothing errored.
Before a writing mode records anything, the scenario must make sense
(`harness.scenarios._validation`) and its folder must be a real folder
(`paths.refuse_linked_folder`); no other scenario beside it may own its pin with other bytes
(`refuse_second_owner`). `update` also rewrites a scenario.json that changed while its replay still
passes. Nothing here writes a file: `ScenarioCheck.files` holds what a writing mode wants written,
for the caller to write (the CLI directly, the plugin on its controller process).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from harness._shared._errors import HarnessError
from harness._shared._files import FileContents, decode, encode, read_checked
from harness._shared._formats import code
from harness._shared._paths import (
    ANSWERS_FILE,
    LOG_FILE,
    REQUESTS_FILE,
    SCENARIO_FILE,
    SYSTEM_PIN,
    TOOLS_PIN,
    refuse_linked_folder,
)
from harness._shared._record_mode import RecordMode
from harness._shared._secrets import refuse_secrets
from harness.agent._llm import ScriptedAdapter
from harness.scenarios._formats import (
    AnswersFile,
    Fixture,
    LogFile,
    RequestsFile,
    Scenario,
    load_fixture,
)
from harness.scenarios._pins import Pin, pin_from_headers
from harness.scenarios._record import recording_files
from harness.scenarios._replay import Finding, ReplayResult, replay_fixture, verdict
from harness.scenarios._run import Run, run_sync
from harness.scenarios._shuffle import ShuffleResult, shuffle_scenario
from harness.scenarios._validation import check_scenario_input

__all__ = [
    "ScenarioCheck",
    "ScenarioProblem",
    "check_fixture",
    "check_scenario",
    "judge",
    "recording_files_of",
    "refuse_second_owner",
    "shuffle_finding",
]

# Findings a test marked `moves_header(reason=...)` expects: its header moved on purpose.
MOVED_KINDS = ("pin", "log", "requests")
PIN_FILES = (SYSTEM_PIN, TOOLS_PIN)


class ScenarioProblem(HarnessError):
    """A scenario cannot be checked as asked: no recording, or the test's scenario differs."""


@dataclass
class ScenarioCheck:
    """What checking one scenario found, and the files a writing mode wants written."""

    fixture: Fixture
    result: ReplayResult
    shuffle: ShuffleResult | None
    findings: list[Finding]  # the ones that fail the check
    moved: list[Finding] = field(default_factory=list)  # expected by a moves_header marker
    status: str = "ok"  # the verdict in a word (`harness.scenarios._replay.verdict`)
    files: list[FileContents] = field(default_factory=list)
    observed: list[Finding] = field(default_factory=list)  # all replay and shuffle found

    @property
    def scenario(self) -> str:
        return self.fixture.scenario.name

    @property
    def ok(self) -> bool:
        return not self.findings


def shuffle_finding(shuffle: ShuffleResult, command: str | None = None) -> Finding:
    """The finding of a shuffle whose orders sent other bytes: seed, run, both orders."""
    report = shuffle.report
    orders = ""
    if report is not None and report.reproduce is not None:
        orders = (
            f"\n  order A: {', '.join(report.reproduce.order_a)}"
            f"\n  order B: {', '.join(report.reproduce.order_b)}"
        )
    again = f"\n  reproduce: {command}" if command else ""
    message = shuffle.message or (
        "registration shuffle: header bytes moved between registration orders "
        f"(seed {shuffle.seed}, run {shuffle.runs} of the shuffle){orders}{again}"
    )
    return Finding("shuffle", message, report)


def judge(
    fixture: Fixture,
    result: ReplayResult,
    shuffle: ShuffleResult | None,
    *,
    moves_header: str | None = None,
    command: str | None = None,
    files: list[FileContents] | None = None,
) -> ScenarioCheck:
    """The verdict on a replay and a shuffle (`harness.scenarios._replay.verdict` is the rule)."""
    findings = list(result.findings)
    if shuffle is not None and not shuffle.stable:
        findings.append(shuffle_finding(shuffle, command))
    moved: list[Finding] = []
    if moves_header is not None:
        moved = [f for f in findings if f.kind in MOVED_KINDS]
        findings = [f for f in findings if f not in moved]
    ok, status = verdict(findings, fixture.scenario.expect == "unstable")
    if ok:
        failing = []
    elif status == "NOT CAUGHT":
        failing = [Finding("error", "expected unstable, but replay and shuffle caught nothing")]
    elif status == "ERROR":
        failing = [f for f in findings if f.kind == "error"]
    else:
        failing = findings
    return ScenarioCheck(fixture, result, shuffle, failing, moved, status, files or [], findings)


def check_fixture(
    fixture: Fixture,
    *,
    shuffle: int,
    seed: int,
    command: str | None = None,
    pin: Pin | None = None,
    missing_pin_ok: bool = False,
    moves_header: str | None = None,
) -> ScenarioCheck:
    """Replay a recorded scenario, shuffle it `shuffle` times (0 skips), and judge it."""
    result = replay_fixture(fixture, pin=pin, missing_pin_ok=missing_pin_ok)
    shuffled = _shuffle(fixture, shuffle, seed, command)
    return judge(fixture, result, shuffled, moves_header=moves_header, command=command)


def _shuffle(fixture: Fixture, count: int, seed: int, command: str | None) -> ShuffleResult | None:
    if count <= 0:
        return None
    answers = fixture.answers.answers if fixture.answers else fixture.scenario.script
    return shuffle_scenario(fixture.scenario, answers, count=count, seed=seed, command=command)


def check_scenario(
    folder: Path,
    declared: Scenario,
    mode: RecordMode | str,
    *,
    shuffle: int,
    seed: int,
    command: str | None = None,
    moves_header: str | None = None,
) -> ScenarioCheck:
    """Check the scenario `declared` in `folder` as `mode` says (see the module doc)."""
    mode = RecordMode.parse(mode)
    check_scenario_input(declared, folder / SCENARIO_FILE)
    recorded = (folder / LOG_FILE).exists()
    files: list[FileContents] = []
    staged: Pin | None = None
    if mode.writes:
        refuse_linked_folder(folder)
    if mode is RecordMode.RECORD or (mode is RecordMode.UPDATE_NEW_ONLY and not recorded):
        fixture, staged, files = _record(folder, declared)
    elif not recorded:
        raise ScenarioProblem(
            f"no recording for scenario {declared.name!r} in {folder}; record it locally with"
            " `pytest --harness-mode=record` (or update-new-only) and commit it. Nothing was"
            " written."
        )
    else:
        fixture = _load(folder, declared, mode)
    result = replay_fixture(fixture, pin=staged, missing_pin_ok=mode.writes)
    if mode is RecordMode.UPDATE and not result.ok:
        fixture, staged, files = _update(folder, fixture, result)
        result = replay_fixture(fixture, pin=staged, missing_pin_ok=True)
    elif mode is RecordMode.UPDATE and _input_changed(folder, declared):
        # The replay still passes with the test's scenario: only scenario.json is stale, and
        # `check` would keep asking for an update that never wrote it.
        files = [(folder / SCENARIO_FILE, encode(declared))]
        refuse_secrets(files)
    refuse_second_owner(folder, declared, files)
    shuffled = _shuffle(fixture, shuffle, seed, command)
    return judge(fixture, result, shuffled, moves_header=moves_header, command=command, files=files)


def recording_files_of(fixture: Fixture) -> list[FileContents]:
    """The files `harness record` writes for a scenario: run on its stand-in model (its script),
    checked against the other owners of its pin, not written."""
    adapter = ScriptedAdapter(fixture.scenario.script, keep_requests=False)
    run = run_sync(fixture.scenario, adapter, keep_requests=False)
    files = recording_files(fixture.folder, run)
    refuse_second_owner(fixture.folder, fixture.scenario, files)
    return files


def _input_changed(folder: Path, declared: Scenario) -> bool:
    try:
        return read_checked(folder / SCENARIO_FILE) != encode(declared)
    except HarnessError:
        return True


def refuse_second_owner(folder: Path, scenario: Scenario, files: Sequence[FileContents]) -> None:
    """ScenarioProblem when `files` would rewrite a pin another scenario beside `folder` owns.

    A pin holds the headers of the scenario that owns it. Two owners that send the same header
    agree, and may both write it; but a recording that would give the pin other bytes while
    another scenario also owns it would make that one's next `check` fail, and no update could
    fix both. Scenarios that cannot be read are left to the command that reads them.
    """
    pin = scenario.pin
    if pin is None or not pin.owner:
        return
    changed = [path for path, data in files if path.name in PIN_FILES and _differs(path, data)]
    if not changed:
        return
    here = Path(folder).resolve()
    for other in sorted(Path(folder).parent.glob(f"*/{SCENARIO_FILE}")):
        if other.parent.resolve() == here:
            continue
        try:
            theirs = decode(read_checked(other), Scenario, other)
        except HarnessError:
            continue
        if theirs.pin is not None and theirs.pin.owner and theirs.pin.name == pin.name:
            raise ScenarioProblem(
                f"scenario {scenario.name!r} would rewrite pin {pin.name!r} ({changed[0]}),"
                f" which {other} also owns, with other bytes: its next check would fail. A pin"
                ' has one owner: set "owner": false in one of them, or give it a pin of its'
                " own. Nothing was written."
            )


def _differs(path: Path, data: bytes) -> bool:
    """Whether `path` exists with other bytes (a missing pin conflicts with nothing yet: under
    pytest-xdist the controller refuses a second, different write to one path)."""
    if not path.exists():
        return False
    try:
        return read_checked(path, limit=len(data)) != data  # a larger file differs
    except HarnessError:
        return True


def _load(folder: Path, declared: Scenario, mode: RecordMode) -> Fixture:
    fixture = load_fixture(folder)
    if encode(fixture.scenario) == encode(declared):
        return fixture
    if mode is RecordMode.UPDATE:
        return msgspec.structs.replace(fixture, scenario=declared)
    raise ScenarioProblem(
        f"the scenario {declared.name!r} in this test differs from {folder / SCENARIO_FILE};"
        " re-record it with `pytest --harness-mode=update`"
    )


def _record(folder: Path, scenario: Scenario) -> tuple[Fixture, Pin | None, list[FileContents]]:
    run = run_sync(scenario, ScriptedAdapter(scenario.script))
    files = [(folder / SCENARIO_FILE, encode(scenario)), *recording_files(folder, run)]
    refuse_secrets(files[:1])  # recording_files scanned the rest
    fixture, pin = _staged(folder, scenario, files, run)
    return fixture, pin, files


def _update(
    folder: Path, fixture: Fixture, result: ReplayResult
) -> tuple[Fixture, Pin | None, list[FileContents]]:
    """Refresh from the replay when the answers still fit; re-record from the script if not."""
    run = result.run
    if run is None or any(f.kind in ("error", "answers") for f in result.findings):
        return _record(folder, fixture.scenario)
    files = [
        (folder / SCENARIO_FILE, encode(fixture.scenario)),
        *recording_files(folder, run, answers=False),
    ]
    refuse_secrets(files[:1])
    staged, pin = _staged(folder, fixture.scenario, files, run)
    return msgspec.structs.replace(staged, answers=fixture.answers), pin, files


def _staged(
    folder: Path, scenario: Scenario, files: list[FileContents], run: Run
) -> tuple[Fixture, Pin | None]:
    """The fixture and pin the files will make, before anyone writes them."""
    data = {path.name: (path, raw) for path, raw in files if path.parent == folder}
    log = decode(data[LOG_FILE][1], LogFile, data[LOG_FILE][0])
    requests = decode(data[REQUESTS_FILE][1], RequestsFile, data[REQUESTS_FILE][0])
    answers = (
        decode(data[ANSWERS_FILE][1], AnswersFile, data[ANSWERS_FILE][0])
        if ANSWERS_FILE in data
        else None
    )
    fixture = Fixture(str(folder), scenario, log, requests, answers)
    owns = scenario.pin is not None and scenario.pin.owner and run.headers
    return fixture, pin_from_headers(run.headers) if owns else None


# -- a table of results ---------------------------------------------------------------------------


def text_table(checks: list[ScenarioCheck]) -> str:
    """One row per scenario: steps, requests, headers, and each check's result."""
    return _table(_rows(checks), HEADERS)


def markdown_table(checks: list[ScenarioCheck]) -> list[str]:
    """The same table as Markdown lines (for a CI step summary)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    rows = [[code(row[0], cell=True), *row[1:]] for row in _rows(checks)]  # a scenario's name
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _rows(checks: list[ScenarioCheck]) -> list[list[str]]:
    rows = []
    for check in checks:
        result, shuffle = check.result, check.shuffle
        counts = result.header_counts()
        kinds = {f.kind for f in result.findings}
        rows.append(
            [
                check.scenario,
                check.fixture.scenario.expect,
                str(result.steps),
                str(len(result.run.recorder.requests) if result.run else 0),
                f"{counts['initial']}/{counts['resume']}/{counts['change']}",
                "drift" if kinds & {"log", "requests", "answers", "error"} else "ok",
                "drift" if "rebuild" in kinds else "ok",
                "-"
                if shuffle is None
                else ("ok" if shuffle.stable else "drift") + f" x{shuffle.runs}",
                "-"
                if check.fixture.scenario.pin is None
                else ("drift" if "pin" in kinds else "ok"),
                check.status,
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
