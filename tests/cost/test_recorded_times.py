"""When a request ran, in every form a recording holds it, as `harness cost` reads it
(`harness.cache._timing`): an ISO time with or without its zone, a Unix time, an offset, a
`{"start", "end"}` object, a format-2 cassette's milliseconds from its `started`; and what is
no time at all (the requests are then sequential and never expire).

Each form is read through what it decides: DeepSeek's price by the hour (peak $0.30, off-peak
$0.15 a million input tokens, the peaks 01:00-04:00 and 06:00-10:00 UTC; without a time of day,
the day's highest) and whether a request reads the one before (an entry visible once its writer
ended, expired 5 minutes after it).
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.conversations import conversation, cost, entry, size

DEEPSEEK_URL = "https://api.deepseek.com/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
THURSDAY_2AM = datetime.datetime(2026, 12, 3, 2, tzinfo=datetime.UTC)  # DeepSeek's peak
THURSDAY_NOON = datetime.datetime(2026, 12, 3, 12, tzinfo=datetime.UTC)  # off-peak
HIGHEST = "the day's highest price (the time of day is not recorded)"


def priced(tmp_path: Path, capsys: pytest.CaptureFixture[str], at: Any) -> tuple[float, Any]:
    """A DeepSeek request sent at `at` (a session line's `time`): its input price a million
    tokens, and what was applied."""
    body = {"model": "deepseek-flash", "messages": [{"role": "user", "content": "x" * 8000}]}
    path = tmp_path / "deepseek.jsonl"
    path.write_text(json.dumps({"url": DEEPSEEK_URL, "body": body, "time": at}) + "\n")
    assert main(["cost", str(path), "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    (one,), (prices,) = found["sessions"], found["prices"]
    rate = float(f"{one['usd_without_cache'] / one['input_tokens'] * 1e6:.4g}")
    return rate, prices["applied"]


@pytest.fixture
def new_york() -> Iterator[None]:
    """The machine's local time zone is not UTC."""
    before = time.tzname
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "America/New_York")
        time.tzset()
        assert time.tzname != before or time.localtime().tm_gmtoff != 0
        yield
    time.tzset()


@pytest.mark.parametrize(
    ("at", "rate"),
    [
        (THURSDAY_2AM.isoformat(), 0.3),
        (THURSDAY_NOON.isoformat(), 0.15),
        ("2026-12-03T02:00:00Z", 0.3),
        ("2026-12-03T04:00:00+02:00", 0.3),  # 02:00 UTC
        ("2026-12-03T14:00:00+02:00", 0.15),  # 12:00 UTC
        (THURSDAY_2AM.timestamp(), 0.3),  # a Unix time
        (THURSDAY_NOON.timestamp(), 0.15),
        ({"start": THURSDAY_NOON.timestamp(), "end": THURSDAY_NOON.timestamp() + 5}, 0.15),
        ({"start": "2026-12-03T12:00:00Z"}, 0.15),  # a start without an end
        ({"start": "2026-12-03T12:00:00Z", "end": "2026-12-03T12:00:09Z"}, 0.15),
    ],
)
def test_a_recorded_time_picks_the_hours_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], at: Any, rate: float
) -> None:
    found, applied = priced(tmp_path, capsys, at)
    assert found == rate
    assert HIGHEST not in applied


@pytest.mark.parametrize(
    "at",
    [
        None,
        43_200,  # seconds from the recording's start: no wall-clock time of day
        "noon",  # not a time
        True,  # not a number of seconds
        {"end": "2026-12-03T12:00:00Z"},  # an end without a start
        ["2026-12-03T12:00:00Z"],
    ],
)
def test_without_a_wall_clock_time_the_days_highest_price_applies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], at: Any
) -> None:
    assert priced(tmp_path, capsys, at) == (0.3, {HIGHEST: 1})


def test_a_time_without_a_zone_is_utc_whatever_the_machines_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_york: None
) -> None:
    # DeepSeek's peaks are 01:00-04:00 and 06:00-10:00 UTC: New York's 04:30 is 09:30 UTC
    assert priced(tmp_path, capsys, "2026-12-03T04:30:00") == (0.15, {})  # off-peak
    assert priced(tmp_path, capsys, "2026-12-03T09:00:00")[0] == 0.3  # New York's 14:00


def line(body: dict[str, Any], at: Any) -> str:
    return json.dumps({"url": ANTHROPIC_URL, "body": body, "time": at})


@pytest.mark.parametrize("at", [True, "soon", {"end": 5.0}, None])
def test_requests_without_a_time_are_sequential_and_never_expire(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], at: Any
) -> None:
    bodies = [conversation(turns) for turns in (1, 2)]
    one = size(tmp_path, capsys, bodies[0])
    found = cost(tmp_path, capsys, *(line(body, at) for body in bodies))
    assert found["cache_read_tokens"] == one  # the second reads the first, in file order


def test_an_iso_start_and_end_decide_visibility_and_expiry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [conversation(turns) for turns in (1, 2)]
    one = size(tmp_path, capsys, bodies[0])

    def at(start: str, end: str) -> dict[str, str]:
        return {"start": f"2026-12-03T12:{start}Z", "end": f"2026-12-03T12:{end}Z"}

    def read(first: dict[str, str], second: dict[str, str]) -> int:
        found = cost(tmp_path, capsys, line(bodies[0], first), line(bodies[1], second))
        return int(found["cache_read_tokens"])

    assert read(at("00:00", "00:10"), at("00:10", "00:20")) == one  # after its writer ended
    assert read(at("00:00", "00:10"), at("00:09", "00:20")) == 0  # in flight together
    assert read(at("00:00", "00:10"), at("05:10", "05:20")) == one  # 5 minutes after its end
    assert read(at("00:00", "00:10"), at("05:11", "05:20")) == 0  # expired


def test_an_end_before_its_start_is_no_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two requests sent at the same second: one whose end is unknown (or impossible) cannot
    be seen to have finished before the other started; one that ended at once can."""
    bodies = [conversation(turns) for turns in (1, 2)]
    one = size(tmp_path, capsys, bodies[0])
    second = entry(bodies[1], 100.0, 110.0)
    impossible = cost(tmp_path, capsys, entry(bodies[0], 100.0, 90.0), second)
    assert impossible["cache_read_tokens"] == 0
    instant = cost(tmp_path, capsys, entry(bodies[0], 100.0, 100.0), second)
    assert instant["cache_read_tokens"] == one


def cassette(
    tmp_path: Path, started: str | None, *timings: tuple[float, float], url: str = ANTHROPIC_URL
) -> Path:
    """A format-2 cassette of a conversation's turns, each with its timing in milliseconds."""
    exchanges = [
        {
            "request": {"method": "POST", "url": url, "json": conversation(turn + 1)},
            "response": {"status": 200, "json": {"type": "message"}},
            "timing": {"start_ms": start, "end_ms": end},
        }
        for turn, (start, end) in enumerate(timings)
    ]
    if url == DEEPSEEK_URL:
        for exchange in exchanges:
            exchange["request"]["json"] = {  # type: ignore[index]
                "model": "deepseek-flash",
                "messages": [{"role": "user", "content": "x" * 8000}],
            }
    document: dict[str, Any] = {"kind": "harness/capture", "format": 2, "exchanges": exchanges}
    if started is not None:
        document["started"] = started
    path = tmp_path / f"cassette{len(list(tmp_path.glob('*.json')))}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def cassette_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str], path: Path) -> Any:
    assert main(["cost", str(path), "--format", "json"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["sessions"]
    return found


def test_a_cassettes_timing_is_milliseconds_from_its_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = size(tmp_path, capsys, conversation(1))

    def read(*timings: tuple[float, float], started: str | None = "2026-12-03T12:00:00Z") -> int:
        path = cassette(tmp_path, started, *timings)
        return int(cassette_cost(tmp_path, capsys, path)["cache_read_tokens"])

    # the second turn starts 290 s after the first ended: it reads it
    assert read((0, 10_000), (300_000, 305_000)) == one
    # 300.001 s after: the 5-minute entry expired
    assert read((0, 10_000), (310_001, 315_000)) == 0
    # sent before the first's answer ended: in flight together; as it ended: after it
    assert read((0, 10_000), (9_999, 15_000)) == 0
    assert read((0, 10_000), (10_000, 15_000)) == one
    # without a wall-clock start the milliseconds count the same
    assert read((0, 10_000), (310_001, 315_000), started=None) == 0
    assert read((0, 10_000), (10_000, 15_000), started=None) == one


def test_a_cassettes_wall_clock_start_picks_the_hours_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def rate(started: str | None, start_ms: float) -> float:
        path = cassette(tmp_path, started, (start_ms, start_ms + 5_000), url=DEEPSEEK_URL)
        one = cassette_cost(tmp_path, capsys, path)
        return float(f"{one['usd_without_cache'] / one['input_tokens'] * 1e6:.4g}")

    # an hour after a 01:00 start is 02:00 UTC: peak; after an 11:00 start, noon: off-peak
    assert rate("2026-12-03T01:00:00Z", 3_600_000) == 0.3
    assert rate("2026-12-03T11:00:00Z", 3_600_000) == 0.15
    assert rate(None, 3_600_000) == 0.3  # no wall clock: the day's highest
