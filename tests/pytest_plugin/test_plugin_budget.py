"""`@pytest.mark.cache_budget` and the `harness_cache_budget` ini default, through pytester: a
generated project's agent holds a two-turn conversation through the anthropic SDK (its own
client) against a stand-in; the budget passes, fails with the breakdown, re-prices under another
model, and a bad key is one line."""

from __future__ import annotations

import pytest

from tests.support.conversations import PRICES_CHECKED, REGISTRY
from tests.support.inner import inner_pytest

AGENT = """
import anthropic

MARK = {"type": "ephemeral"}


def chat(turns=2, words=1000, model="claude-sonnet-4-5"):
    client = anthropic.Anthropic(api_key="sk-ant-test")
    system = [{"type": "text", "text": "rule " * words, "cache_control": MARK}]
    messages = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn}"})
        reply = client.messages.create(
            model=model, max_tokens=64, system=system, messages=messages
        )
        messages.append({"role": "assistant", "content": reply.content[0].text})
    return messages[-1]["content"]
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
@pytest.mark.cache_budget(max_usd=0.05, min_hit_rate=0.3)
def test_within_budget():
    assert agent.chat() == "Sunny."


@pytest.mark.header_capture
@pytest.mark.cache_budget(max_usd=0.001)
def test_over_budget():
    assert agent.chat() == "Sunny."


@pytest.mark.header_capture
@pytest.mark.cache_budget(min_hit_rate=0.3, model="claude-haiku-4-5")
def test_under_haikus_minimum():
    assert agent.chat() == "Sunny."


@pytest.mark.header_capture
def test_no_budget():
    assert agent.chat(turns=1) == "Sunny."
"""


def run(pytester: pytest.Pytester, tests: str = TESTS, *args: str) -> pytest.RunResult:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_agent=tests)
    pytester.syspathinsert()
    return inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record", *args)


@pytest.mark.slow
def test_the_budget_passes_and_fails_with_the_breakdown(pytester: pytest.Pytester) -> None:
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "_ test_over_budget _" in out and "_ test_under_haikus_minimum _" in out
    assert "harness: the cache budget failed (1 problem(s)):" in out
    assert "anthropic api.anthropic.com/v1/messages (2 request(s)) costs $0.0" in out
    assert ", over the budget of $0.0010: 2 request(s): $0.0" in out
    assert (
        f"at claude-sonnet-4-5 list price, prices checked {PRICES_CHECKED} ({REGISTRY}); hit rate 4"
        in out
    )
    # the same conversation under Haiku 4.5's 4,096-token minimum caches nothing
    assert "hits the cache for 0% of its input, under the budget's 30%" in out
    assert "at claude-haiku-4-5 list price" in out


@pytest.mark.slow
def test_the_ini_default_and_a_marker_that_overrides_it(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_cache_budget = max_usd=0.001\n")
    tests = TESTS.replace("@pytest.mark.cache_budget(max_usd=0.001)\n", "")
    result = run(pytester, tests)
    # test_over_budget and test_no_budget now take the ini's $0.001; test_within_budget its own
    result.assert_outcomes(passed=1, failed=3)
    assert "over the budget of $0.0010" in result.stdout.str()


@pytest.mark.slow
def test_a_bad_budget_is_one_line(pytester: pytest.Pytester) -> None:
    tests = TESTS.replace("cache_budget(max_usd=0.001)", "cache_budget(max_dollars=1)")
    result = run(pytester, tests)
    # a usage error: the test errors at setup, before its body runs (issue 32)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    assert (
        "harness: @pytest.mark.cache_budget: unknown key 'max_dollars'; it takes max_usd="
        in result.stdout.str()
    )


MOVING_AGENT = """
import os

import anthropic

MARK = {"type": "ephemeral"}
TOOLS = [
    {"name": name, "description": "d " * 300, "input_schema": {"type": "object"}}
    for name in ("alpha", "beta", "gamma")
]


def chat(turns=3):
    client = anthropic.Anthropic(api_key="sk-ant-test")
    system = [{"type": "text", "text": "rule " * 1000}]
    messages = []
    for turn in range(turns):
        tools = list(TOOLS)
        if os.environ.get("MOVE_TOOLS") and turn % 2:
            tools.reverse()
        text = {"type": "text", "text": f"q {turn}", "cache_control": MARK}
        messages.append({"role": "user", "content": [text]})
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, system=system, tools=tools, messages=messages
        )
        messages[-1]["content"][0].pop("cache_control")
        messages.append({"role": "assistant", "content": reply.content[0].text})
    return messages[-1]["content"]
"""

MOVING_TESTS = """
import pytest

import agent


@pytest.mark.header_capture
def test_chat():
    assert agent.chat() == "Sunny."
"""


@pytest.mark.slow
def test_the_drift_summary_and_step_summary_carry_the_cost_delta(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(agent=MOVING_AGENT, conftest=CONFTEST, test_agent=MOVING_TESTS)
    pytester.syspathinsert()
    recorded = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    recorded.assert_outcomes(passed=1)
    monkeypatch.setenv("MOVE_TOOLS", "1")
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = inner_pytest(pytester, "-p", "no:randomly")  # CI: replays
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "    cost: $0.0" in out
    assert (
        f"per conversation at claude-sonnet-4-5 list price, prices checked {PRICES_CHECKED};"
        " cause tools_changed at /tools/0" in out
    )
    assert "; priced over the first 2 request(s), where the replay stopped" in out
    line = next(text for text in out.splitlines() if text.startswith("    cost: "))
    was, now = (float(part.strip(" $")) for part in line[10:].split(" per ")[0].split("->"))
    assert now > was  # the moved tools are written again instead of read
    # the cost line quotes the model: inert Markdown, its `$` escaped (no math renders)
    assert "**Cost:** \\$0.0" in summary.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_model_the_rules_do_not_know_fails_rather_than_guesses(pytester: pytest.Pytester) -> None:
    tests = TESTS.replace('model="claude-haiku-4-5"', 'model="claude-unknown-9"')
    result = run(pytester, tests, "-k", "haiku")
    result.assert_outcomes(failed=1, deselected=3)
    assert "the rules know no minimum for claude-unknown-9 (anthropic), so what it caches" in (
        result.stdout.str()
    )
