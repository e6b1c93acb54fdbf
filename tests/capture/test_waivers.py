"""The waivers behind `moves_header(only=...)` and `known_moves`, on a captured conversation.

Two requests through the openai SDK: the second drops the tools (AutoGen's reflection call) or
names a stored reply (Semantic Kernel). A waiver takes exactly the breaks it names: by block, by
verdict, by a JSON pointer (a `*` is one segment), by a predicate.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness._shared._errors import UsageError
from harness.capture import CaptureConfig, CaptureSession
from harness.capture._prefix import PrefixBroken
from harness.capture._waivers import waive, waiver
from harness.upstream import StandIn

openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
ASKED = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": "More"},
]
NAMED = [*ASKED[:2], {**ASKED[2], "name": "assistant"}, ASKED[3], ASKED[2], ASKED[3]]


def conversation(*turns: tuple[list[Any], bool]) -> CaptureSession:
    session = CaptureSession(upstream=StandIn())
    client = openai.OpenAI(api_key="sk-test-not-a-key", http_client=session.httpx2_client())
    for messages, tools in turns:
        extra = {"tools": TOOLS} if tools else {}
        client.chat.completions.create(model="gpt-5", messages=messages, **extra)
    return session


@pytest.mark.parametrize(
    ("only", "waived"),
    [
        ("tools", True),
        ("tools_changed", True),
        (["system", "tools"], True),
        (lambda b: b.block == "tools", True),
        ("messages", False),
        ("system", False),
        ("/messages/*/name", False),
        (lambda b: False, False),
    ],
)
def test_a_dropped_tool_list(only: object, waived: bool) -> None:
    breaks = conversation((ASKED, True), (ASKED, False)).prefix_breaks()
    assert [(b.block, b.verdict) for b in breaks] == [("tools", "tools_changed")]
    kept, taken = waive(breaks, [waiver("reflection", only, source="test")])
    assert (len(taken), len(kept)) == ((1, 0) if waived else (0, 1))


@pytest.mark.parametrize(
    ("only", "waived"),
    [
        ("/messages/*/name", True),
        ("/messages/1/name", True),
        ("/messages/1", True),
        ("messages", True),
        ("/messages/2/name", False),
        ("/messages/*/content", False),
        ("tools", False),
    ],
)
def test_a_named_stored_reply(only: str, waived: bool) -> None:
    breaks = conversation((ASKED, True), (NAMED, True)).prefix_breaks()
    assert [b.report.raw_pointer for b in breaks] == ["/messages/1/name"]
    _, taken = waive(breaks, [waiver("named replies", only, source="test")])
    assert bool(taken) is waived


def test_a_session_raises_only_the_breaks_no_waiver_takes() -> None:
    session = conversation((ASKED, True), (ASKED, False))
    session.waivers = [waiver("named replies", "/messages/*/name", source="test")]
    with pytest.raises(PrefixBroken, match="tools_changed"):
        session.assert_prefix_extends()
    session.waivers = list(
        CaptureConfig.of({"known_moves": [{"reason": "r", "only": "tools"}]}).known_moves
    )
    session.assert_prefix_extends()
    assert [found.reason for _, found in session.waived] == ["r"]


@pytest.mark.parametrize(
    "bad",
    [42, "", "not a pointer or word", [], {"reason": "r"}],
)
def test_only_refuses_what_is_not_a_block_verdict_pointer_or_predicate(bad: object) -> None:
    with pytest.raises(UsageError, match="only= takes"):
        waiver("why", bad, source="@pytest.mark.moves_header on t")


def test_known_moves_need_a_reason_and_what_they_waive() -> None:
    for bad in (
        [{"only": "tools"}],
        [{"reason": "r"}],
        [{"reason": "r", "only": "tools", "x": 1}],
        "tools",
    ):
        with pytest.raises(UsageError, match="known_moves"):
            CaptureConfig.of({"known_moves": bad})


def test_a_predicate_that_raises_is_one_line_naming_the_marker() -> None:
    breaks = conversation((ASKED, True), (ASKED, False)).prefix_breaks()
    with pytest.raises(UsageError, match="the only= predicate raised ZeroDivisionError"):
        waive(breaks, [waiver("r", lambda b: 1 / 0, source="@pytest.mark.moves_header on t")])
