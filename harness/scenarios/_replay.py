"""Replay: re-run a recorded scenario on its recorded answers and say exactly what moved.

A replay checks, in this order, and reports every finding rather than stopping at the first:
1. the rebuild invariant from the harness's side: at every dispatch, assembling again from the same
   inputs gives the header the log holds (a listener with hidden state fails here);
2. the re-derived session log equals the recorded one, and so does the order the plugins
   registered in (each recording file must also name this scenario: `harness.scenarios._formats`);
3. the re-built frozen requests equal the recorded ones;
4. every live header equals its class's pin, with the declared number of header changes;
5. every recorded answer was asked for.
A scenario that expects to be unstable (a racy listener kept as a regression example) passes when
the replay catches it, and fails when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from harness._shared._errors import FixtureError
from harness._shared._paths import pin_folder, pins_root
from harness._shared._views import view_of_header
from harness.agent._context import LoadSchedule
from harness.agent._llm import ScriptedAdapter
from harness.drift._compare import compare, compare_values
from harness.drift._report import DriftReport
from harness.scenarios._formats import SESSION_TOKEN, TIME_TOKEN, Fixture
from harness.scenarios._pins import Pin, check_against_pin, load_pin
from harness.scenarios._record import log_of, recorded_bytes, requests_of
from harness.scenarios._run import Run, owners_of, run_sync

FindingKind = Literal["error", "rebuild", "log", "requests", "pin", "answers", "shuffle"]


class Finding(msgspec.Struct, frozen=True):
    kind: FindingKind
    message: str
    report: DriftReport | None = None

    def to_text(self) -> str:
        text = f"[{self.kind}] {self.message}"
        if self.report is not None and not self.report.identical:
            text += "\n" + _indent(self.report.to_text())
        return text


# A scenario that expects to be unstable must be caught by one of these.
CATCHING_KINDS = ("rebuild", "shuffle")


def verdict(findings: list[Finding], expected_unstable: bool) -> tuple[bool, str]:
    """The one rule: a stable scenario passes with no finding; one that expects to be unstable
    passes when the rebuild or the shuffle caught it and nothing errored."""
    if not expected_unstable:
        return (not findings), ("ok" if not findings else "DRIFT")
    caught = any(f.kind in CATCHING_KINDS for f in findings)
    errored = any(f.kind == "error" for f in findings)
    if caught and not errored:
        return True, "caught (expected unstable)"
    return False, ("ERROR" if caught else "NOT CAUGHT")


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else line for line in text.splitlines())


@dataclass
class ReplayResult:
    fixture: Fixture
    run: Run | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def expected_unstable(self) -> bool:
        return self.fixture.scenario.expect == "unstable"

    @property
    def caught(self) -> bool:
        return any(f.kind in CATCHING_KINDS for f in self.findings)

    @property
    def ok(self) -> bool:
        return verdict(self.findings, self.expected_unstable)[0]

    @property
    def steps(self) -> int:
        if self.run is None:
            return 0
        return sum(type(e).__name__ == "StepStart" for e in self.run.recorder.events)

    def header_counts(self) -> dict[str, int]:
        counts = {"initial": 0, "resume": 0, "change": 0}
        for reason, _ in self.run.headers if self.run else ():
            counts[reason] += 1
        return counts


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


def compare_recordings(fixture: Fixture, run: Run) -> list[Finding]:
    """The re-derived log and requests against the recorded ones.

    Their bytes are compared first (`recorded_bytes`); only a part whose bytes differ is decoded
    into the files' types and compared value by value, for the drift report.
    """
    assert fixture.log is not None and fixture.requests is not None
    findings: list[Finding] = []
    order = list(run.registration_order)
    if order != list(fixture.log.registration_order):
        report = compare_values(
            list(fixture.log.registration_order), order, label_a="recorded", label_b="replayed"
        )
        findings.append(
            Finding(
                "log",
                "the plugins registered in another order than the recording says"
                f" (log.json `registration_order`, at {report.pointer})",
                report,
            )
        )
    log_bytes, requests_bytes = recorded_bytes(run)
    same_log = log_bytes == msgspec.json.encode(fixture.log.events)
    same_requests = requests_bytes == msgspec.json.encode(fixture.requests.requests)
    if same_log and same_requests:
        return findings
    log, requests = log_of(run), requests_of(run)  # replay compares these two, not the answers
    if not same_log and msgspec.json.encode(log.events) != msgspec.json.encode(fixture.log.events):
        report = compare_values(
            _builtins(fixture.log.events),
            _builtins(log.events),
            label_a="recorded",
            label_b="replayed",
        )
        findings.append(
            Finding(
                "log",
                f"the replayed session log differs from the recording at {report.pointer}",
                report,
            )
        )
    recorded, replayed = fixture.requests.requests, requests.requests
    for index in range(0 if same_requests else max(len(recorded), len(replayed))):
        if index >= len(recorded) or index >= len(replayed):
            findings.append(
                Finding(
                    "requests",
                    f"the recording has {len(recorded)} requests; "
                    f"the replay dispatched {len(replayed)}",
                )
            )
            break
        if msgspec.json.encode(recorded[index]) != msgspec.json.encode(replayed[index]):
            report = compare_values(
                _builtins(recorded[index]),
                _builtins(replayed[index]),
                label_a="recorded",
                label_b="replayed",
            )
            findings.append(
                Finding(
                    "requests",
                    f"request {index + 1} differs from the recording at {report.pointer}",
                    report,
                )
            )
            break
    return findings


def rebuild_findings(run: Run) -> list[Finding]:
    owners = owners_of(run.scenario)
    findings = []
    for mismatch in run.rebuilds:
        report = compare(
            view_of_header(mismatch.logged),
            view_of_header(mismatch.rebuilt),
            owners=owners,
            label_a="logged",
            label_b="rebuilt",
        )
        findings.append(
            Finding(
                "rebuild",
                f"step {mismatch.step}: assembling again from the same inputs gave another header "
                "(a system-prompt/assemble listener is not deterministic)",
                report,
            )
        )
    return findings


def pin_findings(
    fixture: Fixture,
    run: Run,
    pins: Path | None,
    *,
    pin: Pin | None = None,
    missing_ok: bool = False,
) -> list[Finding]:
    """Live headers against the class's pin (`pin` overrides the one on disk)."""
    spec = fixture.scenario.pin
    if spec is None:
        return []
    root = pins if pins is not None else pins_root(fixture.folder)
    pin = pin if pin is not None else load_pin(root, spec.name)
    if pin is None:
        if missing_ok:
            return []
        return [
            Finding(
                "pin", f'header class "{spec.name}" has no pin under {root}; run harness refresh'
            )
        ]
    # The pin's files are named: a hand-edited or damaged system pin (plain text, no envelope:
    # decision 0011) reads as this drift, and the reader must know which file to look at.
    where = f" (pin {pin_folder(root, spec.name)}: edited or damaged? git diff it)"
    return [
        Finding(
            "pin",
            mismatch.message + (where if mismatch.report is not None else ""),
            mismatch.report,
        )
        for mismatch in check_against_pin(
            run.headers, pin, fixture.scenario.expected_header_changes, owners_of(run.scenario)
        )
    ]


def _token_clock() -> str:
    return TIME_TOKEN


def replay_fixture(
    fixture: Fixture,
    *,
    schedule: LoadSchedule | None = None,
    pins: Path | None = None,
    pin: Pin | None = None,
    missing_pin_ok: bool = False,
) -> ReplayResult:
    """Replay `fixture`; `pin` overrides the pin on disk (a recording not yet written)."""
    if not fixture.recorded:
        raise FixtureError(fixture.folder, "has no recording", "record it first: harness record")
    assert fixture.answers is not None
    # Neither keeps full requests: each holds the conversation so far (quadratic memory), and
    # the comparison needs only their digests, which the recorder keeps.
    adapter = ScriptedAdapter(fixture.answers.answers, keep_requests=False)
    try:
        run = run_sync(
            fixture.scenario,
            adapter,
            schedule=schedule,
            keep_requests=False,
            # Normalisation replaces the session id and every time with these tokens: a run
            # that uses them as they are has nothing to replace (the log's bytes are the same).
            session_id=SESSION_TOKEN,
            clock=_token_clock,
            share_conversation=True,  # requests are only digested: they share one conversation
        )
    except Exception as error:  # a scenario that cannot even boot is a finding, not a crash
        return ReplayResult(
            fixture, None, [Finding("error", f"the scenario failed to run: {error}")]
        )
    findings = rebuild_findings(run)
    findings += compare_recordings(fixture, run)
    findings += pin_findings(fixture, run, pins, pin=pin, missing_ok=missing_pin_ok)
    unused = len(fixture.answers.answers) - adapter.calls
    if unused > 0:
        findings.append(Finding("answers", f"{unused} recorded answer(s) were never asked for"))
    return ReplayResult(fixture, run, findings)
