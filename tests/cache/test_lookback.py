"""Each breakpoint looks back on its own: a hit at one never hides another's miss.

The usual agent layout marks the system prompt and the conversation's newest block. When a turn
adds more blocks than a breakpoint looks back (Anthropic: 20), the conversation breakpoint finds
nothing in reach although the previous turn wrote the conversation: that part is written again
instead of read (`lookback-exceeded`), even though the system breakpoint hits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, MARK, claude, line, text_block


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], *bodies: dict[str, Any]) -> Any:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(line(b, ANTHROPIC_URL) for b in bodies) + "\n", encoding="utf-8")
    code = main(["lint", str(path), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["findings"]


def agent_turns(added: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turn 1: a marked system prompt and one marked user block (two writes). Turn 2: the same,
    then `added` more blocks, the newest marked: its breakpoint is `added` blocks past turn 1's."""
    first = claude(1100)  # the system block carries the marker
    first["messages"] = [{"role": "user", "content": [text_block(300, MARK)]}]
    second = claude(1100)
    steps = [text_block(8 + n % 3) for n in range(added - 1)]
    second["messages"] = [
        {"role": "user", "content": [text_block(300), *steps, text_block(8, MARK)]}
    ]
    return first, second


def test_a_system_hit_does_not_hide_the_conversation_breakpoints_lookback_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, *agent_turns(30))
    assert code == 0
    assert [(f["rule"], f["request"]) for f in found] == [("lookback-exceeded", 1)]
    assert "is 30 blocks after the cache entry request 0 wrote" in found[0]["message"]
    assert found[0]["pointer"] == "/messages/0/content/30"
    # what is written again is the conversation past the system entry, not the system
    assert "~300 cached tokens are written again" in found[0]["message"]


def test_the_conversation_breakpoint_exactly_at_the_lookback_edge_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 20 positions, the breakpoint's own the first: 19 blocks back is the last one checked
    assert lint(tmp_path, capsys, *agent_turns(19)) == (0, [])
    code, found = lint(tmp_path, capsys, *agent_turns(20))
    assert code == 0
    assert [(f["rule"], f["request"]) for f in found] == [("lookback-exceeded", 1)]


def test_cost_writes_the_conversation_again_when_its_breakpoint_is_out_of_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def read_of(added: int) -> int:
        path = tmp_path / f"cost{added}.jsonl"
        path.write_text(
            "\n".join(line(b, ANTHROPIC_URL) for b in agent_turns(added)) + "\n", encoding="utf-8"
        )
        assert main(["cost", str(path), "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        return int(out["sessions"][0]["cache_read_tokens"])

    # in reach: the second turn reads the system and the conversation (1,100 + 300 tokens);
    # out of reach: only the system
    assert read_of(19) == 1400
    assert read_of(20) == 1100


def tool_turn(calls: int, interleaved: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Turn 1 writes the conversation; turn 2 adds an assistant turn of `calls` parallel tool
    calls and a user turn of their results, the newest result marked. `interleaved`: a text
    block between each call (then no run forms, each block is its own position)."""
    first = claude(1100)
    first["messages"] = [{"role": "user", "content": [text_block(300, MARK)]}]
    second = claude(1100)
    uses: list[dict[str, Any]] = []
    for n in range(calls):
        if interleaved:
            uses.append(text_block(8))
        uses.append({"type": "tool_use", "id": f"toolu_{n}", "name": "look", "input": {"n": n}})
    results: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"result {n}"}
        for n in range(calls)
    ]
    results[-1] = {**results[-1], "cache_control": MARK}
    second["messages"] = [
        {"role": "user", "content": [text_block(300)]},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    return first, second


def test_a_run_of_parallel_tool_calls_is_one_position_on_the_claude_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 12 calls and 12 results: 25 blocks back, but 3 positions (text, the calls, the results)
    assert lint(tmp_path, capsys, *tool_turn(12, interleaved=False)) == (0, [])
    # near miss: a text block between the calls breaks their run (the results still form one):
    # 36 blocks back, 25 positions
    code, found = lint(tmp_path, capsys, *tool_turn(12, interleaved=True))
    assert code == 0
    assert [(f["rule"], f["request"]) for f in found] == [("lookback-exceeded", 1)]
    assert "is 25 positions (36 blocks; a run of parallel tool_use" in found[0]["message"]
