"""The drift report's figures and levels to the byte (issue 35): what is kept is the common prefix
of the two prompts (settings left out), exactly; a setting that invalidates from a level on keeps
the levels before it and wins over a change at or after its level, never over one before it; a
setting whose effect is not certain loses nothing; each block only the new request has is the
change at its place, not after the blocks that follow it; a provider whose invalidation table
has two names for one level reports the one the requests use."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from harness import CacheView, canonical_bytes
from harness.drift import compare
from harness.providers import split_request
from tests.support.bodies import ANTHROPIC_URL

SETTINGS = {"model": "claude-test"}
TOOLS = [
    {"name": "bash", "description": "Run a command.", "input_schema": {"type": "object"}},
    {"name": "grep", "description": "Search files.", "input_schema": {"type": "object"}},
]
GEMINI_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
)


def encoded(value: Any) -> bytes:
    return msgspec.json.encode(value)


def generic(**blocks: Any) -> CacheView:
    return CacheView(SETTINGS, blocks)


def before_the_prompt(view: CacheView) -> int:
    """The canonical bytes before the first prompt block: `{"settings":{...},`."""
    return len(canonical_bytes(CacheView(view.settings, {})))


def prompt(view: CacheView) -> int:
    """The prompt's bytes as a report counts them: the canonical bytes less the settings."""
    return len(canonical_bytes(view)) - before_the_prompt(view) - 1


def anthropic(**extra: Any) -> CacheView:
    body = {
        "model": "claude-test",
        "max_tokens": 64,
        "tools": TOOLS,
        "system": [
            {"type": "text", "text": "You are careful.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }
    split = split_request(body, url=ANTHROPIC_URL)
    assert split is not None
    return split.view


def start_of_messages(view: CacheView) -> int:
    """Where the messages block starts in the prompt bytes (after `tools`, `system` and a comma)."""
    blocks = view.blocks
    return len(b'"tools":%b,"system":%b,' % (encoded(blocks["tools"]), encoded(blocks["system"])))


def test_what_is_kept_is_the_common_prefix_of_the_prompts_to_the_byte() -> None:
    a = generic(tools=TOOLS, system="Be careful.", messages=[{"role": "user", "content": "hi"}])
    edits = [
        generic(tools=TOOLS, system="Be careless.", messages=a.blocks["messages"]),
        generic(tools=TOOLS[::-1], system="Be careful.", messages=a.blocks["messages"]),
        generic(tools=TOOLS, system="Be careful.", messages=[{"role": "user", "content": "ho"}]),
        generic(tools=TOOLS, system="Be careful.", messages=[]),
    ]
    for b in edits:
        report = compare(a, b)
        # the report's offset is into the canonical bytes, which hold the settings first
        assert report.prefix_bytes_kept == report.offset - before_the_prompt(a), b
        assert report.prefix_bytes_kept + report.prefix_bytes_lost == prompt(b), b
        assert report.tokens_kept == report.prefix_bytes_kept // 4
    same = compare(a, a)
    assert (same.prefix_bytes_kept, same.prefix_bytes_lost) == (prompt(a), 0)


def test_a_messages_level_setting_keeps_tools_and_system_to_the_byte() -> None:
    a = anthropic(tool_choice={"type": "auto"})
    b = anthropic(tool_choice={"type": "any"})
    report = compare(a, b)
    assert (report.verdict, report.kind, report.invalidated) == (
        "tool_choice_changed",
        "settings",
        ("messages",),
    )
    assert report.prefix_bytes_kept == start_of_messages(a)
    assert report.prefix_bytes_lost == prompt(b) - start_of_messages(a)
    assert "the tools, system cache stays" in report.summary
    # a change in the messages too is lost with them: the setting is still the verdict, and
    # nothing past the start of the messages is kept
    later = anthropic(tool_choice={"type": "any"}, messages=[{"role": "user", "content": "hiya"}])
    report = compare(a, later)
    assert (report.verdict, report.invalidated) == ("tool_choice_changed", ("messages",))
    assert report.prefix_bytes_kept == start_of_messages(a)
    # near miss: a change before the setting's level is the verdict, and loses from there
    system = [{"type": "text", "text": "You are careless.", "cache_control": {"type": "ephemeral"}}]
    earlier = anthropic(tool_choice={"type": "any"}, system=system)
    report = compare(a, earlier)
    assert (report.verdict, report.invalidated) == ("system_changed", ("system", "messages"))
    assert report.prefix_bytes_kept < start_of_messages(a)


def test_a_setting_that_keys_the_whole_cache_keeps_nothing() -> None:
    report = compare(anthropic(), anthropic(model="claude-other"))
    assert (report.verdict, report.prefix_bytes_kept) == ("model_changed", 0)
    assert report.prefix_bytes_lost == prompt(anthropic(model="claude-other"))
    assert report.invalidated == ("tools", "system", "messages")


def test_a_setting_no_rule_knows_loses_nothing_for_certain() -> None:
    a, b = anthropic(), anthropic(mystery=5)
    report = compare(a, b)
    assert (report.kind, report.invalidated) == ("unknown-setting", ())
    assert (report.prefix_bytes_kept, report.prefix_bytes_lost) == (prompt(b), 0)
    # the same unknown setting beside a block change: the block is the verdict
    report = compare(a, anthropic(mystery=5, messages=[{"role": "user", "content": "ho"}]))
    assert (report.verdict, report.kind) == ("messages_changed", "messages")


def test_the_same_settings_in_another_key_order_are_named_so() -> None:
    a = CacheView({"model": "m", "max_tokens": 8}, {"system": "s"})
    b = CacheView({"max_tokens": 8, "model": "m"}, {"system": "s"})
    report = compare(a, b)
    assert not report.identical and report.block == "settings"
    assert report.settings_changed == ()
    assert "same settings in another key order" in report.summary


def test_a_block_only_the_new_request_has_is_the_change_where_it_stands() -> None:
    # tools added in front of a system and a conversation that changed too: the tools are the
    # first change, and every level is lost from them on
    a = anthropic()
    body_b = {
        "model": "claude-test",
        "max_tokens": 64,
        "tools": TOOLS,
        "system": a.blocks["system"],
        "messages": [{"role": "user", "content": "ho"}],
    }
    without_tools = {k: v for k, v in body_b.items() if k != "tools"}
    split_a = split_request(
        {**without_tools, "messages": [{"role": "user", "content": "hi"}]}, url=ANTHROPIC_URL
    )
    split_b = split_request(body_b, url=ANTHROPIC_URL)
    assert split_a is not None and split_b is not None
    report = compare(split_a.view, split_b.view)
    assert (report.verdict, report.block) == ("tools_changed", "tools")
    assert report.invalidated == ("tools", "system", "messages")
    assert report.prefix_bytes_kept < len(b'"tools"')  # the quote both prompts open with


def gemini(system_key: str, text: str, tools: tuple[str, ...] = ("a", "b")) -> CacheView:
    body = {
        "tools": [{"functionDeclarations": [{"name": name} for name in tools]}],
        system_key: {"parts": [{"text": text}]},
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    }
    split = split_request(body, url=GEMINI_URL)
    assert split is not None
    return split.view


def test_a_level_with_two_names_is_reported_by_the_name_the_requests_use() -> None:
    for key in ("system_instruction", "systemInstruction"):
        report = compare(gemini(key, "Be careful."), gemini(key, "Be careless."))
        assert report.verdict == "system_changed"
        assert report.invalidated == (key, "contents"), key
        # a change before the level names it as the requests do too
        report = compare(gemini(key, "s"), gemini(key, "s", tools=("b", "a")))
        assert report.invalidated == ("tools", key, "contents"), key


def test_a_retention_change_loses_nothing_for_certain() -> None:
    def responses(retention: str) -> CacheView:
        body = {"model": "gpt-5", "input": "hi", "prompt_cache_retention": retention}
        split = split_request(body, url="https://api.openai.com/v1/responses")
        assert split is not None
        return split.view

    a, b = responses("in_memory"), responses("24h")
    report = compare(a, b)
    assert (report.verdict, report.kind, report.invalidated) == (
        "prompt_cache_retention_changed",
        "retention",
        (),
    )
    assert (report.prefix_bytes_kept, report.prefix_bytes_lost) == (prompt(b), 0)


def test_nothing_past_the_first_differing_prompt_byte_is_kept() -> None:
    # a messages-level setting changed while the blocks moved: the cache is lost from the first
    # block out of place, before the setting's level
    a = anthropic(tool_choice={"type": "auto"})
    moved = CacheView(
        {**a.settings, "tool_choice": {"type": "any"}},
        {
            "system": a.blocks["system"],
            "tools": a.blocks["tools"],
            "messages": a.blocks["messages"],
        },
        a.provider,
    )
    report = compare(a, moved)
    assert report.verdict == "tool_choice_changed"
    assert report.prefix_bytes_kept < len(b'"tools"')
    assert report.prefix_bytes_kept + report.prefix_bytes_lost == prompt(moved)


def test_a_marker_whose_ttl_changed_is_named_for_its_ttl() -> None:
    hour = {"type": "ephemeral", "ttl": "1h"}
    b = anthropic(system=[{"type": "text", "text": "You are careful.", "cache_control": hour}])
    report = compare(anthropic(), b)
    assert (report.verdict, report.kind) == ("cache_ttl_changed", "cache-ttl")
    assert report.pointer == "/system/0/cache_control/ttl"
    assert report.invalidated == ("system", "messages")


RESPONSES_URL = "https://api.openai.com/v1/responses"


def conversation(
    *texts: str, compacted: bool = False, instructions: str = "Be brief."
) -> CacheView:
    items: list[dict[str, Any]] = []
    if compacted:
        items.append({"type": "compaction", "encrypted_content": "gAAAA-summary"})
    items += [{"role": "user", "content": [{"type": "input_text", "text": t}]} for t in texts]
    body = {"model": "gpt-5.6", "instructions": instructions, "input": items}
    split = split_request(body, url=RESPONSES_URL)
    assert split is not None
    return split.view


def test_a_conversation_the_provider_compacted_is_named_so() -> None:
    report = compare(conversation("q0"), conversation("q0", "q1", compacted=True))
    assert (report.verdict, report.kind, report.invalidated) == (
        "context_compacted",
        "compaction",
        ("input",),
    )
    # near misses: a compaction both requests hold is no news, an edit after it is an edit;
    # and a change before the conversation is that change, compaction or not
    report = compare(conversation("q0", compacted=True), conversation("q1", compacted=True))
    assert (report.verdict, report.kind) == ("input_changed", "messages")
    report = compare(
        conversation("q0"), conversation("q0", compacted=True, instructions="Be long.")
    )
    assert (report.verdict, report.kind) == ("system_changed", "text")


def tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties or {"path": {"type": "string"}}}
    return {"name": name, "description": f"The {name} tool.", "input_schema": schema}


def test_a_reorder_with_a_content_change_names_both_tools_and_the_moved_ones_plugin() -> None:
    a = generic(tools=[tool("bash"), tool("grep"), tool("read_file")], system="s")
    b = generic(tools=[tool("bash", {"x": {}}), tool("read_file"), tool("grep")], system="s")
    report = compare(a, b, owners={"bash": "core", "read_file": "fs", "grep": "search"})
    assert report.kind == "reorder-and-content"
    # the tool where the bytes first differ, and the first one out of place with its plugin
    assert (report.tool, report.pointer) == ("bash", "/tools/0/input_schema/properties")
    assert report.provenance == 'plugin "fs"'
    assert '("bash"); first out of place: "read_file" (registered by plugin "fs")' in (
        report.summary
    )


def test_the_note_on_earlier_levels_some_models_lose_comes_with_the_settings_verdict_only() -> None:
    thinking = {"type": "enabled", "budget_tokens": 2048}
    report = compare(anthropic(), anthropic(thinking=thinking))
    assert report.verdict == "thinking_changed"
    assert any("on some models the tools cache" in note for note in report.notes)
    # near miss: a system change before the thinking's level is the verdict; its loss is counted
    # from the system on, and no note says it is counted from the messages
    system = [{"type": "text", "text": "You are careless.", "cache_control": {"type": "ephemeral"}}]
    report = compare(anthropic(), anthropic(thinking=thinking, system=system))
    assert report.verdict == "system_changed"
    assert not any("some models" in note for note in report.notes)


def test_a_body_no_provider_recognises_is_compared_whole_and_says_so() -> None:
    from harness import prove_stable
    from harness.prove._run_diff import HeaderDrift

    def build(order: list[str]) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": "hi"}], "enabled": order}

    with pytest.raises(HeaderDrift) as caught:  # the order reaches the body
        prove_stable(build, ["a", "b", "c"], permutations=2)
    report = caught.value.report
    assert report is not None
    assert (report.kind, report.block, report.invalidated) == ("opaque", "body", ("body",))
    assert "no provider recognised this request" in " ".join(report.notes)


def test_a_level_only_the_new_request_holds_is_named_as_that_request_names_it() -> None:
    def bare(system_key: str | None, tools: tuple[str, ...] = ("a", "b")) -> CacheView:
        body: dict[str, Any] = {
            "tools": [{"functionDeclarations": [{"name": name} for name in tools]}],
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        }
        if system_key is not None:
            body[system_key] = {"parts": [{"text": "Be careful."}]}
        split = split_request(body, url=GEMINI_URL)
        assert split is not None
        return split.view

    for key in ("system_instruction", "systemInstruction"):
        # the tools moved, and a system instruction only the new request has follows them
        report = compare(bare(None), bare(key, tools=("b", "a")))
        assert report.verdict == "tools_changed"
        assert report.invalidated == ("tools", key, "contents"), key


def test_a_block_the_invalidation_table_does_not_name_loses_every_level() -> None:
    # a view made by hand, with a block Anthropic's table has no level for: what a change there
    # invalidates is not known, so every level of the table is lost (never none)
    def notes(text: str) -> CacheView:
        return CacheView(SETTINGS, {"system": "s", "notes": text}, "anthropic")

    report = compare(notes("a"), notes("b"))
    assert report.block == "notes"
    assert report.invalidated == ("tools", "system", "messages")

    # near miss: a block another provider names for a level of the table (OpenAI's
    # `instructions` are a system prompt) is that level: the tools before it are kept
    def instructions(text: str) -> CacheView:
        return CacheView(SETTINGS, {"tools": TOOLS, "instructions": text}, "anthropic")

    report = compare(instructions("a"), instructions("b"))
    assert (report.block, report.invalidated) == ("instructions", ("system", "messages"))


def test_the_note_on_earlier_levels_says_which_level_the_loss_is_counted_from() -> None:
    thinking = {"type": "enabled", "budget_tokens": 2048}
    report = compare(anthropic(), anthropic(thinking=thinking))
    assert report.notes == (
        "on some models the tools cache (and what follows it) is lost too; the loss counted is"
        " from the messages level on",
    )
    # near miss: a setting of the same level whose row names no earlier level gets no note
    report = compare(
        anthropic(tool_choice={"type": "auto"}), anthropic(tool_choice={"type": "any"})
    )
    assert (report.verdict, report.notes) == ("tool_choice_changed", ())


def test_a_system_prompt_added_between_tools_and_messages_is_the_change_there() -> None:
    hi = [{"role": "user", "content": "hi"}]
    a = generic(tools=TOOLS, messages=hi)
    for messages in (hi, [{"role": "user", "content": "ho"}]):  # the conversation changed too
        b = generic(tools=TOOLS, system="Be careful.", messages=messages)
        report = compare(a, b)
        assert (report.verdict, report.block) == ("system_changed", "system")
        assert report.invalidated == ("system", "messages")
        assert report.prefix_bytes_kept == len(b'"tools":%b,"' % encoded(TOOLS))
    # near miss: a conversation added after the last block is the change at the end, and loses
    # nothing before it
    b = generic(tools=TOOLS, messages=hi)
    report = compare(generic(tools=TOOLS), b)
    assert (report.verdict, report.invalidated) == ("messages_changed", ("messages",))
    assert report.prefix_bytes_kept == len(b'"tools":%b' % encoded(TOOLS))


def test_a_setting_set_to_null_is_a_setting_changed() -> None:
    a = CacheView({"model": "m"}, {"system": "s"})
    b = CacheView({"model": "m", "temperature": None}, {"system": "s"})
    report = compare(a, b)
    assert (report.block, report.settings_changed) == ("settings", ("temperature",))


def test_a_body_recognised_in_one_order_only_still_says_the_other_was_not() -> None:
    from harness import prove_stable
    from harness.prove._run_diff import HeaderDrift

    def build(order: list[str]) -> dict[str, Any]:
        hi = [{"role": "user", "content": "hi"}]
        if order[0] == "a":  # the natural order: a body no provider recognises
            return {"messages": hi, "enabled": order}
        return {"model": "claude-test", "max_tokens": 8, "messages": hi}

    with pytest.raises(HeaderDrift) as caught:
        prove_stable(build, ["a", "b", "c"], permutations=2)
    report = caught.value.report
    assert report is not None and report.verdict == "model_changed"
    assert report.notes == ("no provider recognised this request; its bytes are compared whole",)
