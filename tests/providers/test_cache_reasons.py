"""Settings that break a cache are named, in the provider's own words where it has them.

Every report here used to say `model_changed` and "all prompt bytes lost", whatever setting moved:
a reasoning effort, a service tier, a `prompt_cache_key`, a beta header, a tool choice. Anthropic
keeps its tools and system caches when only `tool_choice` or `thinking` changes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness._shared._views import CacheView
from harness.drift import compare
from harness.providers import split_request

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"

TOOLS = [
    {"name": "bash", "description": "Run a command.", "input_schema": {"type": "object"}},
    {"name": "grep", "description": "Search files.", "input_schema": {"type": "object"}},
]


def view(body: dict[str, Any], url: str, headers: dict[str, str] | None = None) -> CacheView:
    split = split_request(body, url=url, headers=headers)
    assert split is not None
    return split.view


def anthropic(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 64,
        "system": [
            {"type": "text", "text": "You are careful.", "cache_control": {"type": "ephemeral"}}
        ],
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def chat(**extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "messages": [{"role": "developer", "content": "rules"}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        **extra,
    }


def responses(**extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "instructions": "be brief", "input": "hi", **extra}


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        (chat(reasoning_effort="low"), chat(reasoning_effort="high"), "reasoning_effort_changed"),
        (chat(service_tier="auto"), chat(service_tier="priority"), "service_tier_changed"),
        (
            chat(prompt_cache_key="agent-1"),
            chat(prompt_cache_key="agent-2"),
            "prompt_cache_key_changed",
        ),
        (
            chat(parallel_tool_calls=True),
            chat(parallel_tool_calls=False),
            "parallel_tool_calls_changed",
        ),
        (chat(), chat(model="gpt-other"), "model_changed"),
    ],
    ids=["effort", "tier", "cache-key", "parallel", "model"],
)
def test_openai_chat_settings_are_named(
    before: dict[str, Any], after: dict[str, Any], verdict: str
) -> None:
    report = compare(view(before, CHAT_URL), view(after, CHAT_URL))
    assert (report.block, report.verdict) == ("settings", verdict)
    assert report.prefix_bytes_kept == 0  # OpenAI caches the exact prefix: all of it is lost
    assert report.summary.startswith(f"{verdict}: settings changed (")


def test_an_openai_tool_choice_change_keeps_the_prefix() -> None:
    # the guide: "Disable tool use for a request. Set tool_choice to "none" instead of removing
    # the tool definitions": it is how to change tool use without touching the cached prefix
    report = compare(
        view(chat(tool_choice="auto"), CHAT_URL), view(chat(tool_choice="none"), CHAT_URL)
    )
    assert report.identical
    moved = compare(view(chat(), CHAT_URL), view(chat(parallel_tool_calls=False), CHAT_URL))
    assert moved.verdict == "parallel_tool_calls_changed"  # its near miss


def test_responses_uses_its_own_diagnostics_words() -> None:
    effort = compare(
        view(responses(reasoning={"effort": "low"}), RESPONSES_URL),
        view(responses(reasoning={"effort": "high"}), RESPONSES_URL),
    )
    assert effort.verdict == "reasoning_effort_changed"
    edited = compare(view(responses(), RESPONSES_URL), view(responses(input="bye"), RESPONSES_URL))
    assert edited.verdict == "input_changed"
    text = {"format": {"type": "text"}}
    other = {"format": {"type": "json_object"}}
    fmt = compare(
        view(responses(text=text), RESPONSES_URL), view(responses(text=other), RESPONSES_URL)
    )
    assert fmt.verdict == "text_format_changed"


def test_anthropic_tool_choice_and_thinking_keep_the_tools_and_system_caches() -> None:
    for key, a, b in (
        ("tool_choice", {"type": "auto"}, {"type": "any"}),
        ("thinking", {"type": "disabled"}, {"type": "enabled", "budget_tokens": 2048}),
    ):
        report = compare(
            view(anthropic(**{key: a}), ANTHROPIC_URL), view(anthropic(**{key: b}), ANTHROPIC_URL)
        )
        assert report.verdict == f"{key}_changed"
        assert report.block == "settings" and report.settings_changed == (key,)
        assert report.invalidated == ("messages",)
        assert report.prefix_bytes_kept > len(str(TOOLS))  # tools and system stay cached
        assert "the tools, system cache stays" in report.summary


def test_anthropic_speed_keeps_the_tools_cache_and_loses_system_and_messages() -> None:
    report = compare(view(anthropic(), ANTHROPIC_URL), view(anthropic(speed="fast"), ANTHROPIC_URL))
    assert report.verdict == "model_changed"  # the diagnostics' word for the model or speed
    assert report.invalidated == ("system", "messages")
    assert report.prefix_bytes_kept >= len(json.dumps(TOOLS, separators=(",", ":")))


def test_anthropic_model_and_beta_headers_lose_everything() -> None:
    base = view(anthropic(), ANTHROPIC_URL)
    for other, verdict in (
        (view(anthropic(model="claude-other"), ANTHROPIC_URL), "model_changed"),
        (
            view(anthropic(), ANTHROPIC_URL, {"anthropic-beta": "context-1m"}),
            "beta_headers_changed",
        ),
    ):
        report = compare(base, other)
        assert (report.verdict, report.prefix_bytes_kept) == (verdict, 0)
        assert report.invalidated == ("tools", "system", "messages")


def test_a_model_change_wins_over_a_tool_choice_change() -> None:
    a = view(anthropic(tool_choice={"type": "auto"}), ANTHROPIC_URL)
    b = view(anthropic(tool_choice={"type": "any"}, model="claude-other"), ANTHROPIC_URL)
    report = compare(a, b)
    assert report.verdict == "model_changed" and report.prefix_bytes_kept == 0
    assert report.settings_changed == ("model", "tool_choice")


def test_a_tools_change_before_a_messages_level_setting_is_the_tools_verdict() -> None:
    a = view(anthropic(tool_choice={"type": "auto"}), ANTHROPIC_URL)
    b = view(anthropic(tool_choice={"type": "any"}, tools=TOOLS[::-1]), ANTHROPIC_URL)
    report = compare(a, b)
    assert (report.verdict, report.block, report.kind) == ("tools_changed", "tools", "reorder")


def test_a_cache_control_ttl_change_is_named() -> None:
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    system = [{"type": "text", "text": "You are careful.", "cache_control": one_hour}]
    report = compare(
        view(anthropic(), ANTHROPIC_URL), view(anthropic(system=system), ANTHROPIC_URL)
    )
    assert (report.verdict, report.kind) == ("cache_ttl_changed", "cache-ttl")
    assert report.pointer == "/system/0/cache_control/ttl"
    assert report.invalidated == ("system", "messages")
