"""The one judge, block for block, through `harness diff` and `harness lint` as a user runs them.

Each behaviour of the cache model has its near miss: a block-keyed provider (Anthropic) loses a
block whose text grew, an exact-prefix one (OpenAI) keeps it; the shorthand and its long form are
one prefix, two different texts are not; a deferred tool added is no break, a tool added is;
nothing is lost where nothing was cached, something is where it was.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, CHAT_URL, MARK, claude, line


def diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], a: Any, b: Any, url: str = ANTHROPIC_URL
) -> tuple[int, dict[str, Any]]:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"url": url, "body": a}))
    second.write_text(json.dumps({"url": url, "body": b}))
    code = main(["diff", str(first), str(second), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], *bodies: Any) -> list[Any]:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(line(b, ANTHROPIC_URL) for b in bodies) + "\n", encoding="utf-8")
    main(["lint", str(path), "--format", "json"])
    return [
        (f["rule"], f["severity"], f["request"])
        for f in json.loads(capsys.readouterr().out)["findings"]
    ]


def marked_turn(text: str) -> dict[str, Any]:
    """A cached system prompt, and one user block marked: the conversation is cached too."""
    body = claude(1100)
    body["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": text, "cache_control": MARK}]}
    ]
    return body


def test_a_grown_block_before_the_newest_breakpoint_is_a_break_for_anthropic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = marked_turn("Plan a trip. " + "x" * 2000)
    grown = marked_turn("Plan a trip. " + "x" * 2000 + " And book it.")
    code, report = diff(tmp_path, capsys, first, grown)
    assert (code, report["verdict"], report["block"]) == (1, "messages_changed", "messages")
    assert report["tokens_lost"] > 400  # the conversation's entry; the system's is kept
    assert "the system cache" not in report["summary"]
    # near miss: the same block, and a new turn after it, extends
    second = copy.deepcopy(first)
    second["messages"][0]["content"][0].pop("cache_control")
    second["messages"] += [
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": [{"type": "text", "text": "Go.", "cache_control": MARK}]},
    ]
    code, report = diff(tmp_path, capsys, first, second)
    assert (code, report["identical"], report["extends"], report["verdict"]) == (
        0,
        False,
        True,
        "extends",
    )


def test_a_grown_last_message_extends_an_exact_prefix_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    system = {"role": "system", "content": "You plan trips. " + "y" * 5000}
    first = {"model": "gpt-5.5", "messages": [system, {"role": "user", "content": "Plan a trip."}]}
    second = copy.deepcopy(first)
    second["messages"][1]["content"] = "Plan a trip. Step 1: flights."
    code, report = diff(tmp_path, capsys, first, second, url=CHAT_URL)
    assert (code, report["extends"]) == (0, True)


def test_string_content_and_its_one_text_block_are_one_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # automatic caching: the whole request is cached, the first message with it
    first = claude(1100, cache_control=MARK)
    first["messages"] = [{"role": "user", "content": "Plan a trip."}]
    second = claude(1100, cache_control=MARK)
    second["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": "Plan a trip."}]},
        {"role": "assistant", "content": "Where to?"},
        {"role": "user", "content": "Lisbon."},
    ]
    assert lint(tmp_path, capsys, first, second) == []
    # near miss: the block holds another text
    other = copy.deepcopy(second)
    other["messages"][0]["content"][0]["text"] = "Plan a holiday."
    assert lint(tmp_path, capsys, first, other) == [("prefix-broken", "error", 1)]


def test_a_marker_moved_forward_extends_and_a_changed_ttl_is_its_own_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = marked_turn("Plan a trip. " + "x" * 2000)
    moved = copy.deepcopy(first)
    moved["messages"][0]["content"][0].pop("cache_control")
    moved["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": "Where to?"}]},
        {"role": "user", "content": [{"type": "text", "text": "Lisbon", "cache_control": MARK}]},
    ]
    assert diff(tmp_path, capsys, first, moved)[1]["extends"] is True
    hour = copy.deepcopy(first)
    hour["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    code, report = diff(tmp_path, capsys, first, hour)
    assert (code, report["verdict"]) == (1, "cache_ttl_changed")


def test_a_deferred_tool_added_is_no_break_and_a_tool_added_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = {"name": "search", "description": "web search", "input_schema": {"type": "object"}}
    first = claude(1100, tools=[tool])
    later = claude(1100, turns=2, tools=[tool, {**tool, "name": "fetch", "defer_loading": True}])
    assert lint(tmp_path, capsys, first, later) == []
    eager = claude(1100, turns=2, tools=[tool, {**tool, "name": "fetch"}])
    assert lint(tmp_path, capsys, first, eager) == [("prefix-broken", "error", 1)]


def test_nothing_is_lost_where_nothing_was_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in ("bash", "grep")]
    small = claude(100, tools=tools)  # under claude-sonnet-4-5's minimum of 1,024
    code, report = diff(tmp_path, capsys, small, claude(100, tools=tools[::-1]))
    assert (code, report["verdict"], report["tokens_lost"]) == (1, "tools_changed", 0)
    assert "nothing was cached by" in report["summary"]
    assert "no cached tokens lost" in report["summary"]
    # near miss: one token over the minimum is cached, and reordering the tools loses it
    cached = claude(1100, tools=tools)
    code, report = diff(tmp_path, capsys, cached, claude(1100, tools=tools[::-1]))
    assert report["verdict"] == "tools_changed" and report["tokens_lost"] >= 1100


def test_identical_only_when_the_cache_sees_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = claude(1100)
    code, report = diff(tmp_path, capsys, first, copy.deepcopy(first))
    assert (code, report["identical"], report["extends"]) == (0, True, False)
    code, report = diff(tmp_path, capsys, first, claude(1100, turns=2))
    assert (code, report["identical"], report["extends"]) == (0, False, True)


def test_a_server_held_thread_is_judged_on_what_it_sends_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in ("bash", "grep")]
    first = claude(1100, tools=tools)
    thread = {"type": "continue", "previous_message_id": "msg_01"}
    follow = {
        "model": first["model"],
        "max_tokens": 64,
        "thread": thread,
        "messages": [{"role": "user", "content": "and then?"}],
    }
    assert (
        lint(
            tmp_path,
            capsys,
            first,
            follow,
            {**follow, "messages": [{"role": "user", "content": "more"}]},
        )
        == []
    )
    # near miss: the continuation sends its tools again, in another order
    moved = {**follow, "tools": tools[::-1]}
    assert lint(tmp_path, capsys, first, moved) == [("prefix-broken", "error", 1)]
    # and a continuation to another model loses the thread's cache
    other = {**follow, "model": "claude-opus-4-5"}
    assert lint(tmp_path, capsys, first, other)[0][0] == "prefix-broken"


def test_lint_counts_a_thread_continuation_as_reading_what_the_server_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = claude(1100)
    follow = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "thread": {"type": "continue", "previous_message_id": "msg_01"},
        "messages": [{"role": "user", "content": "and then?"}],
    }
    # the first request's system write is read through the thread: no write-never-read
    assert lint(tmp_path, capsys, first, follow) == []
    # near miss: a new conversation with another system prompt reads nothing of it
    fresh = claude(1200)
    fresh["messages"] = [{"role": "user", "content": "another question"}]
    assert lint(tmp_path, capsys, first, fresh) == [("write-never-read", "warning", 0)]


def image_turn(first: dict[str, Any], text: str, images: int) -> dict[str, Any]:
    """`first` continued by a reply and a marked user turn holding `images` images."""
    later = copy.deepcopy(first)
    later["messages"][0]["content"][0].pop("cache_control")
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
    }
    later["messages"] += [
        {"role": "assistant", "content": "Sure."},
        {
            "role": "user",
            "content": [*[image] * images, {"type": "text", "text": text, "cache_control": MARK}],
        },
    ]
    return later


def test_an_image_added_in_a_new_turn_loses_the_messages_cache_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "Adding/removing images anywhere in the prompt affects message blocks": the bytes extend,
    # the provider's messages level is lost all the same; tools and system stay
    first = marked_turn("Describe the chart. " + "x" * 2000)
    code, report = diff(tmp_path, capsys, first, image_turn(first, "This one.", 1))
    assert (code, report["verdict"], report["invalidated"]) == (1, "images_changed", ["messages"])
    assert report["tokens_lost"] > 400 and "the system cache stays" in report["summary"]
    # near miss: the next turn keeps its image count and adds text only: it extends
    with_image = image_turn(first, "This one.", 1)
    next_turn = copy.deepcopy(with_image)
    next_turn["messages"][-1]["content"][-1].pop("cache_control")
    next_turn["messages"] += [
        {"role": "assistant", "content": "A rising line."},
        {"role": "user", "content": [{"type": "text", "text": "Why?", "cache_control": MARK}]},
    ]
    code, report = diff(tmp_path, capsys, with_image, next_turn)
    assert (code, report["verdict"]) == (0, "extends")
    # the gate: an image sent on purpose loses the messages by the provider's design, so it is
    # reported as a warning, never a failure; a tool added the same turn is still an error
    assert lint(tmp_path, capsys, first, with_image) == [("prefix-broken", "warning", 1)]
    tooled = copy.deepcopy(with_image)
    tooled["tools"] = [{"name": "zoom", "description": "Zoom in.", "input_schema": {}}]
    assert ("prefix-broken", "error", 1) in lint(tmp_path, capsys, first, tooled)


def test_a_thinking_change_says_the_earlier_levels_some_models_lose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "tool and system-prompt breakpoints can miss too, depending on where the model renders
    # the configuration": the loss counts the messages; a note names what may go too
    first = marked_turn("Plan a trip. " + "x" * 2000)
    first["model"] = "claude-sonnet-5-5"
    thinking = {**first, "thinking": {"type": "enabled", "budget_tokens": 2000}}
    code, report = diff(tmp_path, capsys, first, thinking)
    assert (code, report["verdict"], report["invalidated"]) == (1, "thinking_changed", ["messages"])
    assert any("on some models the tools cache" in note for note in report["notes"])
    # near miss: tool_choice loses the messages only, on every model: no such note
    choice = {**first, "tool_choice": {"type": "any"}}
    code, report = diff(tmp_path, capsys, first, choice)
    assert (code, report["verdict"]) == (1, "tool_choice_changed")
    assert not any("on some models" in note for note in report.get("notes", []))


def test_an_unread_pre_warm_is_named_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def asked(at: str, max_tokens: int) -> dict[str, Any]:
        body = marked_turn(f"[request at {at}] What changed? " + "x" * 2000)
        body["max_tokens"] = max_tokens
        return body

    def unread(*bodies: dict[str, Any]) -> list[str]:
        path = tmp_path / "session.jsonl"
        path.write_text("\n".join(line(b, ANTHROPIC_URL) for b in bodies) + "\n")
        main(["lint", str(path), "--format", "json"])
        found = json.loads(capsys.readouterr().out)["findings"]
        return [f["message"] for f in found if f["rule"] == "write-never-read"]

    # a pre-warm (max_tokens 0) whose prefix the real request cannot read (a timestamp in the
    # marked block): the warning says the pre-warm bought nothing
    warmed = unread(asked("10:10", 0), asked("10:11", 1024), asked("10:12", 1024))
    assert warmed[0].startswith("the pre-warm (max_tokens) writes ~")
    # near miss: an ordinary request is an ordinary unread write
    plain = unread(asked("10:10", 1024), asked("10:11", 1024), asked("10:12", 1024))
    assert plain and all(m.startswith("the cache write of ~") for m in plain)


def test_diff_shows_the_real_difference_not_the_apis_two_spellings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the marked long form, then the string shorthand without a marker: nothing cached is lost
    # (the same system), and what differs is the marker, not the system's text
    text = "You plan trips. " * 300
    marked = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": text, "cache_control": MARK}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    short = {**marked, "system": text, "messages": [{"role": "user", "content": "hi"}]}
    _, report = diff(tmp_path, capsys, marked, short)
    assert report["tokens_lost"] == 0
    assert report["pointer"] == "/system/0/cache_control"


def test_values_python_calls_equal_but_the_bytes_do_not_are_a_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1 and 1.0 and true, or two key orders, are equal in Python and other bytes to the cache
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 1}}}
    tool = {"name": "count", "description": "Count.", "input_schema": schema}
    first = claude(1100, tools=[tool])
    same = claude(1100, turns=2, tools=[copy.deepcopy(tool)])
    assert lint(tmp_path, capsys, first, same) == []
    for changed in (1.0, True):
        other = copy.deepcopy(tool)
        other["input_schema"]["properties"]["n"]["maximum"] = changed
        later = claude(1100, turns=2, tools=[other])
        assert lint(tmp_path, capsys, first, later) == [("prefix-broken", "error", 1)]
    swapped = copy.deepcopy(tool)
    swapped["input_schema"] = {"properties": schema["properties"], "type": "object"}
    later = claude(1100, turns=2, tools=[swapped])
    assert lint(tmp_path, capsys, first, later) == [("prefix-broken", "error", 1)]
