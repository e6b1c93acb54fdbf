"""The cache rules in the pytest plugin: every captured request is judged, as `harness lint` would.

A generated project's agent calls the anthropic SDK (its own client, unchanged); the tests carry
`@pytest.mark.header_capture` and record against a stand-in upstream. Findings reach the `header
drift` summary (and GitHub's step summary and annotations); an error fails the test, and so does a
rule the project names in `harness_fail_on`; a conftest registers its own rule with
`pytest_harness_configure`; `harness_capture_config`'s `rules` adds rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

AGENT = """
import anthropic

MARK = {"type": "ephemeral"}


def ask(system_words, markers=1, model="claude-sonnet-4-5"):
    client = anthropic.Anthropic(api_key="sk-ant-test")
    system = [{"type": "text", "text": "rule " * system_words, "cache_control": MARK}]
    content = [
        {"type": "text", "text": f"part {n}", "cache_control": MARK} for n in range(markers - 1)
    ]
    content.append({"type": "text", "text": "Plan a trip."})
    reply = client.messages.create(
        model=model, max_tokens=64, system=system, messages=[{"role": "user", "content": content}]
    )
    return reply.content[0].text
"""

CONFTEST = """
import httpx2
import pytest


def answer(request):
    message = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    return httpx2.Response(200, json=message)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
"""

TESTS = """
import pytest

import agent


@pytest.mark.header_capture
def test_cached():
    assert agent.ask(1000) == "Sunny."


@pytest.mark.header_capture
def test_too_small_to_cache():
    assert agent.ask(100) == "Sunny."


@pytest.mark.header_capture
def test_five_breakpoints():
    assert agent.ask(1000, markers=5) == "Sunny."
"""


def project(pytester: pytest.Pytester, tests: str = TESTS, conftest: str = CONFTEST) -> None:
    pytester.makepyfile(agent=AGENT, conftest=conftest, test_agent=tests)
    pytester.syspathinsert()


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record", *args)


@pytest.mark.slow
def test_findings_reach_the_summary_and_an_error_fails_its_test(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert (
        "harness: 1 cache rule finding(s) fail this test (errors, or rules harness_fail_on" in out
    )
    assert "_ test_five_breakpoints _" in out
    assert "cache rules: 2 finding(s) (1 error(s), 1 warning(s), 0 info):" in out
    assert (
        "test_agent.py::test_too_small_to_cache: request 0: warning below-minimum: nothing is"
        " cached: " in out
    )
    assert "test_agent.py::test_five_breakpoints: request 0: error too-many-breakpoints" in out
    assert "test_cached: request" not in out  # the near miss: over the minimum, four markers


@pytest.mark.slow
def test_harness_fail_on_makes_a_warning_fail_the_test(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.makeini("[pytest]\nharness_fail_on = below-minimum\n")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=2)
    assert "_ test_too_small_to_cache _" in result.stdout.str()


@pytest.mark.slow
def test_an_unknown_rule_in_harness_fail_on_is_one_line(pytester: pytest.Pytester) -> None:
    project(pytester, tests=TESTS.split("@pytest.mark.header_capture\ndef test_too")[0])
    pytester.makeini("[pytest]\nharness_fail_on = below-minimun\n")
    result = run(pytester)
    result.assert_outcomes(errors=1)  # the captured test's setup: one line, no traceback
    assert "harness_fail_on: unknown rule 'below-minimun'; the rules are" in result.stdout.str()


CONFIGURE = """

from harness.rules import Rule


class NoHaiku(Rule):
    name = "no-haiku"
    severity = "warning"

    def check(self, session):
        for analysis in session.analysed():
            if "haiku" in (analysis.model or ""):
                yield session.finding(self, analysis.request.index, "this project runs on Sonnet")


def pytest_harness_configure(config, harness):
    harness.register_rule(NoHaiku)
"""

HAIKU = """
import pytest

import agent


@pytest.mark.header_capture
def test_haiku():
    assert agent.ask(4000, model="claude-haiku-4-5") == "Sunny."
"""


@pytest.mark.slow
def test_a_conftest_registers_a_rule_the_ini_may_make_fail(pytester: pytest.Pytester) -> None:
    project(pytester, tests=HAIKU, conftest=CONFTEST + CONFIGURE)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "request 0: warning no-haiku: this project runs on Sonnet" in result.stdout.str()
    pytester.makeini("[pytest]\nharness_fail_on = no-haiku\n")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    assert "error no-haiku: this project runs on Sonnet" in result.stdout.str()
    from harness.rules import registered_rules

    assert "no-haiku" not in [rule.name for rule in registered_rules()], "undone at the end"


ROWS = """

@pytest.fixture
def harness_capture_config():
    return {
        "rules": [
            {
                "rule": "minimum",
                "providers": ["anthropic"],
                "models": ["claude-in-house*"],
                "tokens": 8192,
                "source": "our gateway's documentation",
                "checked_on": "2026-12-01",
            }
        ]
    }
"""

IN_HOUSE = """
import pytest

import agent


@pytest.mark.header_capture
def test_in_house():
    assert agent.ask(2000, model="claude-in-house-1") == "Sunny."
"""


@pytest.mark.slow
def test_harness_capture_config_rules_add_rows_for_the_test(pytester: pytest.Pytester) -> None:
    project(pytester, tests=IN_HOUSE)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert "info unknown-model: the rules know no minimum for model claude-in-house-1" in (
        result.stdout.str()
    )
    project(pytester, tests=IN_HOUSE, conftest=CONFTEST + ROWS)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "unknown-model" not in out
    assert "minimum 8,192 for claude-in-house-1" in out


@pytest.mark.slow
def test_github_gets_the_findings_as_annotations_and_a_table(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    project(pytester)
    run(pytester).assert_outcomes(passed=2, failed=1)  # records the two that pass
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = inner_pytest(pytester, "-p", "no:randomly", "-k", "not five")  # CI: replays
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "::warning file=test_agent.py,line=" in out and "title=cache rule below-minimum::" in out
    text = summary.read_text(encoding="utf-8")
    assert "### Cache rules" in text and "| `below-minimum` | warning |" in text
