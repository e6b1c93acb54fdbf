"""The plugin on an SDK project whose agent code is never changed: mark, record once, replay.

The project under test builds its own `anthropic.Anthropic()` client inside the agent, as real
agents do; the tests only carry `@pytest.mark.header_capture`. "The network" is the project's
`harness_upstream` stand-in, used only in record mode (in check mode it fails if reached).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

AGENT = """
import os

import anthropic

TOOLS = ["get_weather", "get_forecast", "geocode"]
CACHE = {"type": "ephemeral"}


def tool_list(turn):
    names = list(TOOLS)
    if os.environ.get("AGENT_BUG") == "reorder":
        names.reverse()
    if os.environ.get("AGENT_BUG") == "edit":
        names[0] = names[0] + "_v2"
    if os.environ.get("AGENT_BUG") == "grow" and turn > 0:
        names.append("late_tool")  # a tool that registers between turns
    return [{"name": n, "description": n + ".", "input_schema": {"type": "object"}} for n in names]


def run(question):
    client = anthropic.Anthropic(api_key="sk-ant-test")  # the agent makes its own client
    messages = [{"role": "user", "content": question}]
    for turn in range(2):
        reply = client.messages.create(
            model="claude-test",
            max_tokens=256,
            system=[{"type": "text", "text": "You plan trips.", "cache_control": CACHE}],
            tools=tool_list(turn),
            messages=messages,
        )
        messages = messages + [
            {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
            {"role": "user", "content": "thanks, and tomorrow?"},
        ]
    return reply.content[0].text
"""

CONFTEST = """
import json
import os

import httpx2
import pytest


def fake_api(request):
    if os.environ.get("HARNESS_MODE_IS_CHECK") == "1":
        raise AssertionError("the network was reached in check mode")
    body = json.loads(request.content)
    message = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": "Sunny, go for a walk."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    return httpx2.Response(200, json=message)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(fake_api)
"""

TESTS = """
import pytest

import agent


@pytest.mark.header_capture
def test_trip():
    assert "walk" in agent.run("Paris tomorrow?")
"""


def project(pytester: pytest.Pytester, tests: str = TESTS, conftest: str = CONFTEST) -> Path:
    pytester.makepyfile(agent=AGENT, conftest=conftest, test_trip=tests)
    pytester.syspathinsert()
    return pytester.path / "fixtures" / "cassettes" / "test_trip"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return inner_pytest(pytester, "-p", "no:randomly", *args)


def check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    """A CI run: CI=true, nothing may be written, and the stand-in API fails if reached."""
    with monkeypatch.context() as patch:
        patch.setenv("CI", "true")
        patch.setenv("HARNESS_MODE_IS_CHECK", "1")
        return run(pytester, *args)


@pytest.mark.slow
def test_record_once_then_ci_replays_offline_without_touching_the_agent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassettes = project(pytester)
    run(pytester, "--harness-mode=record").assert_outcomes(passed=1)
    cassette = cassettes / "test_trip.json"
    recorded = json.loads(cassette.read_text())
    assert [e["request"]["url"] for e in recorded["exchanges"]] == [
        "https://api.anthropic.com/v1/messages"
    ] * 2
    assert "sk-ant-test" not in cassette.read_text()

    result = check(pytester, monkeypatch)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "no header drift" in out
    assert "prefix chain: 1 captured test(s); requests per provider: anthropic 2 (judged 1)" in out


@pytest.mark.slow
@pytest.mark.parametrize("bug", ["reorder", "edit"])
def test_ci_fails_on_a_reordered_or_edited_tool_with_the_report_first(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bug: str
) -> None:
    cassettes = project(pytester)
    run(pytester, "--harness-mode=record").assert_outcomes(passed=1)
    before = (cassettes / "test_trip.json").read_bytes()
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("AGENT_BUG", bug)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    result = check(pytester, monkeypatch)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "harness.CassetteMismatch: request 1 (POST /v1/messages) does not match" in out
    verdict = "tools_changed: tools reordered" if bug == "reorder" else "tools_changed: tool"
    assert verdict in out
    failure = out[out.index("test_trip ___") :]
    assert failure.index("tools_changed") < failure.index("sent from (your code):")
    assert "site-packages/anthropic" not in failure.split("short test summary")[0]
    assert "agent.py:" in failure and "frames of the SDK" in failure
    # the drift reaches the summary section, the step summary and an annotation
    section = out[out.index("= header drift =") :]
    assert "1 test(s) found header drift:" in section and "no header drift" not in section
    assert "::error file=test_trip.py" in out and "title=header drift" in out
    written = summary.read_text()
    assert "## Header drift" in written and "tools_changed" in written
    assert "No header drift." not in written
    assert (cassettes / "test_trip.json").read_bytes() == before


def test_the_prefix_chain_gate_fails_a_tool_that_registers_between_turns(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassettes = project(pytester)
    monkeypatch.setenv("AGENT_BUG", "grow")
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "the prefix-chain gate failed" in out
    assert "tools_changed: request 2 (POST api.anthropic.com/v1/messages) does not extend" in out
    assert 'tool added: "late_tool"' in out
    # the stand-in's model is one the rules know no minimum for: the loss is not claimed
    assert "no minimum for claude-test: what it loses is not judged" in out
    assert not cassettes.exists()  # a test that fails while recording writes nothing


@pytest.mark.slow
def test_moves_header_exempts_and_the_summary_flags_stale_exemptions(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = (
        TESTS
        + """

@pytest.mark.header_capture
@pytest.mark.moves_header(reason="a tool registers after the first turn")
def test_trip_with_late_tool():
    assert "walk" in agent.run("Rome?")
"""
    )
    project(pytester, tests=tests)
    run(pytester, "--harness-mode=record").assert_outcomes(passed=2)
    out = run(pytester).stdout.str()
    assert "test_trip_with_late_tool: a tool registers after the first turn [stale" in out

    monkeypatch.setenv("AGENT_BUG", "grow")  # now the header moves in both tests
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "test_trip_with_late_tool: a tool registers after the first turn\n" in out
    assert "[stale" not in out


def test_a_test_that_fails_while_recording_writes_nothing(pytester: pytest.Pytester) -> None:
    tests = """
import pytest

import agent


@pytest.mark.header_capture
def test_trip():
    agent.run("Paris?")
    assert False, "the agent's answer was wrong"
"""
    cassettes = project(pytester, tests=tests)
    run(pytester, "--harness-mode=record").assert_outcomes(failed=1)
    assert not cassettes.exists()


def test_the_config_fixture_and_the_marker_choose_the_hosts(pytester: pytest.Pytester) -> None:
    conftest = (
        CONFTEST
        + """

@pytest.fixture
def harness_capture_config():
    return {"ignore_hosts": ["api.anthropic.com"]}
"""
    )
    tests = """
import httpx2
import pytest

import agent
from conftest import fake_api


@pytest.mark.header_capture
def test_ignored_host_passes_through():
    client = httpx2.Client(transport=httpx2.MockTransport(fake_api))
    body = {"model": "m", "system": "s", "messages": []}
    assert client.post("https://api.anthropic.com/v1/messages", json=body).status_code == 200


@pytest.mark.header_capture(ignore_hosts=[])
def test_trip_captured():
    assert "walk" in agent.run("Rome?")
"""
    cassettes = project(pytester, tests=tests, conftest=conftest)
    result = run(pytester, "--harness-mode=record")
    result.assert_outcomes(passed=2)
    assert sorted(p.name for p in cassettes.iterdir()) == ["test_trip_captured.json"]


def test_a_bad_config_is_one_line(pytester: pytest.Pytester) -> None:
    conftest = (
        CONFTEST
        + """

@pytest.fixture
def harness_capture_config():
    return {"redact": ["x-token"]}
"""
    )
    project(pytester, conftest=conftest)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    assert "harness: harness_capture_config: unknown key 'redact'; the valid keys are" in (
        result.stdout.str()
    )


@pytest.mark.slow
def test_under_xdist_the_controller_sums_coverage_and_flags_stale_exemptions(
    pytester: pytest.Pytester,
) -> None:
    tests = (
        TESTS
        + """

@pytest.mark.header_capture
@pytest.mark.moves_header(reason="kept from an old refactor")
def test_trip_again():
    assert "walk" in agent.run("Rome?")
"""
    )
    project(pytester, tests=tests)
    args = ("-p", "no:randomly", "-n", "2")
    inner_pytest(pytester, *args, "--harness-mode=record").assert_outcomes(passed=2)
    result = inner_pytest(pytester, *args)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "prefix chain: 2 captured test(s); requests per provider: anthropic 4 (judged 2)" in out
    assert "test_trip_again: kept from an old refactor [stale: marked, yet nothing moved]" in out
