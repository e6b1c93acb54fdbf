"""`harness cost --format json` figures no other test reads whole: the totals over several
conversations (each the sum of the sessions'), the provider's recorded counters summed, the
agreement's bounds, a model nothing prices, the minimum's edge in the cost model's own
replay, and requests recorded out of time order.

Every figure is worked from the single requests' own sizes (`harness cost` on a session of that
one request), as in `tests/cost/test_cost.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import CHAT_URL, MARK, text_block
from tests.support.conversations import answer, conversation, cost, entry, size

SONNET = {"input": 3.0, "read": 0.30, "5m": 3.75, "output": 15.0}
SUMMED = (
    "requests",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "uncached_tokens",
)


def report(tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: list[str]) -> Any:
    paths = []
    for number, lines in enumerate(files):
        path = tmp_path / f"many{number}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    assert main(["cost", *paths, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def chat(turns: int) -> str:
    messages = [{"role": "system", "content": "Plan trips. " + "x" * 8000}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn}"})
    body = {"model": "gpt-5", "messages": messages}
    return json.dumps({"url": CHAT_URL, "body": body, "time": 30.0 * turns})


def test_the_totals_are_the_sums_of_the_conversations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2, 3)]
    first = [entry(b, 30.0 * i, response=answer(0, 0, 10)) for i, b in enumerate(bodies)]
    second = [entry(bodies[0], 0.0), chat(1), chat(2)]  # two endpoints: two conversations
    found = report(tmp_path, capsys, first, second)
    sessions, totals = found["sessions"], found["totals"]
    assert len(sessions) == totals["sessions"] == 3
    for key in SUMMED:
        assert totals[key] == sum(one[key] for one in sessions), key
    assert totals["cache_read_tokens"] > 0 and totals["cache_write_tokens"] > 0
    for key in ("usd", "usd_without_cache"):
        assert totals[key] == pytest.approx(sum(one[key] for one in sessions), abs=2e-6)
    assert 0 < totals["usd"] < totals["usd_without_cache"]
    read, whole = totals["cache_read_tokens"], totals["input_tokens"]
    assert totals["hit_rate"] == pytest.approx(read / whole, abs=1e-4)
    assert totals["hit_rate"] != pytest.approx(
        sum(one["hit_rate"] for one in sessions) / 3, abs=1e-3
    )  # not the mean of the rates


def test_the_recorded_counters_are_summed_over_the_requests_that_have_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2, 3)]
    one, two = (size(tmp_path, capsys, body) for body in bodies[:2])
    lines = [
        entry(bodies[0], 0.0, response=answer(0, one - 7, 7)),
        entry(bodies[1], 30.0, response=answer(one - 7, two - one + 2, 5, reason="ttl_expired")),
        entry(bodies[2], 60.0),  # no response: not counted
    ]
    recorded = cost(tmp_path, capsys, *lines)["recorded"]
    assert recorded == {
        "requests": 2,
        "input_tokens": one + two,
        "cache_read_tokens": one - 7,
        "cache_write_tokens": two - 5,
        "uncached_tokens": 12,
        "output_tokens": 200,
        "miss_reasons": ["ttl_expired"],
    }


def test_agreement_is_never_below_zero_and_one_when_neither_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(1), conversation(2), conversation(3, tools=("beta", "alpha", "gamma"))]
    one, two, three = (size(tmp_path, capsys, body) for body in bodies)
    # predicted: 2 reads `one`, 3 (its tools moved) nothing; recorded: 2 nothing, 3 `one`
    lines = [
        entry(bodies[0], 0.0, response=answer(0, one)),
        entry(bodies[1], 30.0, response=answer(0, two)),
        entry(bodies[2], 60.0, response=answer(one, three - one)),
    ]
    found = cost(tmp_path, capsys, *lines)
    assert found["cache_read_tokens"] == one
    assert found["recorded"]["cache_read_tokens"] == one
    # the errors add to 2 * one over a larger total of one: no agreement, not a negative one
    assert found["agreement"] == 0.0
    alone = cost(tmp_path, capsys, entry(bodies[0], 0.0, response=answer(0, one)))
    assert alone["agreement"] == 1.0  # neither read anything


def test_a_model_nothing_prices_costs_null_and_keeps_its_token_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns, model="claude-nonexistent-9") for turns in (1, 2)]
    found = cost(tmp_path, capsys, *(entry(b, 30.0 * i) for i, b in enumerate(bodies)))
    assert found["usd"] is None and found["usd_without_cache"] is None
    # Anthropic's breakpoints are billed as writes wherever a price is known: so counted here
    assert found["cache_write_tokens"] > 0 and found["cache_read_tokens"] > 0
    assert (
        found["cache_read_tokens"] + found["cache_write_tokens"] + found["uncached_tokens"]
        == (found["input_tokens"])
    )
    # OpenAI caches without a write fee: no write tokens, priced or not
    body = json.loads(chat(1))
    body["body"]["model"] = "gpt-nonexistent-9"
    unpriced = cost(tmp_path, capsys, json.dumps(body))
    assert unpriced["usd"] is None
    assert unpriced["cache_write_tokens"] == 0
    assert unpriced["uncached_tokens"] == unpriced["input_tokens"]


def marked_system(tokens: int) -> dict[str, Any]:
    """A Sonnet 4.5 request whose marked system block is exactly `tokens` tokens (1,024 is
    Sonnet 4.5's minimum), then a short unmarked question."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": [text_block(tokens, MARK)],
        "messages": [{"role": "user", "content": [text_block(20)]}],
    }


@pytest.mark.parametrize(("tokens", "written"), [(1024, 1024), (1023, 0)])
def test_the_cost_model_writes_a_prefix_from_the_minimum_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokens: int, written: int
) -> None:
    body = marked_system(tokens)
    found = cost(tmp_path, capsys, entry(body, 0.0), entry(body, 30.0))
    assert found["input_tokens"] == 2 * (tokens + 20)
    assert (found["cache_write_tokens"], found["cache_read_tokens"]) == (written, written)


def test_requests_are_replayed_in_the_order_they_were_sent_not_the_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2)]
    one, two = (size(tmp_path, capsys, body) for body in bodies)
    # the later turn is the file's first line; it was sent 30 s after the first turn
    found = cost(tmp_path, capsys, entry(bodies[1], 30.0), entry(bodies[0], 0.0))
    assert (found["cache_read_tokens"], found["cache_write_tokens"]) == (one, two)
    usd = (one * SONNET["read"] + two * SONNET["5m"]) / 1e6
    assert found["usd"] == pytest.approx(usd, abs=1e-6)


def test_one_request_without_a_time_makes_the_file_order_the_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2)]
    one = size(tmp_path, capsys, bodies[0])
    # the first line has a time, the second none: not every request is timed, file order holds
    found = cost(tmp_path, capsys, entry(bodies[0], 500.0), entry(bodies[1]))
    assert found["cache_read_tokens"] == one
