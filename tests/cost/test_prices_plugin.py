"""The `cache_budget` marker priced from genai-prices, through pytester as a project meets it: the
failure names the price and where it came from; a project's `harness_capture_config` row
overrides it; a row a budget could not fail on (NaN, negative) fails the test in one line instead
of letting it pass.
"""

from __future__ import annotations

import pytest

from tests.support.conversations import PRICES_CHECKED, REGISTRY
from tests.support.inner import inner_pytest

pytestmark = pytest.mark.slow  # a pytest run inside the test

AGENT = """
import anthropic

MARK = {"type": "ephemeral"}


def chat(model, turns=2, words=1500):
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
import os

import httpx2
import pytest


def answer(request):
    message = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
        "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    return httpx2.Response(200, json=message)


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)


@pytest.fixture
def harness_capture_config():
    price = os.environ.get("OUR_INPUT_PRICE")
    if price is None:
        return {}
    row = {
        "providers": ["anthropic"], "models": ["claude-sonnet-5*"],
        "effective_from": "2026-01-01", "input": float(price), "output": 1.0,
        "cache_read": 0.01, "cache_write": {"5m": 0.0125}, "source": "our contract",
        "checked_on": "2026-11-30",
    }
    return {"prices": [row]}
"""

TESTS = """
import pytest

import agent


@pytest.mark.header_capture
@pytest.mark.cache_budget(max_usd=0.000001)
def test_sonnet_5_over_budget():
    assert agent.chat("claude-sonnet-5") == "Sunny."


@pytest.mark.header_capture
@pytest.mark.cache_budget(max_usd=1.0, model="claude-opus-5-5")
def test_opus_5_5_within_budget():
    assert agent.chat("claude-sonnet-5") == "Sunny."
"""


def run(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_agent=TESTS)
    pytester.syspathinsert()
    return inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")


def test_the_budget_names_the_price_and_its_source(pytester: pytest.Pytester) -> None:
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "_ test_sonnet_5_over_budget _" in out
    assert (
        f"at claude-sonnet-5 list price, prices checked {PRICES_CHECKED} ({REGISTRY}); hit rate"
        in out
    )


def test_a_project_row_prices_the_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUR_INPUT_PRICE", "0.01")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    assert "at claude-sonnet-5 list price, prices checked 2026-11-30 (our contract)" in (
        result.stdout.str()
    )


@pytest.mark.parametrize("price", ["nan", "-1", "inf"])
def test_a_price_a_budget_cannot_fail_on_fails_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, price: str
) -> None:
    monkeypatch.setenv("OUR_INPUT_PRICE", price)
    result = run(pytester)
    result.assert_outcomes(errors=2)  # neither test passes: both are refused at set-up
    said = [line for line in result.stdout.lines if line.startswith("harness: harness_capture")]
    assert len(said) == 2 and all(
        "a price must be a finite number, not negative" in s for s in said
    )
