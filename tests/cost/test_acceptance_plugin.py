"""The budget marker and the rules through pytester, as a project meets them: an agent on the
anthropic SDK (its own client) against a stand-in, opting into Anthropic's cache diagnostics
(a new `previous_message_id` every turn: bookkeeping); `min_hit_rate` alone, the ini default
with `model=`, and the budget's figures against `harness cost` on the cassette it recorded.
"""

from __future__ import annotations

import json
import re

import pytest

from harness.cli import main
from tests.support.inner import inner_pytest

AGENT = """
import anthropic

MARK = {"type": "ephemeral"}


def chat(turns=3, words=1500, model="claude-sonnet-4-5", edit=False):
    client = anthropic.Anthropic(api_key="sk-ant-test")
    messages = []
    previous = None
    for turn in range(turns):
        text = "rule " * words + (f" (turn {turn})" if edit else "")
        system = [{"type": "text", "text": text, "cache_control": MARK}]
        messages.append({"role": "user", "content": f"question {turn}"})
        extra = {"metadata": {"user_id": f"run-{turn}"}}
        if previous is not None:
            extra["extra_body"] = {"diagnostics": {"previous_message_id": previous}}
        reply = client.messages.create(
            model=model, max_tokens=64, system=system, messages=messages, **extra
        )
        previous = reply.id
        messages.append({"role": "assistant", "content": reply.content[0].text})
    return messages[-1]["content"]
"""

CONFTEST = """
import itertools

import httpx2
import pytest

NUMBERS = itertools.count()


def answer(request):
    message = {
        "id": f"msg_{next(NUMBERS)}", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 2},
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
@pytest.mark.cache_budget(min_hit_rate=0.5)
def test_reads_its_cache():
    assert agent.chat() == "Sunny."


@pytest.mark.header_capture
@pytest.mark.cache_budget(min_hit_rate=0.5)
def test_edits_its_system_prompt():
    assert agent.chat(edit=True) == "Sunny."
"""


def project(pytester: pytest.Pytester, tests: str = TESTS) -> None:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_agent=tests)
    pytester.syspathinsert()


@pytest.mark.slow
def test_diagnostics_are_bookkeeping_and_min_hit_rate_alone_gates(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    out = result.stdout.str()
    # a new previous_message_id and metadata every turn break nothing: the first test passes
    result.assert_outcomes(passed=1, failed=1)
    assert "_ test_edits_its_system_prompt _" in out
    assert "_ test_reads_its_cache _" not in out
    assert "system_changed" in out  # the near miss: the edit breaks the prefix every turn


@pytest.mark.slow
def test_the_ini_budget_with_a_model_and_the_cost_of_the_cassette(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = TESTS.replace("@pytest.mark.cache_budget(min_hit_rate=0.5)\n", "")
    tests = tests.split("@pytest.mark.header_capture\ndef test_edits")[0]
    project(pytester, tests)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    # Haiku 4.5 caches nothing under 4,096 tokens: the ~1,500-token prompt reads nothing there
    pytester.makeini(
        "[pytest]\nharness_cache_budget = max_usd=1 min_hit_rate=0.5 model=claude-haiku-4-5\n"
    )
    result = inner_pytest(pytester, "-p", "no:randomly")  # replays the recording
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "harness: the cache budget failed" in out
    assert "at claude-haiku-4-5 list price" in out
    # the same cassette priced by the CLI gives the same figure the failure states
    (cassette,) = (pytester.path / "fixtures" / "cassettes").rglob("*.json")
    capsys.readouterr()  # the inner run's output
    code = main(["cost", str(cassette), "--model", "claude-haiku-4-5", "--format", "json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0
    (session,) = printed["sessions"]
    assert session["cache_read_tokens"] == 0 and session["hit_rate"] == 0
    said = re.search(r"\d request\(s\): \$(\d+\.\d+)", out)
    assert said is not None
    assert float(said.group(1)) == pytest.approx(session["usd"], abs=1e-4)


@pytest.mark.slow
def test_a_budget_on_a_test_that_captures_nothing_is_no_silent_pass(
    pytester: pytest.Pytester,
) -> None:
    project(
        pytester,
        """
import pytest

import agent


@pytest.mark.cache_budget(max_usd=0.0001)
def test_budget_without_capture():
    assert True


@pytest.mark.cache_budget(max_usd=1)
def test_budget_through_the_fixture(header_capture):
    with header_capture.intercept():
        assert agent.chat(turns=1) == "Sunny."
""",
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "_ test_budget_without_capture _" in out
    assert "harness: @pytest.mark.cache_budget prices the conversation a captured test" in out
