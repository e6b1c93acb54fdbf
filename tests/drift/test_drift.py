"""The drift report: verdicts in cache order, pointers that agree with byte offsets, renderings."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import CacheView, canonical_bytes, view_of_header, view_of_request
from harness.agent import LlmConfig, Message, Request, TextBlock, ToolSchema, canonical_header
from harness.drift import (
    DriftReport,
    Reproduce,
    compare,
    compare_values,
    first_difference,
    volatile_hints,
)
from tests.support.pointer_oracle import MISSING, child, member_span, pointer_tokens
from tests.support.properties import examples

# -- builders -----------------------------------------------------------------------------------

SETTINGS = {"provider": "anthropic", "model": "claude-test"}
SYSTEM = "You are a careful coding agent.\nWork in small steps."
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "List the files."}]}]


def tool(name: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {
            "type": "object",
            "properties": properties if properties is not None else {"path": {"type": "string"}},
        },
    }


NAMES = ["bash", "grep", "read_file", "write_file", "todo_write"]
TOOLS = [tool(name) for name in NAMES]


def view(
    tools: list[Any] | None = None,
    system: str | None = SYSTEM,
    messages: list[Any] | None = None,
    settings: dict[str, Any] | None = None,
) -> CacheView:
    blocks: dict[str, Any] = {"tools": TOOLS if tools is None else tools}
    if system is not None:
        blocks["system"] = system
    blocks["messages"] = MESSAGES if messages is None else messages
    return CacheView(settings=SETTINGS if settings is None else settings, blocks=blocks)


def tools_by_name(*names: str) -> list[dict[str, Any]]:
    return [tool(name) for name in names]


def assert_offset_agrees(report: DriftReport, a: CacheView, b: CacheView) -> None:
    bytes_a, bytes_b = canonical_bytes(a), canonical_bytes(b)
    offset = report.offset
    assert 0 <= offset <= min(len(bytes_a), len(bytes_b))
    assert bytes_a[:offset] == bytes_b[:offset]
    assert bytes_a[offset : offset + 1] != bytes_b[offset : offset + 1]


# -- verdicts -----------------------------------------------------------------------------------


def test_identical_views_report_no_drift_and_keep_the_whole_prompt() -> None:
    report = compare(view(), view())
    assert report.identical
    assert report.verdict is None and report.kind is None and report.invalidated == ()
    assert report.offset == -1 and report.pointer == ""
    assert report.prefix_bytes_lost == 0
    assert report.prefix_bytes_kept > len(msgspec.json.encode(TOOLS))
    assert report.tokens_kept == report.prefix_bytes_kept // 4
    assert report.summary.startswith("identical")
    assert report.deepdiff == {}


def test_tools_reorder_names_the_first_tool_out_of_place_and_its_plugin() -> None:
    a = view(tools_by_name("bash", "grep", "read_file", "write_file"))
    b = view(tools_by_name("bash", "read_file", "grep", "write_file"))
    report = compare(a, b, owners={"read_file": "fs", "grep": "search", "bash": None})
    assert report.verdict == "tools_changed"
    assert report.block == "tools"
    assert report.kind == "reorder"
    assert report.invalidated == ("tools", "system", "messages")
    assert report.tool == "read_file"
    assert report.provenance == 'plugin "fs"'
    assert report.pointer == "/tools/1/name"
    assert report.tools_a == ("bash", "grep", "read_file", "write_file")
    assert report.tools_b == ("bash", "read_file", "grep", "write_file")
    assert report.tools_added == () and report.tools_removed == ()
    assert report.summary.startswith(
        'tools_changed: tools reordered; first out of place: "read_file"'
        ' (registered by plugin "fs") at /tools/1, byte '
    )
    assert f"byte {report.offset};" in report.summary
    assert_offset_agrees(report, a, b)


def test_a_same_name_tool_whose_properties_changed_is_pointed_at_exactly() -> None:
    changed = [*TOOLS]
    changed[3] = tool("write_file", {"file_path": {"type": "string"}})
    a, b = view(), view(changed)
    report = compare(a, b)
    assert report.verdict == "tools_changed"
    assert report.kind == "content"
    assert report.pointer == "/tools/3/parameters/properties"
    assert report.tool == "write_file"
    assert report.invalidated == ("tools", "system", "messages")
    assert '"write_file"' in report.summary
    assert_offset_agrees(report, a, b)


def test_a_changed_property_type_points_below_the_properties() -> None:
    changed = [*TOOLS]
    changed[2] = tool("read_file", {"path": {"type": "integer"}})
    report = compare(view(), view(changed))
    assert report.pointer == "/tools/2/parameters/properties/path/type"
    assert report.tool == "read_file" and report.kind == "content"


def test_a_tool_added_at_the_end() -> None:
    a, b = view(), view([*TOOLS, tool("web_fetch")])
    report = compare(a, b, owners={"web_fetch": "web"})
    assert report.verdict == "tools_changed"
    assert report.kind == "added"
    assert report.tools_added == ("web_fetch",)
    assert report.tools_removed == ()
    assert report.pointer == "/tools/5"
    assert report.tool == "web_fetch"
    assert report.provenance == 'plugin "web"'
    assert "added" in report.summary and '"web_fetch"' in report.summary
    assert_offset_agrees(report, a, b)


def test_a_tool_removed_from_the_middle() -> None:
    a = view()
    b = view([t for t in TOOLS if t["name"] != "grep"])
    report = compare(a, b)
    assert report.kind == "removed"
    assert report.tools_removed == ("grep",)
    assert report.tools_added == ()
    assert report.pointer == "/tools/1/name"
    assert report.tool == "read_file"  # tool 1 on side b
    assert "removed" in report.summary
    assert_offset_agrees(report, a, b)


def test_tools_added_and_removed() -> None:
    report = compare(view(), view([*TOOLS[:-1], tool("web_fetch")]))
    assert report.kind == "added-and-removed"
    assert report.tools_added == ("web_fetch",)
    assert report.tools_removed == ("todo_write",)


def test_a_reorder_with_a_content_change() -> None:
    b = [TOOLS[0], tool("read_file", {"p": {}}), TOOLS[1], *TOOLS[3:]]
    report = compare(view(), view(b))
    assert report.kind == "reorder-and-content"
    assert report.pointer == "/tools/1/name"
    assert '"read_file"' in report.summary


def test_a_settings_change_is_model_changed_and_loses_everything() -> None:
    a = view()
    b = view(settings={**SETTINGS, "model": "claude-other"})
    report = compare(a, b)
    assert report.verdict == "model_changed"
    assert report.block == "settings"
    assert report.kind == "settings"
    assert report.invalidated == ("tools", "system", "messages")
    assert report.settings_changed == ("model",)
    assert report.pointer == "/settings/model"
    assert report.prefix_bytes_kept == 0
    assert report.tokens_kept == 0
    assert report.prefix_bytes_lost > len(msgspec.json.encode(TOOLS))
    assert '"claude-test" -> "claude-other"' in report.summary
    assert_offset_agrees(report, a, b)


def test_a_settings_change_wins_over_a_later_tools_change() -> None:
    b = view(list(reversed(TOOLS)), settings={**SETTINGS, "max_tokens": 2048})
    report = compare(view(), b)
    assert report.verdict == "model_changed"
    assert report.settings_changed == ("max_tokens",)
    assert report.pointer == "/settings/max_tokens"
    assert report.tools_b == tuple(reversed(NAMES))  # the tools' drift is still shown


def test_a_system_change_keeps_the_tools_cache() -> None:
    a = view(system="Alpha agent.")
    b = view(system="Beta agent.")
    report = compare(a, b)
    assert report.verdict == "system_changed"
    assert report.kind == "text"
    assert report.invalidated == ("system", "messages")
    assert report.pointer == "/system"
    tools_member = b'"tools":' + msgspec.json.encode(TOOLS)
    # everything up to the first differing character of the system text is a common prefix
    assert report.prefix_bytes_kept == len(tools_member + b',"system":"')
    assert report.prefix_bytes_kept > 0
    assert report.tokens_kept == report.prefix_bytes_kept // 4
    assert report.prefix_bytes_lost > 0
    assert_offset_agrees(report, a, b)


def test_a_system_change_names_line_and_column() -> None:
    report = compare(view(system="one\ntwo\nthree"), view(system="one\ntwo\nthrEE"))
    assert "line 3, column 4" in report.summary


def test_a_messages_change_loses_only_the_messages() -> None:
    b_messages = [*MESSAGES, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    a, b = view(), view(messages=b_messages)
    report = compare(a, b)
    assert report.verdict == "messages_changed"
    assert report.kind == "messages"
    assert report.invalidated == ("messages",)
    assert report.pointer == "/messages/1"
    assert "message 1 (assistant)" in report.summary
    assert_offset_agrees(report, a, b)


def test_a_block_missing_on_one_side() -> None:
    a, b = view(), view(system=None)
    report = compare(a, b)
    assert report.verdict == "system_changed"
    assert report.invalidated == ("system", "messages")
    assert report.pointer == "/system"
    assert "absent in actual" in report.summary
    assert_offset_agrees(report, a, b)


def test_the_same_blocks_in_another_order() -> None:
    a = CacheView(SETTINGS, {"tools": TOOLS, "system": SYSTEM})
    b = CacheView(SETTINGS, {"system": SYSTEM, "tools": TOOLS})
    report = compare(a, b)
    assert report.kind == "block-order"
    assert report.verdict == "tools_changed"
    assert report.invalidated == ("tools", "system")
    assert report.pointer == ""
    assert_offset_agrees(report, a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (view(), view(list(reversed(TOOLS)))),
        (view(), view(system=SYSTEM + " Be brief.")),
        (view(), view(settings={**SETTINGS, "temperature": 0.5})),
        (view(system="naïve café ☕ one"), view(system="naïve café ☕ two")),
        (view(system="é"), view(system="è")),  # differ in the second byte of one character
        (CacheView({}, {}), view()),
        (view(), CacheView({}, {})),
    ],
)
def test_offset_agrees_with_the_canonical_bytes(a: CacheView, b: CacheView) -> None:
    report = compare(a, b)
    assert not report.identical
    assert_offset_agrees(report, a, b)
    assert "<<HERE>>" in report.context_a and "<<HERE>>" in report.context_b
    assert len(report.context_a.encode()) <= 80 + len("<<HERE>>") + 12


def test_contexts_are_cut_at_the_difference_and_keep_characters_whole() -> None:
    a, b = view(system="é"), view(system="è")
    report = compare(a, b)
    assert canonical_bytes(a)[report.offset] == 0xA9  # the second byte of "é" (C3 A9)
    assert '"system":"<<HERE>>é","messages"' in report.context_a
    assert '"system":"<<HERE>>è","messages"' in report.context_b
    before, after = report.context_a.split("<<HERE>>")
    assert before.startswith("…") and len(before[1:].encode()) == 20
    assert after.endswith("…") and len((before[1:] + after[:-1]).encode()) == 80
    assert "\ufffd" not in report.context_a + report.context_b


# -- odd input ----------------------------------------------------------------------------------


def test_odd_input_never_crashes() -> None:
    empty = CacheView({}, {})
    assert compare(empty, empty).identical
    odd_tools = CacheView(SETTINGS, {"tools": ["bash", 3, None, {"no": "name"}]})
    dict_tools = CacheView(SETTINGS, {"tools": {"bash": {}}})
    weird = CacheView({"model": {1, 2}}, {"tools": [object()], "system": b"\xff"})
    for a, b in [(odd_tools, dict_tools), (dict_tools, odd_tools), (empty, weird), (weird, view())]:
        report = compare(a, b)
        assert not report.identical
        assert report.to_text() and report.to_markdown() and report.to_json()
    report = compare(odd_tools, dict_tools)
    assert report.verdict == "tools_changed" and report.kind == "tools-shape"
    assert report.tools_a[:2] == ("bash", "<unnamed 3>")


def test_a_block_may_not_be_called_settings() -> None:
    with pytest.raises(ValueError, match="settings"):
        CacheView({}, {"settings": {}})


def test_openai_shaped_tools_are_named() -> None:
    def fn(name: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "parameters": {}}}

    a = CacheView({"model": "gpt"}, {"tools": [fn("a"), fn("b")], "instructions": "x"}, "openai")
    b = CacheView({"model": "gpt"}, {"tools": [fn("b"), fn("a")], "instructions": "x"}, "openai")
    report = compare(a, b)
    assert report.kind == "reorder" and report.tool == "b"
    c = CacheView({"model": "gpt"}, {"tools": [fn("a"), fn("b")], "instructions": "y"}, "openai")
    assert compare(a, c).verdict == "system_changed"


# -- first_difference ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "pointer"),
    [
        ({"a": 1}, {"a": 1}, None),
        (1, 2, ""),
        (1, True, ""),  # equal in Python, not on the wire
        (1, 1.0, ""),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, ""),  # key order is significant: the object itself
        ({"x": {"a": 1, "b": 2}}, {"x": {"a": 1, "c": 2}}, "/x"),  # a key renamed
        ({"a": 1, "c": 3}, {"a": 1, "b": 2, "c": 3}, "/b"),  # a key inserted: the new member
        ({"a": 1, "b": 2, "c": 3}, {"a": 1, "c": 3}, "/b"),  # a key removed: the old member
        ({"x": [1, 2]}, {"x": [1, 2, 3]}, "/x/2"),  # the first extra element
        ({"x": [1, 2, 3]}, {"x": [1]}, "/x/1"),  # the first missing element
        ({"x": {"a": 1}}, {"x": {"a": 1, "b": 2}}, "/x/b"),  # the first extra member
        ({"a/b": {"m~n": 1}}, {"a/b": {"m~n": 2}}, "/a~1b/m~0n"),
        ([{"k": "v"}, 1], [{"k": "w"}, 1], "/0/k"),
        ({"x": 1}, {"x": 12}, "/x"),  # one encoding is a prefix of the other
    ],
)
def test_first_difference_examples(a: Any, b: Any, pointer: str | None) -> None:
    assert first_difference(a, b) == pointer


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.text(alphabet='ab~/é☕\n"', max_size=4),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet="ab~/é", max_size=3), children, max_size=4)
    ),
    max_leaves=16,
)


keys = st.text(alphabet="ab~/é", max_size=3)


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """`value` with one small change somewhere: a new leaf, an insertion, a removal, a rename, a
    reorder, usually deep inside, so that pairs differ at every depth and in every way."""
    if isinstance(value, dict) and value:
        items = list(value.items())
        index = draw(st.integers(0, len(items) - 1))
        key = items[index][0]
        action = draw(
            st.sampled_from(["descend", "descend", "drop", "insert", "rename", "reorder", "leaf"])
        )
        if action == "descend":
            return {k: draw(mutated(v)) if k == key else v for k, v in items}
        if action == "drop":
            return {k: v for k, v in items if k != key}
        if action == "insert":
            new_key = draw(keys.filter(lambda k: k not in value))
            return dict([*items[:index], (new_key, draw(json_values)), *items[index:]])
        if action == "rename":
            new_key = draw(keys.filter(lambda k: k not in value))
            return {new_key if k == key else k: v for k, v in items}
        if action == "reorder":
            return dict(draw(st.permutations(items)))
    if isinstance(value, list) and value:
        index = draw(st.integers(0, len(value) - 1))
        action = draw(st.sampled_from(["descend", "descend", "drop", "insert", "reorder", "leaf"]))
        if action == "descend":
            return [draw(mutated(v)) if i == index else v for i, v in enumerate(value)]
        if action == "drop":
            return value[:index] + value[index + 1 :]
        if action == "insert":
            return [*value[:index], draw(json_values), *value[index:]]
        if action == "reorder":
            return draw(st.permutations(value))
    return draw(json_values)


@st.composite
def json_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    a = draw(st.one_of(json_values, st.dictionaries(keys, json_values, min_size=1, max_size=4)))
    how = draw(st.sampled_from(["same", "independent", "mutated", "mutated", "mutated"]))
    if how == "same":
        return a, a
    if how == "independent":
        return a, draw(json_values)
    return a, draw(mutated(a))


def _enc(value: Any) -> bytes:
    return msgspec.json.encode(value)


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(json_pairs())
def test_first_difference_agrees_with_the_first_differing_byte(pair: tuple[Any, Any]) -> None:
    a, b = pair
    bytes_a, bytes_b = _enc(a), _enc(b)
    pointer = first_difference(a, b)
    if bytes_a == bytes_b:
        assert pointer is None
        return
    assert pointer is not None
    offset = compare_values(a, b).offset
    assert bytes_a[:offset] == bytes_b[:offset] and bytes_a[offset:] != bytes_b[offset:]
    tokens = pointer_tokens(pointer)
    node_a, node_b = a, b
    for depth, token in enumerate(tokens):
        # every earlier sibling encodes identically, keys included
        if isinstance(node_a, dict) and isinstance(node_b, dict):
            items_a, items_b = list(node_a.items()), list(node_b.items())
            keys = [k for k, _ in (items_a if token in node_a else items_b)]
            index = keys.index(token)
            assert [(k, _enc(v)) for k, v in items_a[:index]] == [
                (k, _enc(v)) for k, v in items_b[:index]
            ]
        else:
            assert isinstance(node_a, list) and isinstance(node_b, list)
            index = int(token)
            assert [_enc(v) for v in node_a[:index]] == [_enc(v) for v in node_b[:index]]
        node_a, node_b = child(node_a, token), child(node_b, token)
        if depth < len(tokens) - 1:
            assert node_a is not MISSING and node_b is not MISSING
    # the pointer's value differs, or is missing on one side
    assert node_a is MISSING or node_b is MISSING or _enc(node_a) != _enc(node_b)
    # and it is the deepest such place: two arrays always have a differing element to name, and
    # two objects are only named themselves when a key was renamed or reordered
    assert not (isinstance(node_a, list) and isinstance(node_b, list)), pointer
    if isinstance(node_a, dict) and isinstance(node_b, dict):
        items_a, items_b = list(node_a.items()), list(node_b.items())
        first = next(
            (
                i
                for i in range(min(len(items_a), len(items_b)))
                if items_a[i][0] != items_b[i][0] or _enc(items_a[i][1]) != _enc(items_b[i][1])
            ),
            None,
        )
        assert first is not None, (pointer, "a trailing extra member should be named")
        key_a, key_b = items_a[first][0], items_b[first][0]
        assert key_a != key_b, (pointer, "a changed value should be descended into")
        assert (key_a in node_b) == (key_b in node_a), (pointer, "a one-sided key should be named")
    # and the first differing byte lies inside that member, on one side or both
    spans = [span for span in (member_span(a, tokens), member_span(b, tokens)) if span is not None]
    assert spans
    assert any(start <= offset < end for start, end in spans), (pointer, offset, spans)


def test_compare_values_reports_a_block_but_no_verdict() -> None:
    a = {"events": [{"type": "turn/start"}, {"type": "step/start", "step": 1}]}
    b = {"events": [{"type": "turn/start"}, {"type": "step/start", "step": 2}]}
    report = compare_values(a, b, label_a="recorded", label_b="replayed")
    assert not report.identical
    assert report.verdict is None
    assert report.block == "events"
    assert report.pointer == "/events/1/step"
    assert report.offset == _enc(a).index(b"1}]")
    assert report.label_a == "recorded" and "recorded" in report.to_text()
    assert "values_changed" in report.deepdiff
    assert compare_values(a, a).identical
    assert compare_values(1, 2).block is None


# -- volatile hints -----------------------------------------------------------------------------


def test_volatile_hints_name_what_they_saw() -> None:
    hints = volatile_hints(
        "Now: 2026-12-02T16:07:30Z. Session 123e4567-e89b-12d3-a456-426614174000 in /home/ann/repo"
    )
    assert any(h.startswith('looks like a timestamp: "2026-12-02T16:07:30Z"') for h in hints)
    assert any('a UUID: "123e4567-e89b-12d3-a456-426614174000"' in h for h in hints)
    assert any('an absolute path: "/home/ann/repo"' in h for h in hints)
    assert all("cache" in h for h in hints)
    assert len(hints) == 3  # the date inside the timestamp is not reported twice


def test_volatile_hints_on_two_texts_report_only_what_differs_and_counters() -> None:
    a = "Run 41 of the suite at 2026-12-02T16:07:30Z on model m1 from C:\\Users\\ann"
    b = "Run 42 of the suite at 2026-12-02T16:07:30Z on model m2 from C:\\Users\\bob"
    hints = volatile_hints(a, b)
    assert any(h.startswith('looks like a counter: "41" became "42"') for h in hints)
    assert not any("timestamp" in h for h in hints)  # the same on both sides
    assert not any('"1" became "2"' in h for h in hints)  # m1 -> m2 is a name
    assert any('an absolute path: "C:\\Users\\bob"' in h for h in hints)
    assert volatile_hints("nothing volatile here", "nothing volatile here") == ()
    assert volatile_hints("", "") == ()


def test_a_report_carries_hints_from_the_block_that_changed() -> None:
    report = compare(view(system="Today is 2026-12-02."), view(system="Today is 2026-12-03."))
    assert any('a date: "2026-12-03"' in h for h in report.volatile_hints)
    assert "hints:" in report.to_text()


# -- renderings ---------------------------------------------------------------------------------


def _reorder_report() -> DriftReport:
    a = view(tools_by_name("bash", "grep", "read_file"))
    b = view(tools_by_name("bash", "read_file", "grep"))
    reproduce = Reproduce(
        seed=1234,
        order_a=("search", "fs"),
        order_b=("fs", "search"),
        command="pytest tests/test_x.py::test_y -p randomly --randomly-seed=1234",
    )
    return compare(a, b, owners={"read_file": "fs", "grep": "search"}, reproduce=reproduce)


def test_text_rendering_is_reviewable() -> None:
    report = _reorder_report()
    text = report.to_text()
    lines = text.splitlines()
    assert lines[0] == report.summary
    assert "tools_changed" in text
    assert "the tools, system and messages caches are lost" in text
    assert "/tools/1/name" in text and f"byte {report.offset}" in text
    assert 'tool "read_file"' in text
    assert f"expected:   {report.context_a}" in text or report.context_a in text
    assert "1234" in text and "search, fs" in text and "fs, search" in text
    assert "--randomly-seed=1234" in text
    assert 'plugin "fs"' in text
    order = [line for line in lines if "first out of place" in line and "|" in line]
    assert len(order) == 1 and "grep" in order[0] and "read_file" in order[0]
    assert "deepdiff:" in text and "values_changed" in text


def test_markdown_rendering_for_ci_summaries() -> None:
    report = _reorder_report()
    markdown = report.to_markdown()
    assert markdown.startswith("### Drift: `tools_changed` (reorder)")
    assert "| verdict |" in markdown and "| cost |" in markdown
    assert "`/tools/1/name`" in markdown and f"byte {report.offset}" in markdown
    assert "`read_file`" in markdown
    assert "```text\n" + report.context_a + "\n```" in markdown
    assert "- seed: `1234`" in markdown
    assert "--randomly-seed=1234" in markdown
    assert "<details><summary>deepdiff</summary>" in markdown and "</details>" in markdown
    assert "**1** (first out of place)" in markdown


def test_markdown_fences_survive_backticks_in_the_content() -> None:
    report = compare(view(system="use ```code```"), view(system="use ````code````"))
    markdown = report.to_markdown()
    assert "````text\n" in markdown or "`````text\n" in markdown


def test_json_rendering_round_trips() -> None:
    report = _reorder_report()
    data = report.to_json()
    decoded = msgspec.json.decode(data, type=DriftReport)
    assert decoded == report
    raw = msgspec.json.decode(data)
    assert raw["verdict"] == "tools_changed"
    assert raw["pointer"] == "/tools/1/name"
    assert raw["offset"] == report.offset
    assert raw["tool"] == "read_file"
    assert raw["reproduce"]["seed"] == 1234


def test_identical_renderings() -> None:
    report = compare(view(), view(), reproduce=Reproduce(seed=7))
    assert report.to_text().startswith("identical")
    assert "seed:" in report.to_text() and "7" in report.to_text()
    assert report.to_markdown().startswith("### No drift")
    assert msgspec.json.decode(report.to_json())["identical"] is True


# -- views of the runtime's types ---------------------------------------------------------------


def _schemas(*names: str) -> list[ToolSchema]:
    return [ToolSchema(name, f"The {name} tool.", {"type": "object"}) for name in names]


def test_view_of_header_puts_tools_before_system() -> None:
    config = LlmConfig("anthropic", "claude-test", max_tokens=2048)
    header = canonical_header(config, "Be careful.", _schemas("bash", "grep"))
    cache_view = view_of_header(header)
    assert cache_view.settings == {
        "provider": "anthropic",
        "model": "claude-test",
        "max_tokens": 2048,
    }
    assert list(cache_view.blocks) == ["tools", "system"]
    assert cache_view.blocks["tools"][0] == {
        "name": "bash",
        "description": "The bash tool.",
        "parameters": {"type": "object"},
    }
    assert cache_view.blocks["system"] == "Be careful."
    encoded = canonical_bytes(cache_view)
    assert encoded.index(b'"settings"') < encoded.index(b'"tools"') < encoded.index(b'"system"')
    bare = view_of_header(canonical_header(config, "", []))
    assert bare.blocks == {}


def test_view_of_request_puts_tools_before_system_before_messages() -> None:
    config = LlmConfig("anthropic", "claude-test", temperature=0.5)
    header = canonical_header(config, "Be careful.", _schemas("bash"))
    messages = [Message("user", (TextBlock("hello"),))]
    request = Request.build(header, messages, session_id="s-1")
    cache_view = view_of_request(request)
    assert list(cache_view.blocks) == ["tools", "system", "messages"]
    assert cache_view.settings["model"] == "claude-test"
    assert cache_view.settings["temperature"] == 0.5
    assert "session_id" not in cache_view.settings
    assert cache_view.blocks["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]


def test_a_header_tool_shuffle_is_a_reorder_with_provenance() -> None:
    config = LlmConfig("anthropic", "claude-test")
    a = view_of_header(canonical_header(config, "sys", _schemas("bash", "grep", "read_file")))
    b = view_of_header(canonical_header(config, "sys", _schemas("grep", "bash", "read_file")))
    report = compare(a, b, owners={"grep": "search", "bash": "shell"})
    assert (report.verdict, report.kind, report.tool) == ("tools_changed", "reorder", "grep")
    assert report.provenance == 'plugin "search"'
    assert report.invalidated == ("tools", "system")
    assert report.prefix_bytes_kept == len(b'"tools":[{"name":"')
