"""Gemini bodies camelCase (google-genai) and snake_case (litellm) alike, and streamed usage.

Tool names come from `functionDeclarations` or `function_declarations`; the tool-order table marks
the row that changed (not the declaration group's row 0); the cache signal is read from a JSON-array
stream and from `alt=sse` events.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from harness._shared._body_text import response_events
from harness.drift import compare
from harness.providers import cache_usage, split_request

URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
NAMES = ("alpha", "beta", "gamma", "delta", "epsilon")


def body(names: tuple[str, ...], *, snake: bool, changed: str | None = None) -> dict[str, Any]:
    group = "function_declarations" if snake else "functionDeclarations"
    functions = [{"name": n, "description": "new" if n == changed else n} for n in names]
    return {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        ("system_instruction" if snake else "systemInstruction"): {"parts": [{"text": "sys"}]},
        "tools": [{group: functions}],
        ("cached_content" if snake else "cachedContent"): "cachedContents/abc",
    }


def report(a: dict[str, Any], b: dict[str, Any]) -> Any:
    split_a, split_b = split_request(a, url=URL), split_request(b, url=URL)
    assert split_a is not None and split_b is not None
    return compare(split_a.view, split_b.view)


@pytest.mark.parametrize("snake", [True, False])
def test_tool_names_come_from_the_function_declarations(snake: bool) -> None:
    found = report(body(NAMES, snake=snake), body((*NAMES[:3], "zeta", *NAMES[4:]), snake=snake))
    assert found.tools_a == NAMES and found.tools_removed == ("delta",)
    assert not any(name.startswith("<unnamed") for name in found.tools_b)


@pytest.mark.parametrize("snake", [True, False])
def test_the_cached_content_name_is_a_setting(snake: bool) -> None:
    split = split_request(body(NAMES, snake=snake), url=URL)
    assert split is not None
    key = "cached_content" if snake else "cachedContent"
    assert split.view.settings[key] == "cachedContents/abc"
    moved = {**body(NAMES, snake=snake), key: "cachedContents/other"}
    assert report(body(NAMES, snake=snake), moved).block == "settings"


@pytest.mark.parametrize("snake", [True, False])
def test_the_changed_row_is_marked_not_the_group_row(snake: bool) -> None:
    found = report(body(NAMES, snake=snake), body(NAMES, snake=snake, changed="delta"))
    assert found.kind == "content" and found.tool == "delta"
    marked = [line for line in found.to_text().splitlines() if "<- changed here" in line]
    assert marked == [marked[0]] and "delta" in marked[0] and marked[0].lstrip().startswith("> 3")
    assert "**3** (changed here)" in found.to_markdown()


def test_a_reorder_marks_the_first_row_out_of_place() -> None:
    moved = ("alpha", "beta", "delta", "gamma", "epsilon")
    found = report(body(NAMES, snake=True), body(moved, snake=True))
    assert found.kind == "reorder"
    assert "same tool names in the same order" not in found.to_text()
    assert "> 2  gamma" in found.to_text()


CHUNKS = [
    {"candidates": [{"content": {"parts": [{"text": "Hel"}]}}]},
    {
        "candidates": [{"content": {"parts": [{"text": "lo"}]}}],
        "usageMetadata": {"promptTokenCount": 5000, "cachedContentTokenCount": 4096},
    },
]


def usage_of(events: list[Any]) -> tuple[int, int]:
    found = [cache_usage("gemini", event) for event in events]
    best = max((u for u in found if u is not None), key=lambda u: u.read_tokens)
    return best.read_tokens, best.uncached_tokens or 0


def test_the_cache_signal_is_read_from_a_json_array_stream() -> None:
    text = "[" + ",\r\n".join(msgspec.json.encode(c).decode() for c in CHUNKS) + "]"
    assert usage_of(response_events(msgspec.UNSET, text, msgspec.UNSET)) == (4096, 904)


def test_the_cache_signal_is_read_from_sse_events() -> None:
    lines = tuple(f"data: {msgspec.json.encode(c).decode()}" for c in CHUNKS)
    assert usage_of(response_events(msgspec.UNSET, msgspec.UNSET, lines)) == (4096, 904)
    text = "\r\n\r\n".join(lines)
    assert usage_of(response_events(msgspec.UNSET, text, msgspec.UNSET)) == (4096, 904)


def test_snake_case_usage_is_read_too() -> None:
    usage = cache_usage(
        "gemini",
        {"usage_metadata": {"prompt_token_count": 10, "cached_content_token_count": 8}},
    )
    assert usage is not None and (usage.read_tokens, usage.uncached_tokens) == (8, 2)
