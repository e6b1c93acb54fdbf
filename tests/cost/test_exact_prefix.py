"""An exact-prefix cache (OpenAI's automatic caching) through `harness cost` and `harness lint`:
a later request reads any prefix of an earlier one's written prompt, at or above the minimum
(1,024 tokens for GPT-5), as long as the written entry lives (its TTL, 30 minutes by default,
from when its request ended) and once its request has ended; reading the shorter prefix reads
the write (no `write-never-read`).

A chat message is one unit of the cache's layout, its JSON the bytes its tokens are estimated
from (bytes / 4): `message(tokens)` is a message of exactly that many tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.conversations import cost

CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"


def message(tokens: int, role: str = "user", fill: str = "x") -> dict[str, str]:
    bare = len(json.dumps({"role": role, "content": ""}, separators=(",", ":")))
    return {"role": role, "content": fill * (tokens * 4 - bare)}


def line(messages: list[dict[str, str]], start: float, end: float | None = None) -> str:
    body = {"model": "gpt-5", "messages": messages}
    time = {"start": start, "end": end if end is not None else start + 5}
    return json.dumps({"url": CHAT_URL, "body": body, "time": time})


def read(tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str) -> int:
    found = cost(tmp_path, capsys, *lines)
    assert found["input_tokens"] == found["cache_read_tokens"] + found["uncached_tokens"]
    return int(found["cache_read_tokens"])


SYSTEM = message(1500, "system", "s")


@pytest.mark.parametrize(("shared", "expected"), [(1024, 1024), (1023, 0)])
def test_a_shorter_prefix_of_a_written_prompt_is_read_from_the_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shared: int, expected: int
) -> None:
    system = message(shared, "system", "s")
    first = line([system, message(900, fill="a")], 0)
    second = line([system, message(900, fill="b")], 30)  # diverges after the system message
    assert read(tmp_path, capsys, first, second) == expected


def test_the_longest_shared_prefix_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = [SYSTEM, message(300, fill="q"), message(200, "assistant")]
    first = line([*head, message(900, fill="a")], 0)
    second = line([*head, message(900, fill="b")], 30)
    assert read(tmp_path, capsys, first, second) == 2000
    # and a third that shares only the system message reads that much of the same write
    third = line([SYSTEM, message(900, fill="c")], 60)
    assert read(tmp_path, capsys, first, second, third) == 2000 + 1500


@pytest.mark.parametrize(
    ("start", "expected"),
    [(4.9, 0), (5.0, 1500), (5 + 1800, 1500), (5 + 1800.5, 0)],
    ids=["in-flight", "after-its-end", "at-its-ttl", "expired"],
)
def test_a_shorter_prefix_lives_as_its_write_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start: float, expected: int
) -> None:
    first = line([SYSTEM, message(900, fill="a")], 0, 5)
    second = line([SYSTEM, message(900, fill="b")], start, start + 5)
    assert read(tmp_path, capsys, first, second) == expected


def test_a_write_read_through_its_shorter_prefix_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three Responses conversations with the same instructions: the second and the third read
    the first's write up to the instructions, so that write is read; the second's own write
    (its question, past what it read) is read by nobody."""

    def request(question: str, start: float) -> str:
        body = {
            "model": "gpt-5.6",
            "instructions": "Plan trips. " + "i" * 6000,
            "input": [{"role": "user", "content": question * 4000}],
        }
        return json.dumps({"url": RESPONSES_URL, "body": body, "time": start})

    lines = [request("a", 0), request("b", 30), request("c", 60)]
    path = tmp_path / "responses.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["lint", str(path), "--format", "json"]) == 0
    findings: list[Any] = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["rule"], f["request"]) for f in findings] == [("write-never-read", 1)]
    found = cost(tmp_path, capsys, *lines)  # GPT-5.6 bills writes: 1's whole, 2's question
    assert found["cache_read_tokens"] > 2 * 1500 and found["cache_write_tokens"] > 0
