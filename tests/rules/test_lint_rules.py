"""Each rule fires on a body built from the provider's documented behaviour, through `harness lint`,
and stays silent on its near miss: one token over the minimum, four breakpoints, the lookback's
edge, the right key order.

Bodies are sized in the rules' own estimate (`tests.support.bodies`: JSON bytes / 4), so a test
stands exactly one token either side of a minimum.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import (
    ANTHROPIC_URL,
    BEDROCK_URL,
    MARK,
    RESPONSES_URL,
    VERTEX_URL,
    claude,
    converse,
    line,
    responses,
    text_block,
)


def lint(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *lines: str,
    args: tuple[str, ...] = (),
) -> tuple[int, list[dict[str, Any]]]:
    """`harness lint` on a session file of `lines`: the exit code and the findings."""
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["lint", str(path), "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)["findings"]


def rules(findings: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(f["rule"], f["severity"], f["request"]) for f in findings]


# -- too-many-breakpoints ------------------------------------------------------------------------


def marked(count: int, **extra: Any) -> dict[str, Any]:
    """An Anthropic body with `count` cache_control blocks (one system, the rest in a message)."""
    body = claude(1100, **extra)
    body["messages"] = [
        {"role": "user", "content": [text_block(8, MARK) for _ in range(count - 1)]}
    ]
    return body


def test_five_anthropic_breakpoints_are_refused_four_are_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, line(marked(5), ANTHROPIC_URL))
    assert code == 1
    assert rules(found) == [("too-many-breakpoints", "error", 0)]
    assert "5 breakpoints, at most 4" in found[0]["message"]
    assert "the API refuses the request" in found[0]["message"]
    assert lint(tmp_path, capsys, line(marked(4), ANTHROPIC_URL)) == (0, [])


def test_the_top_level_automatic_cache_control_takes_a_slot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, line(marked(4, cache_control=MARK), ANTHROPIC_URL))
    assert code == 1 and rules(found) == [("too-many-breakpoints", "error", 0)]
    assert lint(tmp_path, capsys, line(marked(3, cache_control=MARK), ANTHROPIC_URL)) == (0, [])


def test_five_bedrock_cache_points_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, line(converse(1100, points=5), BEDROCK_URL))
    assert code == 1 and rules(found) == [("too-many-breakpoints", "error", 0)]
    assert lint(tmp_path, capsys, line(converse(1100, points=4), BEDROCK_URL)) == (0, [])


def test_openai_writes_only_the_latest_breakpoints_a_warning_not_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, line(responses(1100, breakpoints=4), RESPONSES_URL))
    assert code == 0  # the API does not refuse it
    assert rules(found) == [("too-many-breakpoints", "warning", 0)]
    assert "only the latest 3 are written" in found[0]["message"]
    assert lint(tmp_path, capsys, line(responses(1100, breakpoints=3), RESPONSES_URL)) == (0, [])
    explicit = responses(1100, breakpoints=4, mode="explicit")  # four in explicit mode
    assert lint(tmp_path, capsys, line(explicit, RESPONSES_URL)) == (0, [])


# -- below-minimum -------------------------------------------------------------------------------


def test_a_marked_prefix_one_token_under_the_minimum_caches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    under = claude(4095, model="claude-opus-4-6")
    code, found = lint(tmp_path, capsys, line(under, ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("below-minimum", "warning", 0)]
    assert found[0]["message"].startswith(
        "nothing is cached: 4,095 tokens, minimum 4,096 for claude-opus-4-6"
    )
    for tokens in (4096, 4097):
        body = claude(tokens, model="claude-opus-4-6")
        assert lint(tmp_path, capsys, line(body, ANTHROPIC_URL)) == (0, [])


def test_minimums_are_per_model_family_and_not_monotonic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for model, minimum in (
        ("claude-opus-5", 512),
        ("claude-sonnet-4-5-20250929", 1024),
        ("claude-opus-4-7", 2048),
        ("claude-haiku-4-5", 4096),
    ):
        code, found = lint(tmp_path, capsys, line(claude(minimum - 1, model=model), ANTHROPIC_URL))
        assert code == 0 and rules(found) == [("below-minimum", "warning", 0)], model
        body = claude(minimum, model=model)
        assert lint(tmp_path, capsys, line(body, ANTHROPIC_URL)) == (0, []), model


def test_openai_automatic_caching_under_1024_tokens_is_an_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = responses(1023)
    del body["input"][0]["content"][0]["type"]  # a plain part: no breakpoint, no options
    body["input"][0]["content"][0]["type"] = "input_text"
    code, found = lint(tmp_path, capsys, line(body, RESPONSES_URL))
    assert code == 0 and rules(found) == [("below-minimum", "info", 0)]
    assert lint(tmp_path, capsys, line(responses(1024), RESPONSES_URL)) == (0, [])


# -- no-breakpoint -------------------------------------------------------------------------------


def test_a_large_anthropic_prefix_with_no_marker_caches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, line(claude(1100, mark=None), ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("no-breakpoint", "warning", 0)]
    assert (
        "no cache_control marker and no top-level automatic cache_control" in (found[0]["message"])
    )
    for near_miss in (
        claude(1100),  # marked
        claude(1100, mark=None, cache_control=MARK),  # automatic caching
        claude(1000, mark=None),  # too small to cache anyway
    ):
        assert lint(tmp_path, capsys, line(near_miss, ANTHROPIC_URL)) == (0, [])


def test_a_large_claude_prefix_on_bedrock_with_no_cache_point_is_cached_implicitly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # AWS documents automatic caching for Claude on Bedrock: no cache point is no finding
    # (Anthropic's own API, which caches only what a marker asks for, is the near miss:
    # test_a_large_anthropic_prefix_with_no_marker_caches_nothing)
    assert lint(tmp_path, capsys, line(converse(1100, points=0), BEDROCK_URL)) == (0, [])


def test_openai_explicit_mode_with_no_breakpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found = lint(tmp_path, capsys, line(responses(1100, mode="explicit"), RESPONSES_URL))
    assert code == 0 and rules(found) == [("no-breakpoint", "warning", 0)]
    with_one = responses(1100, mode="explicit", breakpoints=1)
    assert lint(tmp_path, capsys, line(with_one, RESPONSES_URL)) == (0, [])
    implicit = responses(1100, mode="implicit")
    assert lint(tmp_path, capsys, line(implicit, RESPONSES_URL)) == (0, [])


# -- ttl-order -----------------------------------------------------------------------------------


def test_a_longer_ttl_after_a_shorter_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100)  # the system block: 5m (the default)
    body["messages"] = [{"role": "user", "content": [text_block(8, {**MARK, "ttl": "1h"})]}]
    code, found = lint(tmp_path, capsys, line(body, ANTHROPIC_URL))
    assert code == 1 and rules(found) == [("ttl-order", "error", 0)]
    assert "a 1h breakpoint at /messages/0/content/0 comes after a 5m one" in found[0]["message"]
    right = claude(1100, mark={**MARK, "ttl": "1h"})
    right["messages"] = [{"role": "user", "content": [text_block(8, MARK)]}]
    assert lint(tmp_path, capsys, line(right, ANTHROPIC_URL)) == (0, [])


# -- lookback-exceeded ---------------------------------------------------------------------------


def grown(blocks: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A turn marked at its last block, then the next with `blocks` more blocks, marked last."""
    first = claude(1100, mark=None)
    first["messages"] = [{"role": "user", "content": [text_block(8, MARK)]}]
    content = [text_block(8)] + [text_block(8 + n) for n in range(1, blocks)]
    content.append(text_block(8, MARK))
    second = {**first, "messages": [{"role": "user", "content": [text_block(8), *content[1:]]}]}
    return first, second


def test_a_breakpoint_20_blocks_after_the_previous_write_is_out_of_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "The system checks at most 20 positions per breakpoint, counting the breakpoint itself as
    # the first": the entry 20 blocks back is one position outside, 19 back is the window's last
    first, second = grown(20)
    assert len(second["messages"][0]["content"]) == 21  # the old block and 20 new ones
    code, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("lookback-exceeded", "warning", 1)]
    assert "20 blocks after the cache entry request 0 wrote" in found[0]["message"]
    assert "looks back at most 20 blocks" in found[0]["message"]
    at_the_edge = grown(19)
    assert lint(tmp_path, capsys, *(line(b, ANTHROPIC_URL) for b in at_the_edge)) == (0, [])


def test_a_write_out_of_a_later_breakpoints_reach_is_reported_once_as_the_lookback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the first turn writes up to its message; the second adds 21 blocks: the write is never
    # read because of the lookback, which is the one finding (not also write-never-read)
    first = claude(1100, mark=None)
    first["messages"] = [{"role": "user", "content": [text_block(8, MARK)]}]
    second = claude(1100, mark=None)
    reply = [{"type": "text", "text": f"step {n}"} for n in range(20)]
    second["messages"] = [
        {"role": "user", "content": [text_block(8)]},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": [{"type": "text", "text": "go on", "cache_control": MARK}]},
    ]
    code, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("lookback-exceeded", "warning", 1)]


# -- volatile-in-prefix --------------------------------------------------------------------------


def test_a_timestamp_in_the_system_prompt_is_volatile_in_the_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100)
    body["system"][0]["text"] = "Now: 2026-12-04T08:00:00Z. " + body["system"][0]["text"]
    code, found = lint(tmp_path, capsys, line(body, ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("volatile-in-prefix", "warning", 0)]
    assert 'looks like a timestamp: "2026-12-04T08:00:00Z" at /system/0' in found[0]["message"]
    for noun, value in (
        ("a UUID", "3f2b9c1e-8d4a-4e6b-9a7c-1d2e3f4a5b6c"),
        ("a temporary path", "/tmp/pytest-of-ci/run-42/work"),
        ("a hex id", "deadbeef0123456789abcdef"),
    ):
        body = claude(1100)
        body["system"][0]["text"] += f" {value} "
        _, found = lint(tmp_path, capsys, line(body, ANTHROPIC_URL))
        assert [f["rule"] for f in found] == ["volatile-in-prefix"], noun
        assert f"looks like {noun}" in found[0]["message"]
    latest = claude(1100)  # the same timestamp in the latest message: where it belongs
    latest["messages"][-1]["content"] = "Now: 2026-12-04T08:00:00Z. What is on today?"
    assert lint(tmp_path, capsys, line(latest, ANTHROPIC_URL)) == (0, [])


@pytest.mark.parametrize(
    ("volatile", "stable"),
    [
        ("It is 08:14:03 now.", "Run the report at 09:00 daily."),
        ("Started at 1733310000.", "Call 1234567890 for support."),
        ("Work in /tmp/tmpab12cd34/out.", "Write the result to /tmp/out.txt."),
        (
            "Request 3f2b9c1e-8d4a-4e6b-9a7c-1d2e3f4a5b6c.",
            "Ids look like 00000000-0000-0000-0000-000000000000.",
        ),
        ("Current date: 2026-12-04.", "Give dates as ISO dates, e.g. 2025-01-31."),
    ],
    ids=["clock", "epoch", "temp-path", "uuid", "date-or-an-example-of-one"],
)
def test_volatile_values_fire_and_their_stable_look_alikes_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], volatile: str, stable: str
) -> None:
    for text, expected in ((volatile, ["volatile-in-prefix"]), (stable, [])):
        body = claude(1100)
        body["system"][0]["text"] += f" {text}"
        _, found = lint(tmp_path, capsys, line(body, ANTHROPIC_URL))
        assert [f["rule"] for f in found] == expected, text


# -- vertex-key-order ----------------------------------------------------------------------------


def vertex(order: tuple[str, ...]) -> dict[str, Any]:
    body = claude(1100)
    body["anthropic_version"] = "vertex-2023-10-16"
    del body["model"]
    return {key: body[key] for key in order}


def test_claude_on_vertex_with_messages_before_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    late = vertex(("anthropic_version", "max_tokens", "messages", "system"))
    code, found = lint(tmp_path, capsys, line(late, VERTEX_URL))
    assert code == 0 and rules(found) == [("vertex-key-order", "warning", 0)]
    assert "messages before system" in found[0]["message"]
    right = vertex(("anthropic_version", "max_tokens", "system", "messages"))
    assert lint(tmp_path, capsys, line(right, VERTEX_URL)) == (0, [])
    claude_api = {k: v for k, v in late.items() if k != "anthropic_version"}
    claude_api["model"] = "claude-sonnet-4-5"
    assert lint(tmp_path, capsys, line(claude_api, ANTHROPIC_URL)) == (0, [])


# -- write-never-read ----------------------------------------------------------------------------


def conversation(turns: list[str], *, mark_last: bool = True, **extra: Any) -> dict[str, Any]:
    body = claude(1100, **extra)  # the system block marked: tools and system cached across turns
    messages: list[dict[str, Any]] = []
    for turn, text in enumerate(turns):
        if turn:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    if mark_last:
        messages[-1]["content"][-1]["cache_control"] = MARK
    body["messages"] = messages
    return body


def test_a_conversation_write_the_next_turn_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Plan a trip. " + "x" * 400
    first = conversation([question])  # writes the system, and the conversation up to here
    unmarked = conversation([question, "Book it."], mark_last=False)  # reads only the system
    code, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(unmarked, ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("write-never-read", "warning", 0)]
    assert "up to /messages/0/content/0 is never read" in found[0]["message"]
    marked = conversation([question, "Book it."])  # marks its newest block: reads the write
    assert lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(marked, ANTHROPIC_URL)) == (
        0,
        [],
    )


def test_a_write_the_next_turn_breaks_is_the_gates_finding_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = conversation(["Plan a trip.", "It is 12:01:33 now. " + "x" * 400])
    edited = conversation(["Plan a trip.", "It is 12:02:10 now. " + "x" * 400, "Book it."])
    code, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(edited, ANTHROPIC_URL))
    assert code == 1 and rules(found) == [("prefix-broken", "error", 1)]


def test_the_last_write_of_a_conversation_is_not_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lint(tmp_path, capsys, line(conversation(["Plan a trip."]), ANTHROPIC_URL)) == (0, [])


# -- unknown-model -------------------------------------------------------------------------------


def test_an_unknown_model_is_noted_once_and_the_rules_that_need_it_abstain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = claude(10, model="claude-test")  # below any minimum, but the minimum is unknown
    code, found = lint(tmp_path, capsys, line(small, ANTHROPIC_URL), line(small, ANTHROPIC_URL))
    assert code == 0 and rules(found) == [("unknown-model", "info", 0)]
    assert "no minimum for model claude-test" in found[0]["message"]
    known = claude(1100, model="claude-sonnet-4-5")
    assert lint(tmp_path, capsys, line(known, ANTHROPIC_URL)) == (0, [])


# -- prefix-broken -------------------------------------------------------------------------------


def test_a_reordered_tool_is_the_gates_finding_with_its_verdict_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"name": name, "input_schema": {"type": "object"}} for name in ("bash", "grep")]
    first = claude(1100, tools=tools)
    second = claude(1100, turns=2, tools=tools[::-1])
    code, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL))
    assert code == 1 and rules(found) == [("prefix-broken", "error", 1)]
    assert found[0]["message"].startswith("tools_changed: tools reordered")
    assert "(against request 0, the request it continues)" in found[0]["message"]
    same = claude(1100, turns=2, tools=tools)
    assert lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(same, ANTHROPIC_URL)) == (0, [])


def test_a_setting_of_unknown_effect_is_a_prefix_broken_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = responses(1100, model="gpt-5.6")
    second = json.loads(json.dumps(first))
    first["truncation"], second["truncation"] = "auto", "disabled"
    code, found = lint(tmp_path, capsys, line(first, RESPONSES_URL), line(second, RESPONSES_URL))
    assert code == 0 and rules(found) == [("prefix-broken", "warning", 1)]
    assert found[0]["message"].startswith("unknown_setting_changed:")


def test_a_tool_choice_change_keeps_the_system_cache_the_conversation_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Anthropic: tool_choice invalidates the messages level only; the marker is on the system
    first = claude(1100, tool_choice={"type": "auto"})
    second = claude(1100, turns=2, tool_choice={"type": "any"})
    assert lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL)) == (
        0,
        [],
    )
    # near miss: the conversation is cached too (its newest block marked): that part is lost
    first = conversation(["Plan a trip. " + "x" * 400], tool_choice={"type": "auto"})
    second = conversation(["Plan a trip. " + "x" * 400, "Book it."], tool_choice={"type": "any"})
    code, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL))
    assert code == 1 and rules(found) == [("prefix-broken", "error", 1)]
    assert found[0]["message"].startswith("tool_choice_changed:")
    assert "the system cache stays" in found[0]["message"]
