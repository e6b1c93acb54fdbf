"""Prices from genai-prices (issue 30, item 5) through `harness cost --format json` and the
Python API: the late-2026 list prices the old hand-kept pack had wrong or missing (Sonnet 5 at
$2, Opus 5.5's $0.20 read, Haiku 5.5, GPT-5.6 Sol by its `gpt-5.6` alias), OpenAI's 12-hour write
at twice the 30-minute one (the pack's row: genai-prices lacks it), long-context tiers by the
request's size, DeepSeek's peak and off-peak by the request's recorded time (weekends off-peak:
the pack's row), where each price came from (`prices`), no network, and rows a budget could not
fail on (negative, NaN, infinite: issue 32) refused in one line.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.conversations import PRICES_CHECKED, REGISTRY, conversation, entry

VERSION = REGISTRY.split()[-1]
CHAT_URL = "https://api.openai.com/v1/chat/completions"
DEEPSEEK_URL = "https://api.deepseek.com/chat/completions"


def report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str, args: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`harness cost --format json` on a session of `lines`."""
    path = tmp_path / f"session{len(list(tmp_path.glob('*.jsonl')))}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["cost", str(path), "--format", "json", *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    found: dict[str, Any] = json.loads(captured.out)
    assert len(found["sessions"]) == len(found["prices"]) == 1
    return found


def rate(one: dict[str, Any]) -> float:
    """USD per million input tokens of a conversation priced without its cache (to 4 figures:
    the JSON's dollars are rounded to the millionth)."""
    return float(f"{one['usd_without_cache'] / one['input_tokens'] * 1e6:.4g}")


def test_claude_5_prices_come_from_genai_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sonnet = report(tmp_path, capsys, entry(conversation(1, model="claude-sonnet-5"), 0))
    (one,), (prices,) = sonnet["sessions"], sonnet["prices"]
    assert rate(one) == 2.0  # not the $3 of Sonnet 4.x
    assert (prices["input"], prices["output"], prices["cache_read"]) == (2.0, 10.0, 0.2)
    assert prices["cache_write"] == {"5m": 2.5, "1h": 4.0}
    (source,) = prices["sources"]
    assert source["source"] == "genai-prices" and source["version"] == VERSION
    assert source["model"] == "claude-sonnet-5" and source["checked_on"] == PRICES_CHECKED
    assert one["prices_checked_on"] == PRICES_CHECKED
    # Opus 5.5: $4 input, reads at $0.20 (0.05x), its 5-minute write at $5
    bodies = [conversation(turns, model="claude-opus-5-5") for turns in (1, 2)]
    opus = report(tmp_path, capsys, *(entry(b, 30.0 * i) for i, b in enumerate(bodies)))
    (one,) = opus["sessions"]
    assert one["cache_read_tokens"] > 0 and one["cache_write_tokens"] > 0
    expected = (one["cache_read_tokens"] * 0.2 + one["cache_write_tokens"] * 5.0) / 1e6
    assert one["usd"] == pytest.approx(expected + one["uncached_tokens"] * 4.0 / 1e6, abs=2e-6)
    # Haiku 5.5: the old pack had no row, so it had no price
    haiku = report(tmp_path, capsys, entry(conversation(1, model="claude-haiku-5-5"), 0))
    assert rate(haiku["sessions"][0]) == 0.1


def test_a_dated_id_and_an_alias_price_as_their_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dated = report(tmp_path, capsys, entry(conversation(1, model="claude-sonnet-5-20260301"), 0))
    assert dated["prices"][0]["sources"][0]["model"] == "claude-sonnet-5"
    body = {"model": "gpt-5.6", "messages": [{"role": "user", "content": "x" * 8000}]}
    line = json.dumps({"url": CHAT_URL, "body": body, "time": "2026-12-01T10:00:00Z"})
    sol = report(tmp_path, capsys, line)
    prices = sol["prices"][0]
    assert prices["sources"][-1]["model"] == "gpt-5.6-sol"
    assert (prices["input"], prices["cache_read"], prices["cache_write"]["30m"]) == (4.0, 0.4, 5.0)
    assert rate(sol["sessions"][0]) == 4.0


def openai_turn(ttl: str | None) -> dict[str, Any]:
    mark = {"mode": "explicit", **({"ttl": ttl} if ttl else {})}
    text = {"type": "text", "text": "rule " * 1500, "prompt_cache_breakpoint": mark}
    return {
        "model": "gpt-5.6",
        "messages": [{"role": "system", "content": [text]}, {"role": "user", "content": "hi"}],
        "prompt_cache_options": {"mode": "explicit"},
    }


def test_a_12_hour_write_costs_twice_the_30_minute_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def one(ttl: str | None) -> dict[str, Any]:
        line = json.dumps({"url": CHAT_URL, "body": openai_turn(ttl), "time": "2026-12-01T10:00Z"})
        return report(tmp_path, capsys, line)

    half, twelve = one("30m"), one("12h")
    written = twelve["sessions"][0]["cache_write_tokens"]
    assert written == half["sessions"][0]["cache_write_tokens"] > 0
    extra = twelve["sessions"][0]["usd"] - half["sessions"][0]["usd"]
    assert extra == pytest.approx(written * (10.0 - 5.0) / 1e6, abs=2e-6)
    prices = twelve["prices"][0]
    assert prices["cache_write"] == {"30m": 5.0, "12h": 10.0}
    pack = [s for s in prices["sources"] if s["gave"] == ["cache_write 12h"]]
    assert [s["source"] for s in pack] == ["assumption"] and pack[0]["quote"]
    assert "cache_write 12h" not in prices["sources"][-1]["gave"]  # genai-prices lacks it


def test_gpt_6_2_sol_12_hour_write_is_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {**openai_turn("12h"), "model": "gpt-6.2-sol"}
    line = json.dumps({"url": CHAT_URL, "body": body, "time": "2026-12-01T10:00Z"})
    prices = report(tmp_path, capsys, line)["prices"][0]
    assert prices["cache_write"] == {"30m": 2.5, "12h": 5.0}
    (page,) = [s for s in prices["sources"] if s["gave"] == ["cache_write 12h"]]
    assert page["source"] == "https://developers.openai.com/api/docs/models/gpt-6.2-sol"
    assert "A 12-hour cache write costs $5 per million tokens" in page["quote"]


def haiku_of(tokens: int) -> str:
    """A Claude Haiku 5.5 request of about `tokens` input tokens (JSON bytes / 4)."""
    body = {
        "model": "claude-haiku-5-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "w" * (tokens * 4 - 100)}],
    }
    return entry(body, 0)


@pytest.mark.parametrize(("tokens", "price"), [(99_000, 0.1), (101_000, 0.5)])
def test_a_long_prompt_pays_the_tier_for_all_its_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokens: int, price: float
) -> None:
    found = report(tmp_path, capsys, haiku_of(tokens))
    (one,), (prices,) = found["sessions"], found["prices"]
    assert (one["input_tokens"] > 100_000) == (tokens > 100_000)
    assert rate(one) == price
    over = {"the price over 100,000 input tokens": 1} if price == 0.5 else {}
    assert prices["applied"] == over


def deepseek(at: str | None, model: str = "deepseek-flash") -> str:
    body = {"model": model, "messages": [{"role": "user", "content": "x" * 8000}]}
    value: dict[str, Any] = {"url": DEEPSEEK_URL, "body": body}
    if at is not None:
        value["time"] = at
    return json.dumps(value)


@pytest.mark.parametrize(
    ("at", "price", "applied"),
    [
        ("2026-12-03T02:00:00Z", 0.3, "the 01:00-04:00 UTC price"),  # Thursday, peak
        ("2026-12-03T03:59:59Z", 0.3, "the 01:00-04:00 UTC price"),
        ("2026-12-03T04:00:00Z", 0.15, None),  # the window's end: off-peak
        ("2026-12-03T12:00:00Z", 0.15, None),
        ("2026-12-05T02:00:00Z", 0.15, "the sat/sun price"),  # Saturday: off-peak all day
    ],
)
def test_deepseek_peak_and_off_peak_follow_the_recorded_time(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    at: str | None,
    price: float,
    applied: str | None,
) -> None:
    found = report(tmp_path, capsys, deepseek(at))
    assert rate(found["sessions"][0]) == price
    assert found["prices"][0]["applied"] == ({applied: 1} if applied else {})
    if applied == "the sat/sun price":
        (source,) = found["prices"][0]["sources"]
        assert source["source"].startswith("https://api-docs.deepseek.com/")
        assert source["quote"] and source["checked_on"] == "2026-12-05"


def test_each_request_pays_its_own_hour(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A conversation across the end of a peak window: the first request at peak, the second
    off-peak (its read at $0.003, not $0.006)."""
    found = report(
        tmp_path, capsys, deepseek("2026-12-03T03:59:00Z"), deepseek("2026-12-03T04:01:00Z")
    )
    (one,) = found["sessions"]
    assert one["cache_read_tokens"] > 0
    first = one["input_tokens"] - one["cache_read_tokens"]  # the first request, all a miss
    second = one["input_tokens"] - first
    assert one["usd"] == pytest.approx((first * 0.3 + second * 0.003) / 1e6, abs=2e-6)
    assert found["prices"][0]["applied"] == {"the 01:00-04:00 UTC price": 1}


def test_an_unknown_model_has_no_price_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = report(tmp_path, capsys, entry(conversation(1, model="claude-nonexistent-9"), 0))
    assert found["sessions"][0]["usd"] is None
    assert found["prices"][0]["sources"] == [] and found["prices"][0]["input"] is None
    path = tmp_path / "s.jsonl"
    path.write_text(entry(conversation(1, model="claude-nonexistent-9"), 0) + "\n")
    assert main(["cost", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no price for claude-nonexistent-9 (anthropic) in genai-prices or the price pack" in out
    assert main(["cost", str(path), "--model", "gpt-nonexistent-1"]) == 2
    (said,) = capsys.readouterr().err.strip().splitlines()
    assert f"neither {REGISTRY} nor the price pack prices it" in said
    assert "harness-prices.json" in said


def test_the_text_names_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(deepseek("2026-12-05T02:00:00Z") + "\n")
    assert main(["cost", str(path)]) == 0
    out = capsys.readouterr().out
    assert "at deepseek-flash list price, prices checked 2026-12-05 (the price pack (" in out
    assert "the sat/sun price on 1 of 1 request(s)" in out


def test_a_project_row_overrides_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {  # a negotiated 12-hour write: a supplement, the rest from genai-prices
            "providers": ["openai-chat"],
            "models": ["gpt-5.6*"],
            "effective_from": "2026-01-01",
            "cache_write": {"12h": 6.0},
            "source": "our contract",
            "checked_on": "2026-11-30",
        }
    ]
    prices = tmp_path / "ours.json"
    prices.write_text(json.dumps({"kind": "harness/prices", "format": 1, "rows": rows}))
    line = json.dumps({"url": CHAT_URL, "body": openai_turn("12h"), "time": "2026-12-01T10:00Z"})
    found = report(tmp_path, capsys, line, args=("--prices", str(prices)))
    used = found["prices"][0]
    assert used["cache_write"] == {"12h": 6.0, "30m": 5.0}
    assert [s["source"] for s in used["sources"]] == ["our contract", "genai-prices"]
    assert found["sessions"][0]["prices_checked_on"] == PRICES_CHECKED  # the latest date


@pytest.mark.parametrize(
    ("field", "value", "written"),
    [
        ("input", -1.0, "-1.0"),
        ("cache_read", float("nan"), "NaN"),
        ("output", float("inf"), "Infinity"),
        ("output", 1e999, "1e999"),
    ],
)
def test_a_price_a_budget_cannot_fail_on_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float, written: str
) -> None:
    row: dict[str, Any] = {
        "providers": ["anthropic"],
        "effective_from": "2026-01-01",
        "input": 1.0,
        "output": 5.0,
        "cache_read": 0.1,
        "source": "ours",
        "checked_on": "2026-11-30",
    }
    text = json.dumps({"kind": "harness/prices", "format": 1, "rows": [row]})
    text = text.replace(f'"{field}": {json.dumps(row[field])}', f'"{field}": {written}')
    bad = tmp_path / "harness-prices.json"
    bad.write_text(text)
    session = tmp_path / "s.jsonl"
    session.write_text(entry(conversation(1), 0) + "\n")
    assert main(["cost", str(session), "--prices", str(bad)]) == 2
    (said,) = capsys.readouterr().err.strip().splitlines()
    assert "harness-prices.json" in said
    # the same row as Python values (harness_capture_config's `prices`) is refused too
    from harness._shared._errors import UsageError
    from harness.capture import CaptureConfig

    with pytest.raises(UsageError, match="finite number, not negative") as caught:
        CaptureConfig.of({"prices": [{**row, field: value}]})
    assert len(str(caught.value).splitlines()) == 1
    # a supplement's multiple too
    derived = {**row, "cache_write_as": {"12h": {"of": "input", "times": value}}}
    with pytest.raises(UsageError, match="finite number, not negative"):
        CaptureConfig.of({"prices": [derived]})


def test_the_shipped_pack_keeps_only_quoted_dated_rows() -> None:
    from harness.cost._prices import price_rows

    rows = price_rows()
    assert rows, "the pack holds OpenAI's 12-hour write and DeepSeek's weekend rows"
    for row in rows:
        assert row.source and row.quote and row.checked_on <= datetime.date(2026, 12, 5)
        assert row.source == "assumption" or row.source.startswith("https://")
        if row.source == "assumption":
            assert row.note, "an assumption says why"


def test_no_network_and_not_the_fetched_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An application's `UpdatePrices` (Logfire's, say) replaced genai-prices' process-wide
    snapshot with fetched prices: the harness still prices from the bundled data, and nothing
    of genai-prices' updater runs."""
    import genai_prices.update_prices
    from genai_prices import data_snapshot

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("genai-prices tried to fetch")

    monkeypatch.setattr(genai_prices.update_prices.UpdatePrices, "start", refuse)
    monkeypatch.setattr(genai_prices.update_prices.UpdatePrices, "fetch", refuse)
    monkeypatch.setattr(genai_prices.update_prices.httpx2, "get", refuse)
    fetched = data_snapshot.DataSnapshot(providers=[], from_auto_update=True)
    monkeypatch.setattr(data_snapshot, "_custom_snapshot", fetched)
    found = report(tmp_path, capsys, entry(conversation(1, model="claude-sonnet-5"), 0))
    assert rate(found["sessions"][0]) == 2.0


def test_the_python_api_prices_a_request() -> None:
    from harness.cost._prices import price_for

    at = datetime.datetime(2026, 12, 3, 2, tzinfo=datetime.UTC)
    peak = price_for("deepseek", "deepseek-v4-pro", at=at)
    off = price_for("deepseek", "deepseek-v4-pro", at=at.replace(hour=11))
    assert peak is not None and off is not None
    assert (peak.input, peak.cache_read, peak.output) == (1.32, 0.044, 3.96)
    assert (off.input, off.cache_read, off.output) == (0.66, 0.022, 1.98)
    assert peak.write("") is None  # DeepSeek charges no write fee
    long = price_for("openai-responses", "gpt-5.6-sol", at=at, input_tokens=272_001)
    short = price_for("openai-responses", "gpt-5.6-sol", at=at, input_tokens=272_000)
    assert long is not None and short is not None
    assert (short.input, long.input) == (4.0, 8.0)
    assert (short.write("12h"), long.write("12h")) == (10.0, 20.0)
    assert price_for("anthropic", "claude-nonexistent-9", at=at) is None
    # Bedrock: the AWS table for its own ids (regional ids +10%), Anthropic's for a bare Claude id
    regional = price_for("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", at=at)
    bare = price_for("bedrock", "claude-sonnet-4-5", at=at)
    assert regional is not None and bare is not None
    assert (regional.input, regional.sources[-1].provider) == (3.3, "aws")
    assert (bare.input, bare.sources[-1].provider) == (3.0, "anthropic")
    # no time of day recorded: the day's highest price, so a budget can only fail early
    thursday = price_for("deepseek", "deepseek-flash", datetime.date(2026, 12, 3))
    saturday = price_for("deepseek", "deepseek-flash", datetime.date(2026, 12, 5))
    assert thursday is not None and saturday is not None
    assert (thursday.input, saturday.input) == (0.3, 0.15)
    assert thursday.applied == ("the day's highest price (the time of day is not recorded)",)
