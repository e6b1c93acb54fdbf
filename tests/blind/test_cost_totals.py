"""Blind spots of the cost model (issue 35), through `harness cost --format json` on a session
`.jsonl`: a provider with no write fee, a rewrite after expiry read by the next request, the
agreement formula, `usd_without_cache` with output tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.conversations import answer, conversation, cost, entry, size

SONNET = {"input": 3.0, "read": 0.30, "5m": 3.75, "output": 15.0}
CHAT_URL = "https://api.openai.com/v1/chat/completions"


def chat(turns: int, at: str) -> str:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Plan trips. " + "x" * 8000}]
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        messages.append({"role": "user", "content": f"question {turn}"})
    body = {"model": "gpt-5", "messages": messages}
    return json.dumps({"url": CHAT_URL, "body": body, "time": at})


def test_a_provider_with_no_write_fee_bills_the_first_request_as_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = cost(tmp_path, capsys, chat(1, "2026-12-01T10:00:00Z"))
    # GPT-5 has no write fee (nor DeepSeek, Gemini): no write, the first request is all input
    assert first["cache_write_tokens"] == 0
    assert first["uncached_tokens"] == first["input_tokens"] > 2000
    assert first["usd"] == first["usd_without_cache"] > 0
    both = cost(tmp_path, capsys, chat(1, "2026-12-01T10:00:00Z"), chat(2, "2026-12-01T10:00:30Z"))
    assert both["cache_write_tokens"] == 0
    assert both["cache_read_tokens"] > 2000  # the second reads the first's prefix
    assert both["cache_read_tokens"] + both["uncached_tokens"] == both["input_tokens"]
    assert 0 < both["usd"] < both["usd_without_cache"]


def test_a_rewrite_after_expiry_is_read_by_the_next_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = conversation(1)
    one = size(tmp_path, capsys, body)
    # 0 s writes; 400 s: expired (5 minutes), written again; 430 s reads the new entry
    found = cost(tmp_path, capsys, entry(body, 0.0), entry(body, 400.0), entry(body, 430.0))
    assert (found["cache_write_tokens"], found["cache_read_tokens"]) == (2 * one, one)
    assert found["uncached_tokens"] == 0


def test_agreement_is_one_minus_the_read_error_over_the_larger_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2)]
    one, two = (size(tmp_path, capsys, body) for body in bodies)
    half = one // 2
    lines = [
        entry(bodies[0], 0.0, response=answer(0, one)),
        entry(bodies[1], 30.0, response=answer(half, two - half)),
    ]
    found = cost(tmp_path, capsys, *lines)
    assert found["cache_read_tokens"] == one  # predicted: request 2 reads all of request 1
    assert found["recorded"]["cache_read_tokens"] == half
    assert found["agreement"] == pytest.approx(round(1 - (one - half) / one, 4), abs=1e-4)
    # near miss: the provider read what the model predicts
    lines[1] = entry(bodies[1], 30.0, response=answer(one, two - one))
    assert cost(tmp_path, capsys, *lines)["agreement"] == 1.0


def test_usd_and_usd_without_cache_count_the_recorded_output_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2)]
    one, two = (size(tmp_path, capsys, body) for body in bodies)
    lines = [
        entry(bodies[0], 0.0, response=answer(0, one)),
        entry(bodies[1], 30.0, response=answer(one, two - one)),
    ]
    found = cost(tmp_path, capsys, *lines)
    output = 200 * SONNET["output"]  # 100 output tokens a response
    assert found["recorded"]["output_tokens"] == 200
    without = ((one + two) * SONNET["input"] + output) / 1e6
    assert found["usd_without_cache"] == pytest.approx(without, abs=1e-6)
    usd = (one * SONNET["read"] + two * SONNET["5m"] + output) / 1e6
    assert found["usd"] == pytest.approx(usd, abs=1e-6)


def test_agreement_adds_errors_that_go_both_ways(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One request read less than predicted, the next more: the errors add, never cancel."""
    bodies = [conversation(turns) for turns in (1, 2, 3)]
    one, two, three = (size(tmp_path, capsys, body) for body in bodies)
    d = 100
    lines = [
        entry(bodies[0], 0.0, response=answer(0, one)),
        entry(bodies[1], 30.0, response=answer(one - d, two - one + d)),
        entry(bodies[2], 60.0, response=answer(two + d, three - two - d)),
    ]
    found = cost(tmp_path, capsys, *lines)
    assert found["cache_read_tokens"] == one + two
    assert found["recorded"]["cache_read_tokens"] == one + two
    assert found["agreement"] == pytest.approx(round(1 - 2 * d / (one + two), 4), abs=1e-4)
