"""Settings as the providers document them, per model: a value that spells the default is the
same cache key as leaving the field out, `speed` keeps the tools cache, thinking and effort lose
the messages (and, on some models, more), a pre-warm request is not a broken prefix, Bedrock speaks
its own vocabulary, and a TTL is one the API and the model accept.

Through `harness lint` where the verdict already reads the rows (the view is built from them);
through `harness.rules.rules_pack()` for the rows the cache model reads (`Pack.setting`,
`Pack.first(Ttl | Caching | Lookback, provider, model, surface)`). The checks that need the cache
model (`harness.cache`) read the rows through `harness lint` and `harness cost` too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.providers._pack import Caching, Lookback, Ttl
from harness.rules import rules_pack
from tests.support.bodies import ANTHROPIC_URL, MARK, RESPONSES_URL, claude, line, sized

SONNET_45 = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str
) -> tuple[int, list[tuple[str, str, int]], list[str]]:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["lint", str(path), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return (
        code,
        [(f["rule"], f["severity"], f["request"]) for f in found],
        [f["message"] for f in found],
    )


def talk(turns: int, model: str, **extra: Any) -> dict[str, Any]:
    """A Messages conversation that caches its system and its newest turn."""
    body = claude(1100, model=model, **extra)
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        messages.append({"role": "user", "content": [{"type": "text", "text": "q" * 400}]})
    messages[-1]["content"][-1]["cache_control"] = MARK
    body["messages"] = messages
    return body


def pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, first: Any, second: Any
) -> tuple[int, list[tuple[str, str, int]], list[str]]:
    """Two turns of one conversation, the second with other settings."""
    return lint(
        tmp_path,
        capsys,
        line(talk(1, model, **first), ANTHROPIC_URL),
        line(talk(2, model, **second), ANTHROPIC_URL),
    )


# -- the default, spelled out, is the same cache key as leaving it out ---------------------------


def test_thinking_disabled_is_thinking_left_out_where_it_is_off_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    off = {"thinking": {"type": "disabled"}}
    assert pair(tmp_path, capsys, "claude-opus-4-8", {}, off)[:2] == (0, [])
    assert pair(tmp_path, capsys, "claude-sonnet-4-6", off, {})[:2] == (0, [])
    # near miss: Opus 5 thinks by default, so disabling it is a change
    code, found, messages = pair(tmp_path, capsys, "claude-opus-5", {}, off)
    assert (code, found) == (1, [("prefix-broken", "error", 1)])
    assert messages[0].startswith("thinking_changed:")


def test_thinking_adaptive_is_thinking_left_out_where_it_is_on_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adaptive = {"thinking": {"type": "adaptive"}}
    assert pair(tmp_path, capsys, "claude-opus-5", {}, adaptive)[:2] == (0, [])
    # near miss: Opus 4.8 does not think unless asked
    assert pair(tmp_path, capsys, "claude-opus-4-8", {}, adaptive)[1] == [
        ("prefix-broken", "error", 1)
    ]


def test_the_models_default_effort_is_effort_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def effort(level: str) -> dict[str, Any]:
        return {"output_config": {"effort": level}}

    assert pair(tmp_path, capsys, "claude-sonnet-5", {}, effort("high"))[:2] == (0, [])
    assert pair(tmp_path, capsys, "claude-opus-5-5", {}, effort("medium"))[:2] == (0, [])
    assert pair(tmp_path, capsys, "claude-opus-5-5", {"output_config": {}}, {})[:2] == (0, [])
    # near misses: another level, and high where the default is medium
    for model, level in (("claude-sonnet-5", "low"), ("claude-opus-5-5", "high")):
        code, found, messages = pair(tmp_path, capsys, model, {}, effort(level))
        assert (code, found) == (1, [("prefix-broken", "error", 1)]), (model, level)
        assert messages[0].startswith("effort_changed:")


def test_tool_choice_auto_is_tool_choice_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = {"tools": [{"name": "bash", "input_schema": {"type": "object"}}]}
    auto = {**tools, "tool_choice": {"type": "auto"}}
    assert pair(tmp_path, capsys, "claude-sonnet-5", tools, auto)[:2] == (0, [])
    anything = {**tools, "tool_choice": {"type": "any"}}
    assert pair(tmp_path, capsys, "claude-sonnet-5", tools, anything)[1] == [
        ("prefix-broken", "error", 1)
    ]


# -- speed, pre-warm ------------------------------------------------------------------------------


def test_a_speed_change_keeps_the_tools_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"name": "bash", "description": "Run it.", "input_schema": {"type": "object"}}]
    code, found, messages = pair(
        tmp_path, capsys, "claude-opus-4-8", {"tools": tools}, {"tools": tools, "speed": "fast"}
    )
    assert (code, found) == (1, [("prefix-broken", "error", 1)])
    assert "the tools cache stays" in messages[0]
    assert "cached tokens" in messages[0] and "lost" in messages[0]  # the system's and on
    row = rules_pack().setting("anthropic", "speed", "claude-opus-4-8")
    assert row is not None and (row.level, row.may_reach) == ("system", "")


def responses_turn(*texts: str, **extra: Any) -> dict[str, Any]:
    shared = sized({"type": "input_text", "text": ""}, 1100)
    shared["prompt_cache_breakpoint"] = {"mode": "explicit"}
    items: list[dict[str, Any]] = [{"role": "developer", "content": [shared]}]
    items += [{"role": "user", "content": [{"type": "input_text", "text": t}]} for t in texts]
    return {"model": "gpt-5.6", "input": items, **extra}


def test_an_openai_prewarm_followed_by_the_real_request_is_not_a_broken_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prewarm = responses_turn(prompt_cache_options={"prewarm": True})
    real = responses_turn("The user's question")
    found = lint(tmp_path, capsys, line(prewarm, RESPONSES_URL), line(real, RESPONSES_URL))[1]
    assert ("prefix-broken", "warning", 1) not in found and (
        "prefix-broken",
        "error",
        1,
    ) not in found
    row = rules_pack().setting("openai-responses", "prompt_cache_options.prewarm", "gpt-5.6")
    assert row is not None and row.effect == "bookkeeping" and row.prewarm == (True,)
    # near miss: a prompt_cache_key that moves between the two is a break
    moved = responses_turn("The user's question", prompt_cache_key="other")
    keyed = responses_turn(prompt_cache_options={"prewarm": True}, prompt_cache_key="one")
    found = lint(tmp_path, capsys, line(keyed, RESPONSES_URL), line(moved, RESPONSES_URL))[1]
    assert ("prefix-broken", "error", 1) in found


def test_anthropic_max_tokens_zero_is_a_prewarm_and_bookkeeping() -> None:
    row = rules_pack().setting("anthropic", "max_tokens", "claude-opus-5")
    assert row is not None and row.effect == "bookkeeping" and row.prewarm == (0,)


# -- Bedrock in its own vocabulary ---------------------------------------------------------------


def bedrock_url(model: str = SONNET_45) -> str:
    return f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/converse"


def converse_talk(turns: int, **extra: Any) -> dict[str, Any]:
    """A Converse conversation that caches its system and its newest turn."""
    system = [sized({"text": ""}, 1100), {"cachePoint": {"type": "default"}}]
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": [{"text": f"answer {turn}"}]})
        messages.append({"role": "user", "content": [{"text": "q" * 400}]})
    messages[-1]["content"].append({"cachePoint": {"type": "default"}})
    tools = [{"toolSpec": {"name": "bash", "inputSchema": {"json": {"type": "object"}}}}]
    body: dict[str, Any] = {"system": system, "messages": messages, "toolConfig": {"tools": tools}}
    choice = extra.pop("toolChoice", None)
    if choice is not None:
        body["toolConfig"]["toolChoice"] = choice
    return {**body, **extra}


def bedrock_pair(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    first: Any,
    second: Any,
    model: str = SONNET_45,
) -> tuple[int, list[tuple[str, str, int]], list[str]]:
    url = bedrock_url(model)
    return lint(
        tmp_path,
        capsys,
        line(converse_talk(1, **first), url),
        line(converse_talk(2, **second), url),
    )


@pytest.mark.parametrize(
    "default",
    [
        {"toolChoice": {"auto": {}}},
        {"additionalModelRequestFields": {"thinking": {"type": "disabled"}}},
        {"outputConfig": {"effort": "high"}},
        {"inferenceConfig": {"maxTokens": 512, "temperature": 0.2}},
    ],
    ids=["toolChoice-auto", "thinking-disabled", "effort-default", "inferenceConfig"],
)
def test_bedrock_settings_equal_to_their_absence_keep_the_cache(
    default: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bedrock_pair(tmp_path, capsys, {}, default)[:2] == (0, [])
    assert bedrock_pair(tmp_path, capsys, default, {})[:2] == (0, [])


@pytest.mark.parametrize(
    ("change", "word"),
    [
        ({"toolChoice": {"any": {}}}, "tool_choice_changed"),
        (
            {
                "additionalModelRequestFields": {
                    "thinking": {"type": "enabled", "budget_tokens": 2048}
                }
            },
            "thinking_changed",
        ),
        ({"outputConfig": {"effort": "low"}}, "effort_changed"),
    ],
    ids=["toolChoice-any", "thinking-enabled", "effort-low"],
)
def test_bedrock_settings_that_differ_from_their_absence_break(
    change: dict[str, Any], word: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found, messages = bedrock_pair(tmp_path, capsys, {}, change)
    assert (code, found) == (1, [("prefix-broken", "error", 1)])
    assert messages[0].startswith(f"{word}:")


def test_bedrock_opus_5_5_defaults_to_medium_effort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    opus = "us.anthropic.claude-opus-5-5"
    medium = {"outputConfig": {"effort": "medium"}}
    assert bedrock_pair(tmp_path, capsys, {}, medium, model=opus)[:2] == (0, [])
    high = {"outputConfig": {"effort": "high"}}
    assert bedrock_pair(tmp_path, capsys, {}, high, model=opus)[1] == [
        ("prefix-broken", "error", 1)
    ]


def test_a_longer_ttl_after_a_shorter_one_is_refused_on_bedrock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = converse_talk(1)  # the system's cache point: 5m (the default)
    body["messages"][-1]["content"][-1] = {"cachePoint": {"type": "default", "ttl": "1h"}}
    code, found, messages = lint(tmp_path, capsys, line(body, bedrock_url()))
    assert (code, found) == (1, [("ttl-order", "error", 0)])
    assert "the API refuses the request" in messages[0]
    right = converse_talk(1)
    right["system"][-1] = {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert lint(tmp_path, capsys, line(right, bedrock_url()))[:2] == (0, [])


# -- the rows the cache model reads: the API -------------------------------------------------------


def test_settings_are_looked_up_per_model_and_surface() -> None:
    pack = rules_pack()
    off = pack.setting("anthropic", "thinking", "claude-opus-4-8")
    on = pack.setting("anthropic", "thinking", "claude-opus-5")
    anyone = pack.setting("anthropic", "thinking")
    assert off is not None and off.absent == ({"type": "disabled"},)
    assert on is not None and on.absent == ({"type": "adaptive"},)
    assert anyone is not None and anyone.absent == ()
    for row in (off, on, anyone):
        assert (row.effect, row.word, row.level, row.may_reach) == (
            "keys-cache",
            "thinking_changed",
            "messages",
            "tools",
        )
    assert pack.settings("anthropic")["thinking"] is anyone  # Pack.settings: model-independent
    effort = pack.setting("anthropic", "output_config.effort", "claude-haiku-5-5")
    assert effort is not None and effort.absent == ("medium",)
    # a format comes with a system prompt of its own (structured outputs): system level on
    for field, level in (("output_config.format", "system"), ("context_management", "messages")):
        row = pack.setting("anthropic", field, "claude-opus-5")
        assert row is not None and (row.effect, row.level) == ("keys-cache", level), field
    claude = pack.setting("bedrock", "toolChoice", SONNET_45)
    llama = pack.setting("bedrock", "toolChoice", "meta.llama3-70b-instruct-v1:0")
    assert claude is not None and (claude.level, claude.absent) == ("messages", ({"auto": {}},))
    assert llama is not None and (llama.level, llama.absent) == ("", ({"auto": {}},))
    assert pack.setting("anthropic", "no-such-field", "claude-opus-5") is None


def test_ttls_are_the_values_each_api_and_model_accepts() -> None:
    pack = rules_pack()

    def values(provider: str, model: str | None, surface: str = "") -> tuple[str, ...]:
        row = pack.first(Ttl, provider, model, surface)
        assert row is not None, (provider, model, surface)
        return row.values

    old = "anthropic.claude-3-7-sonnet-20250219-v1:0"
    assert values("bedrock", old) == ("5m",)
    assert values("anthropic", old, "bedrock") == ("5m",)  # Claude through InvokeModel
    assert values("bedrock", SONNET_45) == ("1h", "5m")
    assert values("anthropic", "claude-3-7-sonnet-20250219", "claude-api") == ("1h", "5m")
    assert values("openai-responses", "gpt-5.6") == ("12h", "30m")  # the model page prices 12h
    bedrock = pack.first(Ttl, "bedrock", SONNET_45)
    assert bedrock is not None and (bedrock.order, bedrock.out_of_order) == (
        "longer-first",
        "refused",
    )


def test_bedrock_caches_claude_implicitly_and_the_legacy_integration_refuses_automatic() -> None:
    pack = rules_pack()
    claude = pack.first(Caching, "bedrock", SONNET_45)
    llama = pack.first(Caching, "bedrock", "meta.llama3-70b-instruct-v1:0")
    assert claude is not None and (claude.mode, claude.marker) == ("automatic", "cachePoint")
    assert llama is not None and llama.mode == "breakpoints"
    legacy = pack.first(Caching, "anthropic", "claude-sonnet-4-6", "bedrock")
    current = pack.first(Caching, "anthropic", "claude-opus-4-7", "bedrock")
    api = pack.first(Caching, "anthropic", "claude-sonnet-4-6", "claude-api")
    assert legacy is not None and legacy.automatic_marker == ""
    assert current is not None and current.automatic_marker == "cache_control"
    assert api is not None and (api.mode, api.automatic_marker) == ("breakpoints", "cache_control")


def test_the_claude_api_counts_a_run_of_tool_blocks_as_one_lookback_position() -> None:
    api = rules_pack().first(Lookback, "anthropic", "claude-opus-5", "claude-api")
    vertex = rules_pack().first(Lookback, "anthropic", "claude-opus-5", "vertex")
    assert api is not None and api.runs == ("tool_use", "tool_result") and api.reach == 20
    assert vertex is not None and vertex.runs == ()


def test_a_claude_request_on_bedrock_with_no_cache_point_is_cached_implicitly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = converse_talk(1)
    body["system"] = body["system"][:1]
    body["messages"][-1]["content"] = body["messages"][-1]["content"][:1]
    found = lint(tmp_path, capsys, line(body, bedrock_url()))[1]
    assert ("no-breakpoint", "warning", 0) not in found


def test_a_1h_cache_point_on_a_model_without_it_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = converse_talk(1)
    body["system"][-1] = {"cachePoint": {"type": "default", "ttl": "1h"}}
    url = bedrock_url("anthropic.claude-3-7-sonnet-20250219-v1:0")
    code, found, _ = lint(tmp_path, capsys, line(body, url))
    assert code == 1 and any(rule == "error" for _, rule, _ in found)
