"""What a break costs, to the token, through `harness diff --format json` (the cache model's
`Loss`): the earlier request's longest cache entry less the longest entry the later request
still shares. A provider that keys its cache by block (Anthropic) keeps the entries at its
breakpoints before the change; an exact-prefix one (OpenAI) keeps every prefix before the change
at or above the minimum; a request that cached nothing loses nothing and says why; a model the
rules know no minimum for loses what is not judged.

Every block is sized in the rules' estimate (bytes / 4), so each figure is a sum of the blocks.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, CHAT_URL, MARK, claude, text_block


def diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], a: Any, b: Any, url: str = ANTHROPIC_URL
) -> tuple[str, int, str]:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"url": url, "body": a}))
    second.write_text(json.dumps({"url": url, "body": b}))
    assert main(["diff", str(first), str(second), "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    return found["verdict"], found["tokens_lost"], found["summary"]


def turns(count: int, *, model: str = "claude-sonnet-4-5", middle: bool = False) -> Any:
    """A marked 1,100-token system block, then `count` user turns (300, 301... tokens; 100-token
    answers between), the last user block marked, and with `middle` the first one too."""
    body = claude(1100, model=model)
    messages: list[dict[str, Any]] = []
    for turn in range(count):
        if turn:
            messages.append({"role": "assistant", "content": [text_block(100)]})
        messages.append({"role": "user", "content": [text_block(300 + turn)]})
    messages[-1]["content"][-1]["cache_control"] = MARK
    if middle:
        messages[0]["content"][0]["cache_control"] = MARK
    body["messages"] = messages
    return body


def edited(body: Any, where: tuple[Any, ...], fill: str = "y") -> Any:
    """`body` (a copy) with the text at `where` rewritten, its length kept."""
    found = copy.deepcopy(body)
    holder = found
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = fill * len(holder[where[-1]])
    return found


# the first request caches 1,100 + 300 + 100 + 301 = 1,801 tokens (up to its last user block)
def test_a_change_before_every_breakpoint_loses_the_whole_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = edited(turns(3), ("system", 0, "text"))
    assert diff(tmp_path, capsys, turns(2), later)[:2] == ("system_changed", 1801)


def test_a_change_after_the_system_breakpoint_keeps_its_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = edited(turns(3), ("messages", 0, "content", 0, "text"))
    assert diff(tmp_path, capsys, turns(2), later)[:2] == ("messages_changed", 1801 - 1100)


def test_a_change_after_a_middle_breakpoint_keeps_the_longest_entry_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = edited(turns(3, middle=True), ("messages", 2, "content", 0, "text"))
    lost = diff(tmp_path, capsys, turns(2, middle=True), later)[1]
    assert lost == 1801 - (1100 + 300)
    # the same edit where the first turn has no breakpoint: back to the system's entry
    later = edited(turns(3), ("messages", 2, "content", 0, "text"))
    assert diff(tmp_path, capsys, turns(2), later)[1] == 1801 - 1100


def test_a_request_below_the_minimum_loses_nothing_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    haiku = turns(2, model="claude-haiku-4-5")
    later = edited(turns(3, model="claude-haiku-4-5"), ("messages", 0, "content", 0, "text"))
    verdict, lost, summary = diff(tmp_path, capsys, haiku, later)
    assert (verdict, lost) == ("messages_changed", 0)
    assert summary.endswith(
        "nothing was cached by "
        + str(tmp_path / "a.json")
        + " (1,801 tokens, minimum 4,096 for claude-haiku-4-5; tokens: bytes / 4): no cached"
        " tokens lost"
    )


def test_a_model_without_a_known_minimum_loses_what_is_not_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = turns(2, model="claude-nonexistent-9")
    later = edited(turns(3, model="claude-nonexistent-9"), ("messages", 0, "content", 0, "text"))
    _, lost, summary = diff(tmp_path, capsys, unknown, later)
    assert not lost
    assert summary.endswith(
        "whether it cached is unknown: no minimum for claude-nonexistent-9: what it loses is not"
        " judged"
    )


def message(tokens: int, role: str = "user", fill: str = "x") -> dict[str, str]:
    """A chat message of exactly `tokens` tokens (its JSON is the unit the cache counts)."""
    bare = len(json.dumps({"role": role, "content": ""}, separators=(",", ":")))
    return {"role": role, "content": fill * (tokens * 4 - bare)}


def chat(system: int) -> list[dict[str, str]]:
    return [
        message(system, "system", "s"),
        message(300, fill="q"),
        message(200, "assistant", "a"),
        message(900, fill="u"),
    ]


@pytest.mark.parametrize(
    ("at", "lost"),
    [(0, 2900), (1, 2900 - 1500), (2, 2900 - 1800)],
    ids=["system", "question", "answer"],
)
def test_an_exact_prefix_cache_keeps_every_prefix_before_the_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], at: int, lost: int
) -> None:
    first = chat(1500)
    later = [*copy.deepcopy(first), message(100, "assistant"), message(50)]
    later[at] = {**first[at], "content": "Z" * len(first[at]["content"])}
    a, b = ({"model": "gpt-5", "messages": m} for m in (first, later))
    assert diff(tmp_path, capsys, a, b, CHAT_URL)[1] == lost


def test_an_exact_prefix_below_the_minimum_is_no_entry_to_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = chat(600)  # 600 + 300 = 900 tokens before the answer: below GPT-5's 1,024
    later = copy.deepcopy(first)
    later[2] = message(200, "assistant", "A")
    a, b = ({"model": "gpt-5", "messages": m} for m in (first, later))
    assert diff(tmp_path, capsys, a, b, CHAT_URL)[1] == 2000


def test_a_recorded_usage_scales_the_loss_harness_lint_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first request's response counted its input (3,402 written, 200 uncached: two bytes a
    token), so its entries hold twice the tokens bytes / 4 gives: the break loses 1,402."""
    usage = {
        "input_tokens": 200,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 3402,
        "output_tokens": 5,
    }
    later = edited(turns(3), ("messages", 0, "content", 0, "text"))
    lines = [
        {"url": ANTHROPIC_URL, "body": turns(2), "response": {"type": "message", "usage": usage}},
        {"url": ANTHROPIC_URL, "body": later},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in lines), encoding="utf-8")
    assert main(["lint", str(path), "--format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["rule"] == "prefix-broken"
    assert "~1,402 cached tokens (2,804 bytes) lost" in finding["message"]


@pytest.mark.parametrize(("system", "lost"), [(1024, 1400), (1023, 2423)])
def test_an_exact_prefix_entry_starts_at_the_minimum_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], system: int, lost: int
) -> None:
    first = chat(system)  # system, then 300 + 200 + 900 tokens
    later = copy.deepcopy(first)
    later[1] = {**first[1], "content": "Q" * len(first[1]["content"])}
    a, b = ({"model": "gpt-5", "messages": m} for m in (first, later))
    assert diff(tmp_path, capsys, a, b, CHAT_URL)[1] == lost
