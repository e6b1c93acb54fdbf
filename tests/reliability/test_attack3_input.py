"""Issue 32's third round, bad input: each of these was a traceback with exit 1 (the drift code),
or a number taken as it came; now each is one line and exit 2, or read correctly.

- a session line's `time` in epoch milliseconds (what many proxy logs write) is read by its size,
  as `harness scan` reads trace times (decided: accepted, not refused; `harness.cache._timing`):
  the same conversation costs the same in seconds, milliseconds, microseconds, nanoseconds and
  ISO 8601; a time out of range (`1e308`, negative) is one line naming the file and the line;
- a cassette's `base64` body that does not decode (bad padding) is one line naming the place;
- a rules row with a negative lookback, minimum, breakpoint limit, or a TTL the cost model cannot
  read, is refused in one line (a project's `--rules` file, `harness-rules.json`);
- a price row's tier threshold may not be negative either (negative, NaN and infinite prices
  were refused already: kept here as the near misses' other side).
"""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import Cli, one_line
from tests.support.paths import EXAMPLES

MESSAGES = "https://api.anthropic.com/v1/messages"
START = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)


def body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if messages:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        messages.append({"role": "user", "content": f"question {turn}"})
    system = [{"type": "text", "text": "rule " * 2500, "cache_control": {"type": "ephemeral"}}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": system, "messages": messages}


def session(path: Path, times: list[Any]) -> Path:
    lines = [
        json.dumps({"url": MESSAGES, "body": body(turn + 1), "time": time})
        for turn, time in enumerate(times)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def offsets(gap_seconds: float) -> list[float]:
    """Three requests `gap_seconds` apart, from START, in seconds since the epoch."""
    first = START.timestamp()
    return [first + step * gap_seconds for step in range(3)]


def costs(cli: Cli, path: Path) -> Any:
    code, out, err = cli("cost", str(path), "--format", "json")
    assert (code, err) == (0, ""), out + err
    return json.loads(out)["sessions"]


# -- a session's time ------------------------------------------------------------------------------

SCALES = {"milliseconds": 1e3, "microseconds": 1e6, "nanoseconds": 1e9}


@pytest.mark.parametrize("unit", SCALES)
@pytest.mark.parametrize("gap", [60.0, 400.0])  # within the 5-minute TTL, and past it
def test_a_unix_time_in_a_smaller_unit_costs_what_it_costs_in_seconds(
    tmp_path: Path, cli: Cli, unit: str, gap: float
) -> None:
    seconds = offsets(gap)
    expected = costs(cli, session(tmp_path / "seconds.jsonl", seconds))
    scaled = [int(time * SCALES[unit]) for time in seconds]
    found = costs(cli, session(tmp_path / f"{unit}.jsonl", scaled))
    for one in (*expected, *found):
        one["file"] = "-"
    assert found == expected
    iso = [datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat() for t in seconds]
    assert costs(cli, session(tmp_path / "iso.jsonl", iso)) == [
        {**one, "file": str(tmp_path / "iso.jsonl")} for one in expected
    ]
    # the gap decides: within the TTL the later requests read the cache, past it they do not
    read = expected[0]["cache_read_tokens"]
    assert (read > 0) if gap < 300 else (read == 0)


@pytest.mark.parametrize(
    ("time", "said"),
    [
        (1e308, "the time 1e+308 is out of range"),
        (3e11, "the time 300000000000.0 is out of range"),  # seconds past the year 9999
        (1e22, "is out of range"),  # nanoseconds past the year 9999
        (-5, "the time -5 is negative"),
        ({"start": 1767600000, "end": 1e308}, "the time 1e+308 is out of range"),
        ("9999-12-31T23:59:59-14:00", "is out of range"),
    ],
)
@pytest.mark.parametrize("command", ["cost", "lint", "report"])
def test_a_session_time_out_of_range_is_one_line_naming_the_line(
    tmp_path: Path, cli: Cli, time: Any, said: str, command: str
) -> None:
    path = session(tmp_path / "proxy.jsonl", [START.timestamp(), time])
    extra = ["--html", str(tmp_path / "report.html")] if command == "report" else []
    code, out, err = cli(command, str(path), *extra)
    assert code == 2, out + err
    line = one_line(err)
    assert f"{path}:2: its time: the time " in line and said in line
    assert "up to the year 9999" in line
    assert not (tmp_path / "report.html").exists()


# -- a cassette's base64 body ---------------------------------------------------------------------

FOLLOW_UP = EXAMPLES / "traces" / "cassettes" / "test_follow_up.json"


def cassette(tmp_path: Path, edit: Any) -> Path:
    document = json.loads(FOLLOW_UP.read_text(encoding="utf-8"))
    edit(document["exchanges"][0])
    path = tmp_path / "fixtures" / "cassettes" / "test_follow_up.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def as_base64(side: str, damage: bool) -> Any:
    def edit(exchange: dict[str, Any]) -> None:
        part = exchange[side]
        key = "json" if "json" in part else "lines"
        raw = json.dumps(part.pop(key)) if key == "json" else "\n".join(part.pop(key))
        if key == "json":
            raw = raw.replace(", ", ",").replace(": ", ":")
        encoded = base64.b64encode(raw.encode()).decode()
        part["base64"] = encoded.rstrip("=")[:-1] if damage else encoded

    return edit


@pytest.mark.parametrize("side", ["request", "response"])
@pytest.mark.parametrize("command", ["check", "show", "lint"])
def test_a_base64_body_with_bad_padding_is_one_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, side: str, command: str
) -> None:
    path = cassette(tmp_path, as_base64(side, damage=True))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(command, str(path.relative_to(tmp_path)))
    assert code == 2, out + err
    line = one_line(err)
    assert (
        "fixtures/cassettes/test_follow_up.json: does not match the harness/capture format" in line
    )
    assert (
        f"its base64 body is not valid base64 (bad padding?) - at `$.exchanges[0].{side}`" in line
    )


@pytest.mark.parametrize("side", ["request", "response"])
def test_a_base64_body_that_decodes_is_read(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    path = cassette(tmp_path, as_base64(side, damage=False))
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("show", str(path.relative_to(tmp_path)))
    assert (code, err) == (0, ""), out + err
    assert "cassette, 3 exchanges" in out


# -- rules and prices rows: numbers out of their range --------------------------------------------


def rules_row(**fields: Any) -> dict[str, Any]:
    return {
        "providers": ["anthropic"],
        "source": "our measurement",
        "checked_on": "2026-01-01",
    } | fields


RULES = {
    "negative lookback": (rules_row(rule="lookback", unit="blocks", reach=-3), "reach", ">= 1"),
    "no lookback": (rules_row(rule="lookback", unit="blocks", reach=0), "reach", ">= 1"),
    "negative minimum": (rules_row(rule="minimum", tokens=-1024), "tokens", ">= 0"),
    "negative limit": (
        rules_row(rule="breakpoints", limit=-4, over_limit="refused", counts="blocks"),
        "limit",
        ">= 0",
    ),
    "negative implicit": (
        rules_row(rule="breakpoints", limit=4, over_limit="refused", counts="b", implicit=-1),
        "implicit",
        ">= 0",
    ),
    "negative ttl": (
        rules_row(rule="ttl", values=["-5m"], default="-5m"),
        "values[0]",
        "matching regex",
    ),
    "zero ttl": (
        rules_row(rule="ttl", values=["1h", "0m"], default="1h"),
        "values[1]",
        "matching regex",
    ),
    "unreadable default": (
        rules_row(rule="ttl", values=["5m"], default="forever"),
        "default",
        "matching regex",
    ),
}
RULES_NEAR = {  # the edges that stay valid
    "lookback of one": rules_row(rule="lookback", unit="blocks", reach=1),
    "minimum of zero": rules_row(rule="minimum", tokens=0, models=["claude-sonnet-4-5*"]),
    "ttls": rules_row(rule="ttl", values=["1h", "5m"], default="5m"),
    "no breakpoints": rules_row(rule="breakpoints", limit=0, over_limit="ignored", counts="b"),
}


def rules_file(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"kind": "harness/rules", "format": 1, "rows": list(rows)}))
    return path


@pytest.mark.parametrize("case", RULES)
@pytest.mark.parametrize("how", ["--rules", "harness-rules.json"])
def test_a_rules_row_out_of_range_is_one_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, case: str, how: str
) -> None:
    row, field, bound = RULES[case]
    monkeypatch.chdir(tmp_path)
    path = rules_file(tmp_path / ("mine.json" if how == "--rules" else "harness-rules.json"), row)
    extra = ["--rules", str(path)] if how == "--rules" else []
    code, out, err = cli("lint", str(FOLLOW_UP), *extra)
    assert code == 2, out + err
    line = one_line(err)
    assert f"{path}: is not a rules file: " in line
    assert bound in line and f"at `$.rows[0].{field}`" in line


def test_rules_rows_at_the_edge_of_their_range_are_read(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = rules_file(tmp_path / "harness-rules.json", *RULES_NEAR.values())
    code, out, err = cli("lint", str(FOLLOW_UP))
    assert code in (0, 1) and err == "", out + err
    assert "3 requests of 1 file(s)" in out
    code, out, err = cli("rules", "--rules", str(path))
    assert (code, err) == (0, ""), out + err


def price_row(**fields: Any) -> dict[str, Any]:
    row = {
        "providers": ["anthropic"],
        "models": ["claude-sonnet-4-5*"],
        "effective_from": "2026-01-01",
        "input": 2.4,
        "output": 12,
        "cache_read": 0.24,
        "cache_write": {"5m": 3.0},
        "source": "our contract",
        "checked_on": "2026-11-30",
    }
    return row | fields


PRICES = {
    "negative input": (price_row(input=-2.4), "input is -2.4"),
    "negative write": (price_row(cache_write={"5m": -3.0}), "cache_write 5m is -3.0"),
    "huge input": (price_row(input=1e999), "Number out of range"),
    "negative tier threshold": (
        price_row(tiers=[{"above": -1, "input": 1, "output": 1, "cache_read": 0.1}]),
        "Expected `int` >= 0 - at `$.rows[0].tiers[0].above`",
    ),
    "negative multiple": (
        price_row(cache_write_as={"1h": {"of": "input", "times": -2}}),
        "times is -2.0",
    ),
}


def prices_text(row: dict[str, Any]) -> str:
    text = json.dumps({"kind": "harness/prices", "format": 1, "rows": [row]})
    return text.replace("Infinity", "1e999")


@pytest.mark.parametrize("case", PRICES)
@pytest.mark.parametrize("how", ["--prices", "harness-prices.json"])
def test_a_price_row_out_of_range_is_one_line(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, case: str, how: str
) -> None:
    row, said = PRICES[case]
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ("mine.json" if how == "--prices" else "harness-prices.json")
    path.write_text(prices_text(row), encoding="utf-8")
    extra = ["--prices", str(path)] if how == "--prices" else []
    code, out, err = cli("cost", str(FOLLOW_UP), *extra)
    assert code == 2, out + err
    line = one_line(err)
    assert f"{path}: is not a prices file: " in line and said in line


def test_a_price_row_at_the_edge_of_its_range_prices(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    free = price_row(
        input=0, cache_read=0, tiers=[{"above": 0, "input": 0, "output": 0, "cache_read": 0}]
    )
    (tmp_path / "harness-prices.json").write_text(prices_text(free), encoding="utf-8")
    code, out, err = cli("cost", str(FOLLOW_UP), "--format", "json")
    assert (code, err) == (0, ""), out + err
    assert json.loads(out)["prices"][0]["sources"][0]["source"] == "our contract"


@pytest.mark.parametrize(
    ("started", "start_ms", "said"),
    [
        (
            "9999-12-31T23:00:00+00:00",
            7_200_000.0,
            "its timing: the time 7200000.0 is out of range",
        ),
        ("2026-01-05T09:00:00+00:00", 1e13, "Expected `float` <= 1000000000000.0"),
    ],
)
def test_a_cassette_timing_out_of_range_is_one_line(
    tmp_path: Path, cli: Cli, started: str, start_ms: float, said: str
) -> None:
    def timed(exchange: dict[str, Any]) -> None:
        exchange["timing"] = {"start_ms": start_ms, "end_ms": start_ms + 5}

    path = cassette(tmp_path, timed)
    document = json.loads(path.read_text(encoding="utf-8"))
    document.update(format=2, started=started)
    path.write_text(json.dumps(document), encoding="utf-8")
    code, out, err = cli("cost", str(path))
    assert code == 2, out + err
    line = one_line(err)
    assert str(path) in line and said in line
    # the near miss: an hour into a recording started this year is read and priced
    document.update(started="2026-01-05T09:00:00+00:00")
    document["exchanges"][0]["timing"] = {"start_ms": 3_600_000.0, "end_ms": 3_600_005.0}
    path.write_text(json.dumps(document), encoding="utf-8")
    code, out, err = cli("cost", str(path))
    assert (code, err) == (0, ""), out + err
