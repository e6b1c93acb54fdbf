"""Cache prefix chains over request bodies: `check_prefix_chain` and a session's own assertion.

A conversation that moves its breakpoint forward extends its prefix; a break names the block, the
tool and the prefix bytes lost. The per-endpoint gate the plugin runs is in `test_prefix_chain.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.capture import CaptureSession, PrefixBroken, check_prefix_chain
from tests.support.sdk import SYSTEM, TOOLS, ask_claude, function_tool
from tests.support.stand_ins import Provider

# -- cache prefix chains -------------------------------------------------------------------------


def anthropic_body(messages: list[Any], tools: list[Any] = TOOLS, **extra: Any) -> dict[str, Any]:
    mark = {"type": "ephemeral"}
    return {
        "model": "claude-test",
        "system": [{"type": "text", "text": SYSTEM, "cache_control": mark}],
        "tools": tools,
        "messages": messages,
        **extra,
    }


def turn(text: str, *, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = {"type": "ephemeral"}
    return {"role": "user", "content": [block]}


def test_a_conversation_that_moves_its_breakpoint_forward_extends_its_prefix() -> None:
    first = anthropic_body([turn("one", marked=True)])
    second = anthropic_body(
        [turn("one"), {"role": "assistant", "content": "ok"}, turn("two", marked=True)]
    )
    assert check_prefix_chain([first, second]) == []


def test_a_break_names_the_block_the_tool_and_the_prefix_bytes_lost() -> None:
    first = anthropic_body([turn("one", marked=True)])
    reordered = anthropic_body([turn("one"), turn("two", marked=True)], tools=TOOLS[::-1])
    edited = anthropic_body([turn("ONE"), turn("two", marked=True)])
    other_model = anthropic_body([turn("one"), turn("two")], model="claude-other")

    (tools_break,) = check_prefix_chain([first, reordered])
    assert tools_break.block == "tools" and tools_break.index == 2 and tools_break.previous == 1
    assert tools_break.report.tool == "read_file"
    assert 0 < tools_break.bytes_lost <= tools_break.prefix_bytes
    assert "the tools block broke first" in tools_break.to_text()

    (messages_break,) = check_prefix_chain([first, edited])
    assert messages_break.block == "messages"
    assert messages_break.bytes_lost < tools_break.bytes_lost  # tools and system stay cached

    (settings_break,) = check_prefix_chain([first, other_model])
    assert settings_break.block == "settings"
    assert settings_break.bytes_lost == settings_break.prefix_bytes


def test_openai_chain_needs_the_previous_messages_first() -> None:
    base = {"model": "gpt-test", "tools": [function_tool("f")]}
    one = {
        **base,
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}],
    }
    two = {**one, "messages": [*one["messages"], {"role": "assistant", "content": "b"}]}
    rewritten = {**one, "messages": [{"role": "system", "content": "s2"}]}
    assert check_prefix_chain([one, two]) == []
    assert [b.block for b in check_prefix_chain([one, rewritten])] == ["system"]

    stored = {"model": "gpt-test", "input": "next", "previous_response_id": "resp_1"}
    assert check_prefix_chain([{"model": "gpt-test", "input": "first"}, stored]) == []


def test_session_prefix_assertion_marker_and_conversation_boundaries(tmp_path: Path) -> None:
    session = CaptureSession(upstream=Provider().transport())
    ask_claude(session)
    ask_claude(session, tools=TOOLS[::-1])
    with pytest.raises(PrefixBroken, match="tools block broke first"):
        session.assert_prefix_extends()

    session.moves_header = "the tool set is reordered on purpose"
    session.assert_prefix_extends()
    assert any("expected header move" in note for note in session.notes)

    fresh = CaptureSession(upstream=Provider().transport())
    ask_claude(fresh)
    fresh.new_conversation()
    ask_claude(fresh, tools=TOOLS[::-1])
    assert fresh.prefix_breaks() == []
    assert fresh.finish().prefix_breaks == []
