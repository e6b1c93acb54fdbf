"""`harness cost` on hand-worked sessions: write then reads, a TTL gap, a concurrent pair, a
below-minimum prefix, a moved tool; agreement with recorded counters that agree and that do not;
`--model`, a project's negotiated price, bad input.

Every figure is worked from the single requests' own input tokens (`harness cost` on a session of
that one request: nothing to read, so its input is its size), so a test states the arithmetic the
provider bills: request 2 reads what request 1 wrote, and so on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.support.conversations import (
    COST_KEYS,
    PRICES_CHECKED,
    REGISTRY,
    answer,
    conversation,
    cost,
    entry,
    size,
)

SONNET = {"input": 3.0, "read": 0.30, "5m": 3.75, "1h": 6.0}


def usd(read: int, written: int, uncached: int, ttl: str = "5m") -> float:
    return (read * SONNET["read"] + written * SONNET[ttl] + uncached * SONNET["input"]) / 1e6


def test_write_then_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bodies = [conversation(turns) for turns in (1, 2, 3)]
    one, two, three = (size(tmp_path, capsys, body) for body in bodies)
    found = cost(tmp_path, capsys, *(entry(b, 30.0 * i) for i, b in enumerate(bodies)))
    assert set(found) == COST_KEYS
    assert found["requests"] == 3
    assert found["input_tokens"] == one + two + three
    assert found["cache_read_tokens"] == one + two  # each turn reads the one before
    assert found["cache_write_tokens"] == three  # one, then two - one, then three - two
    assert found["uncached_tokens"] == 0
    assert found["hit_rate"] == pytest.approx((one + two) / (one + two + three), abs=1e-4)
    assert found["usd"] == pytest.approx(usd(one + two, three, 0), abs=1e-6)
    assert found["usd_without_cache"] == pytest.approx((one + two + three) * 3.0 / 1e6, abs=1e-6)
    assert found["recorded"] is None and found["agreement"] is None
    assert found["prices_checked_on"] == PRICES_CHECKED
    assert found["usd"] < found["usd_without_cache"]


def test_a_gap_longer_than_the_ttl_pays_the_write_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2, 3)]
    one, two, three = (size(tmp_path, capsys, body) for body in bodies)
    # request 2 ends at 35 s: its entry lives until 335 s; request 3 starts at 400 s
    late = cost(tmp_path, capsys, entry(bodies[0], 0), entry(bodies[1], 30), entry(bodies[2], 400))
    assert late["cache_read_tokens"] == one
    assert late["cache_write_tokens"] == two + three
    # the near miss: request 3 starts at 330 s, within the 5 minutes
    near = cost(tmp_path, capsys, entry(bodies[0], 0), entry(bodies[1], 30), entry(bodies[2], 330))
    assert near["cache_read_tokens"] == one + two
    # a 1h entry outlives the same gap
    hour = [conversation(turns, ttl="1h") for turns in (1, 2, 3)]
    kept = cost(tmp_path, capsys, entry(hour[0], 0), entry(hour[1], 30), entry(hour[2], 400))
    assert kept["cache_read_tokens"] == one + two
    assert kept["usd"] == pytest.approx(usd(one + two, three, 0, "1h"), abs=1e-6)


def test_a_read_refreshes_the_ttl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = conversation(1)
    again = conversation(1)
    one = size(tmp_path, capsys, first)
    # written at 5 s (expires 305 s), read at 250 s (now expires 550 s), read again at 500 s
    found = cost(tmp_path, capsys, entry(first, 0), entry(again, 250), entry(again, 500))
    assert found["cache_read_tokens"] == 2 * one


def test_a_concurrent_pair_cannot_read_each_others_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = conversation(1), conversation(2)
    one, two = size(tmp_path, capsys, a), size(tmp_path, capsys, b)
    together = cost(tmp_path, capsys, entry(a, 0, 10), entry(b, 2, 12))
    assert together["cache_read_tokens"] == 0
    assert together["cache_write_tokens"] == one + two
    after = cost(tmp_path, capsys, entry(a, 0, 10), entry(b, 10, 20))
    assert after["cache_read_tokens"] == one
    assert after["cache_write_tokens"] == two


def test_a_prefix_below_the_minimum_writes_nothing_and_another_model_caches_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ~2,600 tokens: under Haiku 4.5's 4,096, over Sonnet 4.5's 1,024
    bodies = [conversation(turns, model="claude-haiku-4-5") for turns in (1, 2)]
    below = cost(tmp_path, capsys, *(entry(b, 30.0 * i) for i, b in enumerate(bodies)))
    assert 1024 < below["input_tokens"] // 2 < 4096
    assert below["cache_read_tokens"] == below["cache_write_tokens"] == 0
    assert below["uncached_tokens"] == below["input_tokens"]
    assert below["usd"] == pytest.approx(below["input_tokens"] * 1.0 / 1e6, abs=1e-6)
    lines = [entry(b, 30.0 * i) for i, b in enumerate(bodies)]
    sonnet = cost(tmp_path, capsys, *lines, args=("--model", "claude-sonnet-4-5"))
    assert sonnet["model"] == "claude-sonnet-4-5"
    assert sonnet["cache_read_tokens"] > 0
    assert sonnet["input_tokens"] == below["input_tokens"]


def test_a_moved_tool_reads_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = conversation(1)
    moved = conversation(2, tools=("beta", "alpha", "gamma"))
    kept = conversation(2)
    one, two = size(tmp_path, capsys, first), size(tmp_path, capsys, moved)
    broken = cost(tmp_path, capsys, entry(first, 0), entry(moved, 30))
    assert broken["cache_read_tokens"] == 0
    assert broken["cache_write_tokens"] == one + two
    near = cost(tmp_path, capsys, entry(first, 0), entry(kept, 30))
    assert near["cache_read_tokens"] == one


def test_agreement_with_counters_that_agree_and_that_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = conversation(1), conversation(2)
    one, two = size(tmp_path, capsys, first), size(tmp_path, capsys, second)
    agree = cost(
        tmp_path,
        capsys,
        entry(first, 0, response=answer(0, one)),
        entry(second, 30, response=answer(one, two - one)),
    )
    assert agree["agreement"] >= 0.99
    assert agree["recorded"] == {
        "requests": 2,
        "input_tokens": one + two,
        "cache_read_tokens": one,
        "cache_write_tokens": two,
        "uncached_tokens": 0,
        "output_tokens": 200,
        "miss_reasons": [],
    }
    # the provider read nothing where the harness predicts a read of `one` tokens
    disagree = cost(
        tmp_path,
        capsys,
        entry(first, 0, response=answer(0, one)),
        entry(second, 30, response=answer(0, two, reason="tools_changed")),
    )
    assert disagree["agreement"] == 0.0
    assert disagree["recorded"]["miss_reasons"] == ["tools_changed"]
    # output tokens are priced: 200 at $15 a million
    assert agree["usd"] == pytest.approx(usd(one, two, 0) + 200 * 15.0 / 1e6, rel=1e-3)


def test_a_negotiated_price_overrides_the_list_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = conversation(1)
    listed = cost(tmp_path, capsys, entry(body, 0))
    rate = {
        "providers": ["anthropic"],
        "models": ["claude-sonnet-4-5*"],
        "effective_from": "2026-01-01",
        "input": 1.5,
        "output": 7.5,
        "cache_read": 0.15,
        "cache_write": {"5m": 1.875, "1h": 3.0},
        "source": "our contract",
        "checked_on": "2026-11-30",
    }
    prices = tmp_path / "harness-prices.json"
    prices.write_text(json.dumps({"kind": "harness/prices", "format": 1, "rows": [rate]}))
    monkeypatch.chdir(tmp_path)
    negotiated = cost(tmp_path, capsys, entry(body, 0))
    assert negotiated["usd"] == pytest.approx(listed["usd"] / 2, abs=1e-6)
    assert negotiated["prices_checked_on"] == "2026-11-30"


def test_prices_take_effect_on_their_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPT-5.6 Sol's input fell from $5 to $4 on 2026-08-21: a recording's date picks the price
    in force."""
    body = {"model": "gpt-5.6", "messages": [{"role": "user", "content": "x" * 8000}]}
    url = "https://api.openai.com/v1/chat/completions"
    lines = [
        json.dumps({"url": url, "body": body, "time": f"2026-08-{day}T10:00:0{i}Z"})
        for i in range(2)
        for day in ["20"]
    ]
    before = cost(tmp_path, capsys, *lines)
    after = cost(tmp_path, capsys, *(line.replace("2026-08-20", "2026-08-21") for line in lines))
    assert before["cache_read_tokens"] == after["cache_read_tokens"] > 0
    assert after["usd"] == pytest.approx(before["usd"] * 4 / 5, abs=2e-6)


def test_text_output_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(entry(conversation(1), 0) + "\n" + entry(conversation(2), 30) + "\n")
    assert main(["cost", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"at claude-sonnet-4-5 list price, prices checked {PRICES_CHECKED} ({REGISTRY})" in out
    assert "tokens: bytes / 4, about ±25%" in out
    assert "harness cost: 1 conversation(s), 2 request(s)" in out
    bad = tmp_path / "harness-prices.json"
    bad.write_text(json.dumps({"kind": "harness/prices", "format": 1, "rows": [{"input": 1}]}))
    assert main(["cost", str(path), "--prices", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "harness-prices.json" in err and "source" in err


def test_harness_capture_config_takes_price_rows() -> None:
    from harness._shared._errors import UsageError
    from harness.capture import CaptureConfig

    row = {
        "providers": ["anthropic"],
        "models": ["claude-sonnet-4-5*"],
        "effective_from": "2026-01-01",
        "input": 1.5,
        "output": 7.5,
        "cache_read": 0.15,
        "source": "our contract",
        "checked_on": "2026-11-30",
    }
    config = CaptureConfig.of({"prices": [row]})
    assert [price.input for price in config.prices] == [1.5]
    with pytest.raises(UsageError, match="harness_capture_config: prices takes a prices file"):
        CaptureConfig.of({"prices": [{"input": 1}]})
