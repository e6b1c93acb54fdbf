"""Secrets the project declared are never printed (defects 1 and 13 of issue 24).

Before, a record run refused to write a value matching the project's `secret_patterns`, or the
value of a redacted header (an Azure `api-key`) that the code put into a prompt; but check mode
printed it in the drift report, the terminal summary, the `--junitxml` file and the GitHub step
summary: printing redacted only the built-in key shapes. And a record run's `--junitxml` held
every recording as base64 (the controller's plumbing rode in `user_properties`). Met as a user
meets them: a project records a clean conversation, then its code starts sending the secret, and
its CI runs `pytest` in check mode, with and without pytest-xdist.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

# Neither has a known key shape: only the project's pattern, or the header it came in, names it.
ACME = "acme_live_" + "7f3a9c21e5b84d06" * 2
AZURE = "azure-key-7f3a9c21e5b84d06a1c2"

AGENT = """
import os

import anthropic


def ask(question):
    client = anthropic.Anthropic(api_key="test-key-not-a-secret",
                                 default_headers={"api-key": os.environ["AZURE_KEY"]})
    extra = os.environ.get("DEBUG_NOTE", "")
    return client.messages.create(
        model="claude-test", max_tokens=64, system="You answer briefly." + extra,
        messages=[{"role": "user", "content": question}])
"""

CONFTEST = """
import httpx2
import pytest

ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
          "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2}}


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))


@pytest.fixture
def harness_capture_config():
    return {"secret_patterns": [r"acme_live_[0-9a-f]{32}"], "allow": ["sk-test-not-a-key"]}
"""

TESTS = """
import pytest

import agent


@pytest.mark.header_capture
def test_plan():
    assert agent.ask("Is it a good day for a walk?")


@pytest.mark.header_capture
def test_other_plan():
    assert agent.ask("And tomorrow?")
"""


def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_agent=TESTS)
    pytester.syspathinsert()
    monkeypatch.setenv("AZURE_KEY", AZURE)


def pieces(secret: str) -> list[str]:
    return [secret[i : i + 12] for i in range(0, len(secret) - 11, 3)]


def assert_hidden(text: str, *secrets: str) -> None:
    for secret in secrets:
        for piece in pieces(secret):
            assert piece not in text, f"{piece!r} is printed"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_check_mode_prints_no_declared_secret_anywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    project(pytester, monkeypatch)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=2)

    # the code now puts both secrets into the system prompt; CI replays
    monkeypatch.setenv("DEBUG_NOTE", f" Use {ACME} or {AZURE} when asked.")
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = pytester.path / "report.xml"
    result = inner_pytest(
        pytester, "-p", "no:randomly", f"--junitxml={junit}", *workers, subprocess=bool(workers)
    )
    result.assert_outcomes(failed=2)
    out = result.stdout.str() + result.stderr.str()
    assert "does not match exchange 1" in out and "[redacted]" in out
    assert "2 test(s) found header drift" in out  # the terminal summary, and the annotations
    assert "::error file=test_agent.py" in out
    assert "[redacted]" in summary.read_text()
    for text in (out, summary.read_text(), junit.read_text()):
        assert_hidden(text, ACME, AZURE)


def test_a_record_runs_junitxml_holds_no_recording_and_no_plumbing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(pytester, monkeypatch)
    junit = pytester.path / "report.xml"
    result = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-mode=record", f"--junitxml={junit}"
    )
    result.assert_outcomes(passed=2)
    written = sorted((pytester.path / "fixtures" / "cassettes").rglob("*.json"))
    assert len(written) == 2  # the controller still got the files
    xml = junit.read_text()
    assert "harness_" not in xml and "<properties>" not in xml
    for path in written:
        assert base64.b64encode(path.read_bytes())[:40].decode() not in xml


@pytest.mark.slow
def test_under_xdist_the_recordings_still_reach_the_controller_and_not_the_junitxml(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(pytester, monkeypatch)
    junit = pytester.path / "report.xml"
    result = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-mode=record", f"--junitxml={junit}", "-n", "2"
    )
    result.assert_outcomes(passed=2)
    assert len(list((pytester.path / "fixtures" / "cassettes").rglob("*.json"))) == 2
    assert "harness_" not in junit.read_text()


def test_the_projects_own_properties_still_reach_the_junitxml(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The near miss: `record_property` is the user's channel, and stays theirs."""
    project(pytester, monkeypatch)
    pytester.makepyfile(
        test_props="""
def test_props(record_property):
    record_property("build", "1234")
"""
    )
    junit = pytester.path / "report.xml"
    inner_pytest(pytester, "-p", "no:randomly", "test_props.py", f"--junitxml={junit}")
    assert '<property name="build" value="1234"' in junit.read_text()


def test_a_drift_report_in_the_same_process_is_redacted_with_the_projects_words(
    tmp_path: Path,
) -> None:
    """A capture session made with a project's config teaches the printer its words: a drift
    report printed afterwards redacts the project's pattern and the redacted header's value."""
    import httpx2

    from harness._shared import _printer
    from harness.capture import CaptureConfig, CaptureSession
    from harness.drift import compare_values

    config = CaptureConfig.of({"secret_patterns": [r"acme_live_[0-9a-f]{32}"]})
    session = CaptureSession(
        cassette=None,
        mode="record",
        upstream=httpx2.MockTransport(lambda _: httpx2.Response(200, json={})),
        config=config,
    )
    try:
        session.httpx2_client().post(
            "https://api.example.test/v1/x", json={}, headers={"api-key": AZURE}
        )
        report = compare_values({"system": f"use {ACME} and {AZURE}"}, {"system": "changed"})
        assert_hidden(report.to_text() + report.to_markdown(), ACME, AZURE)
    finally:
        _printer.reset()
