"""A block the next turn adds before the cached prefix's end is a break, not an extension.

Found attacking issue 20: the gate cut the next request to the blocks the earlier prefix held,
so tools added mid-conversation (Anthropic: tools come first in the cache) or a Responses text
format added on turn 2 passed as "extends". Requests go through a capture session to a stand-in
upstream, as an SDK sends them; `prefix_chain()` is what the plugin gates a test on.
"""

from __future__ import annotations

from typing import Any

from tests.capture.test_false_breaks import ANTHROPIC, RESPONSES, claude, responses, send

TOOL = {"name": "search", "description": "Search the web.", "input_schema": {"type": "object"}}


def test_tools_added_on_a_later_turn_break_the_whole_prefix() -> None:
    added = claude(2)
    added["tools"] = [TOOL]  # sent after messages in the body: the cache order puts it first
    (found,) = send(claude(1), added, url=ANTHROPIC).prefix_breaks()
    assert found.verdict == "tools_changed"
    assert found.bytes_lost >= found.prefix_bytes - 1  # all of it (the report keeps one "{")


def test_the_same_tools_every_turn_still_extend() -> None:
    first, second = claude(1, tools=[TOOL]), claude(2, tools=[TOOL])
    assert send(first, second, url=ANTHROPIC).prefix_breaks() == []


def test_a_text_format_added_on_a_later_turn_is_text_format_changed() -> None:
    shaped: dict[str, Any] = responses(2, text={"format": {"type": "json_object"}})
    (found,) = send(responses(1), shaped, url=RESPONSES).prefix_breaks()
    assert found.verdict == "text_format_changed"
