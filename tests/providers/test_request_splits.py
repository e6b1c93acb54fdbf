"""Provider views of request bodies: each provider's cache order of blocks, the settings that key
its cache, and the prefix its caching rule covers; bodies recognised by shape, unknown ones not.

The bodies are those the capture tests send through the real SDKs (`tests/support/sdk.py`).
"""

from __future__ import annotations

import msgspec

from harness import CacheView
from harness.providers import detect_provider, split_request, view_of_body
from tests.support.sdk import ANTHROPIC_URL, CHAT_URL, RESPONSES_URL, SYSTEM, TOOLS, function_tool

# -- provider views ------------------------------------------------------------------------------


def test_anthropic_body_splits_into_tools_system_messages_with_cache_keying_settings() -> None:
    body = {
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
        "model": "claude-test",
        "metadata": {"user_id": "u1"},
        "stream": True,
        "system": SYSTEM,
        "temperature": 0.2,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "any"},
        "tools": TOOLS,
    }
    split = split_request(body, url=ANTHROPIC_URL, headers={"anthropic-beta": "b-2, b-1"})

    assert split is not None and split.provider == "anthropic"
    assert list(split.view.blocks) == ["tools", "system", "messages"]
    assert split.view.settings == {
        "anthropic-beta": ["b-2", "b-1"],
        "model": "claude-test",
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "any"},
    }
    assert split.rule == "automatic"  # no cache_control: tools and system are the prefix
    assert list(split.prefix.blocks) == ["tools", "system"]


def test_anthropic_prefix_ends_at_the_last_cache_control_breakpoint() -> None:
    mark = {"type": "ephemeral"}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "one", "cache_control": mark}]},
        {"role": "assistant", "content": "two"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "three", "cache_control": mark},
                {"type": "text", "text": "after the breakpoint"},
            ],
        },
    ]
    body = {"model": "m", "system": [{"type": "text", "text": SYSTEM}], "tools": TOOLS}
    split = split_request({**body, "messages": messages}, url=ANTHROPIC_URL)

    assert split is not None
    assert split.rule == "breakpoint"
    assert split.breakpoint == "/messages/2/content/0/cache_control"
    assert split.prefix.blocks["messages"][2]["content"] == [messages[2]["content"][0]]
    assert split.prefix_bytes < len(msgspec.json.encode(split.view.blocks))

    whole = split_request({**body, "messages": messages, "cache_control": mark}, url=ANTHROPIC_URL)
    assert whole is not None and whole.rule == "whole-request"
    assert whole.prefix == whole.view


def test_openai_chat_order_is_tools_schemas_then_leading_system_messages() -> None:
    body = {
        "model": "gpt-test",
        "messages": [
            {"role": "developer", "content": "rules"},
            {"role": "system", "content": "more rules"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "a late system message stays in place"},
        ],
        "tools": [function_tool("b"), function_tool("a")],
        "response_format": {"type": "json_object"},
        "reasoning_effort": "low",
        "prompt_cache_key": "agent-1",
        "service_tier": "priority",
        "max_completion_tokens": 100,
        "stream": True,
        "user": "u1",
    }
    split = split_request(body, url=CHAT_URL)

    assert split is not None and split.provider == "openai-chat"
    assert list(split.view.blocks) == ["tools", "response_format", "system", "messages"]
    assert [m["role"] for m in split.view.blocks["system"]] == ["developer", "system"]
    assert len(split.view.blocks["messages"]) == 2
    assert split.view.settings == {
        "model": "gpt-test",
        "prompt_cache_key": "agent-1",
        "reasoning_effort": "low",
        "service_tier": "priority",
    }
    assert split.prefix == split.view  # exact-prefix caching: the whole request


def test_deepseek_puts_system_before_tools_and_responses_use_their_own_blocks() -> None:
    body = {"model": "deepseek-chat", "messages": [{"role": "system", "content": "s"}], "tools": []}
    deepseek = split_request(body, url="https://api.deepseek.com/chat/completions")
    assert deepseek is not None and list(deepseek.view.blocks) == ["system", "tools", "messages"]

    responses = {
        "model": "gpt-test",
        "input": [{"role": "user", "content": "hi"}],
        "instructions": "be brief",
        "tools": [{"type": "function", "name": "f", "parameters": {}}],
        "text": {"format": {"type": "text"}},
        "reasoning": {"effort": "high"},
        "previous_response_id": "resp_0",
    }
    split = split_request(responses, url=RESPONSES_URL)
    assert split is not None and split.provider == "openai-responses"
    assert list(split.view.blocks) == ["tools", "response_format", "instructions", "input"]
    assert split.view.settings == {"model": "gpt-test", "reasoning": {"effort": "high"}}


def test_bodies_are_recognised_by_shape_without_a_url_and_unknown_ones_give_none() -> None:
    assert detect_provider({"system": "s", "messages": []}) == "anthropic"
    assert detect_provider({"messages": [{"role": "developer", "content": "x"}]}) == "openai-chat"
    assert detect_provider({"input": "hi"}) == "openai-responses"
    assert detect_provider({"messages": [{"role": "user", "content": "hi"}]}) is None
    assert view_of_body({"input": "text", "model": "e"}, url="https://x/v1/embeddings") is None
    assert view_of_body({"messages": []}, url=f"{ANTHROPIC_URL}/count_tokens") is None
    view = view_of_body({"system": "s", "messages": [], "model": "m"})
    assert isinstance(view, CacheView) and view.provider == "anthropic"
