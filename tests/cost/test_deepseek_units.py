"""DeepSeek's cache units through `harness cost` (the replay's `units` mode): "Each cached prefix
is an independent, complete unit. A subsequent request can only hit the cache if it fully
matches a cache prefix unit", and "the system detects the common prefix A and persists it as a
unit" when two requests diverge. No minimum, no markers, no write fee.

Every figure is a single request's own size (`harness cost` on a session of that one request).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.conversations import cost

DEEPSEEK_URL = "https://api.deepseek.com/chat/completions"
SYSTEM = {"role": "system", "content": "You plan trips. " + "x" * 4000}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text * 300}


def body(*turns: str) -> dict[str, Any]:
    return {"model": "deepseek-flash", "messages": [SYSTEM, *(user(t) for t in turns)]}


def line(value: dict[str, Any], start: float | None = None, end: float | None = None) -> str:
    found: dict[str, Any] = {"url": DEEPSEEK_URL, "body": value}
    if start is not None:
        found["time"] = {"start": start, "end": end if end is not None else start + 5}
    return json.dumps(found)


def tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: dict[str, Any]) -> int:
    found: int = cost(tmp_path, capsys, line(value))["input_tokens"]
    return found


def test_a_request_reads_a_unit_it_fully_matches_and_nothing_shorter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = tokens(tmp_path, capsys, body("a"))
    found = cost(tmp_path, capsys, line(body("a"), 0), line(body("a", "b"), 30))
    assert found["cache_read_tokens"] == one  # the first request is a unit the second extends
    assert found["cache_write_tokens"] == 0  # no write fee: written tokens are input
    assert found["uncached_tokens"] == found["input_tokens"] - one
    # the first request again, shorter than the unit the second wrote: no unit matches it
    again = cost(tmp_path, capsys, line(body("a", "b"), 0), line(body("a"), 30))
    assert again["cache_read_tokens"] == 0


@pytest.mark.parametrize("timed", [True, False])
def test_the_common_prefix_of_two_diverging_requests_becomes_a_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], timed: bool
) -> None:
    shared = tokens(tmp_path, capsys, body("a"))
    system = tokens(tmp_path, capsys, {"model": "deepseek-flash", "messages": [SYSTEM]})

    def at(place: int) -> tuple[float, ...]:
        return (30.0 * place,) if timed else ()

    # 2 diverges from 1 after their first user turn: that common prefix is a unit 3 reads
    found = cost(
        tmp_path,
        capsys,
        line(body("a", "b"), *at(0)),
        line(body("a", "c"), *at(1)),
        line(body("a", "d"), *at(2)),
    )
    assert found["cache_read_tokens"] == shared
    # 3 diverges earlier still (after the system message): it reads the system's common unit
    found = cost(
        tmp_path,
        capsys,
        line(body("a", "b"), *at(0)),
        line(body("e"), *at(1)),
        line(body("f"), *at(2)),
    )
    assert found["cache_read_tokens"] == system
    # near miss: without the request that diverged, there is no such unit
    alone = cost(tmp_path, capsys, line(body("a", "b"), *at(0)), line(body("a", "d"), *at(1)))
    assert alone["cache_read_tokens"] == 0


def test_a_common_unit_is_there_once_the_request_that_made_it_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tokens(tmp_path, capsys, body("a"))

    def read(third: float) -> int:
        found = cost(
            tmp_path,
            capsys,
            line(body("a", "b"), 0, 10),
            line(body("a", "c"), 20, 40),
            line(body("a", "d"), third, third + 5),
        )
        return int(found["cache_read_tokens"])

    assert read(40) == shared
    assert read(39) == 0  # sent while the diverging request was in flight
    assert read(40 + 86_400) == shared  # a unit on disk: no time to live


def test_a_unit_already_read_is_not_made_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request that reads a unit and diverges after it makes no shorter unit: what it shares
    with the earlier request below the read is already a unit."""
    one = tokens(tmp_path, capsys, body("a"))
    two = tokens(tmp_path, capsys, body("a", "b"))
    found = cost(
        tmp_path,
        capsys,
        line(body("a"), 0),
        line(body("a", "b", "c"), 30),  # reads 1's unit
        line(body("a", "b", "d"), 60),  # reads 1's unit; [a, b] is common with 2: a unit
        line(body("a", "b", "e"), 90),  # reads [a, b]
    )
    assert found["cache_read_tokens"] == one + one + two


def test_a_request_that_only_extends_makes_no_common_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 extends 1 (it reads 1's unit): it diverges from nothing, so the system message alone
    is no unit yet; 3 diverges from both after it and makes it one, which 4 reads."""
    system = tokens(tmp_path, capsys, {"model": "deepseek-flash", "messages": [SYSTEM]})
    one = tokens(tmp_path, capsys, body("a"))
    lines = [line(body("a"), 0), line(body("a", "b"), 30), line(body("e"), 60)]
    assert cost(tmp_path, capsys, *lines)["cache_read_tokens"] == one
    found = cost(tmp_path, capsys, *lines, line(body("f"), 90))
    assert found["cache_read_tokens"] == one + system
