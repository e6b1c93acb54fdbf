"""Blind spots of the cost model and the rules (issue 35): two breakpoints in one request, the
TTL order 1h/5m/1h, a session's totals, through `harness cost` and `harness lint` as a user
runs them on a session `.jsonl`.

Every figure is worked from the single requests' own sizes (`harness cost` on a session of that
one request), so each test states the arithmetic the provider bills.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, MARK, line, text_block
from tests.support.conversations import conversation, cost, entry, size

SONNET = {"input": 3.0, "read": 0.30, "5m": 3.75, "1h": 6.0}


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], *bodies: Any) -> list[Any]:
    path = tmp_path / "lint.jsonl"
    path.write_text("\n".join(line(b, ANTHROPIC_URL) for b in bodies) + "\n", encoding="utf-8")
    main(["lint", str(path), "--format", "json"])
    return [
        (f["rule"], f["severity"], f["request"])
        for f in json.loads(capsys.readouterr().out)["findings"]
    ]


def two_marks(turns: int) -> dict[str, Any]:
    """A conversation marked twice: at the system block and at the last user block."""
    body = conversation(turns)
    body["system"][0]["cache_control"] = MARK
    return body


def test_two_breakpoints_read_the_longest_and_write_each_token_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [two_marks(turns) for turns in (1, 2, 3)]
    one, two, three = (size(tmp_path, capsys, body) for body in bodies)
    found = cost(tmp_path, capsys, *(entry(b, 30.0 * i) for i, b in enumerate(bodies)))
    # request 1 writes the system entry, then the rest up to the conversation's: `one` in all;
    # request 2 reads all of request 1 (the conversation's breakpoint, not the system's), and so on
    assert found["cache_read_tokens"] == one + two
    assert found["cache_write_tokens"] == three
    assert found["uncached_tokens"] == 0
    assert found["input_tokens"] == one + two + three
    usd = ((one + two) * SONNET["read"] + three * SONNET["5m"]) / 1e6
    assert found["usd"] == pytest.approx(usd, abs=1e-6)
    assert found["usd_without_cache"] == pytest.approx((one + two + three) * 3.0 / 1e6, abs=1e-6)


def test_a_session_total_is_the_sum_of_its_requests_with_a_1h_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns, ttl="1h") for turns in (1, 2)]
    one, two = (size(tmp_path, capsys, body) for body in bodies)
    found = cost(tmp_path, capsys, entry(bodies[0], 0.0), entry(bodies[1], 600.0))
    # ten minutes apart: a 5-minute entry would have expired, the hour's is read
    assert (found["cache_read_tokens"], found["cache_write_tokens"]) == (one, two)
    assert found["usd"] == pytest.approx(
        (one * SONNET["read"] + two * SONNET["1h"]) / 1e6, abs=1e-6
    )


def test_a_small_marked_tool_list_before_a_large_marked_system_is_not_below_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = conversation(1, tools=("alpha",), system_tokens=3000)
    body["messages"][0]["content"][0].pop("cache_control")
    body["tools"][0]["cache_control"] = MARK  # 300 tokens: below Sonnet's 1024 alone
    body["system"][0]["cache_control"] = MARK  # 3300 with the tools: cached
    assert lint(tmp_path, capsys, body) == []
    found = cost(tmp_path, capsys, entry(body))
    assert found["cache_write_tokens"] > 3000
    # near miss: the tool list alone marked is below the minimum
    small = copy.deepcopy(body)
    small["system"][0].pop("cache_control")
    assert ("below-minimum", "warning", 0) in lint(tmp_path, capsys, small)


def test_a_marked_block_not_last_of_its_message_is_read_by_the_next_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = conversation(1)
    first["messages"][0]["content"][0].pop("cache_control")
    first["messages"][0]["content"] = [text_block(1500, MARK), text_block(50)]
    second = copy.deepcopy(first)
    second["messages"] += [
        {"role": "assistant", "content": [text_block(100)]},
        {"role": "user", "content": [text_block(60, MARK)]},
    ]
    assert lint(tmp_path, capsys, first, second) == []
    head = copy.deepcopy(first)
    head["messages"][0]["content"].pop()  # the request up to the marked block
    found = cost(tmp_path, capsys, entry(first, 0.0), entry(second, 30.0))
    # the second turn reads the first's entry: up to the marked block, not the block after it
    assert found["cache_read_tokens"] == size(tmp_path, capsys, head)


def test_ttl_order_1h_5m_1h_is_refused_and_1h_1h_5m_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hour = {**MARK, "ttl": "1h"}

    def marked(*ttls: dict[str, Any]) -> dict[str, Any]:
        body = conversation(1)
        body["messages"][0]["content"][0].pop("cache_control")
        body["tools"][-1]["cache_control"] = ttls[0]
        body["system"][0]["cache_control"] = ttls[1]
        body["messages"][0]["content"][0]["cache_control"] = ttls[2]
        return body

    rules = [rule for rule, _, _ in lint(tmp_path, capsys, marked(hour, MARK, hour))]
    assert "ttl-order" in rules
    assert lint(tmp_path, capsys, marked(hour, hour, MARK)) == []
