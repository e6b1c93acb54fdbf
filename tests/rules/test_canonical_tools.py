"""`harness.canonical_tools`: the same set of tools gives the same bytes, in every tool shape.

Properties (hypothesis): the canonical form is a fixed point, and neither the order the tools
arrive in nor the key order of their schemas changes it. Examples pin what is sorted (object keys,
`required`, a list `type`) and what keeps its order (`enum`, `prefixItems`, `anyOf`, `oneOf`),
the UTF-16 code-unit order of names, the explicit order with its rest entry, and the cache
markers that move with the canonical form.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness
from harness import UsageError
from tests.support.properties import examples

REST = "<unlisted-tools>"


def encoded(tools: list[Any]) -> bytes:
    return json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode()


def shuffled_keys(value: Any, rng: random.Random) -> Any:
    """`value` with every object's keys in another order (arrays untouched)."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: shuffled_keys(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [shuffled_keys(item, rng) for item in value]
    return value


NAMES = st.text(alphabet=st.sampled_from("ab_-Z\u00e9\ue000\U0001f600"), min_size=1, max_size=4)
SCHEMA = st.recursive(
    st.one_of(st.integers(-3, 3), st.booleans(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def tool_lists(draw: st.DrawFn) -> list[Any]:
    shape = draw(st.sampled_from(["anthropic", "chat", "responses", "bedrock"]))
    tools = []
    for name in draw(st.lists(NAMES, min_size=0, max_size=6)):
        properties = draw(st.dictionaries(st.text(max_size=3), SCHEMA, max_size=3))
        schema = {
            "type": "object",
            "properties": properties,
            "required": draw(st.lists(st.sampled_from(sorted(properties) or ["x"]), max_size=3)),
        }
        if shape == "anthropic":
            tools.append({"name": name, "description": "d", "input_schema": schema})
        elif shape == "chat":
            tools.append({"type": "function", "function": {"name": name, "parameters": schema}})
        elif shape == "responses":
            tools.append({"type": "function", "name": name, "parameters": schema})
        else:
            tools.append({"toolSpec": {"name": name, "inputSchema": {"json": schema}}})
    if shape == "responses" and draw(st.booleans()):
        tools.append({"type": "web_search"})  # a built-in tool: no name
    return tools


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None)
@given(tool_lists(), st.randoms(use_true_random=False))
def test_canonical_tools_is_idempotent_and_ignores_the_order_it_is_given(
    tools: list[Any], rng: random.Random
) -> None:
    canonical = harness.canonical_tools(tools)
    assert encoded(harness.canonical_tools(canonical)) == encoded(canonical)
    reordered = [shuffled_keys(tool, rng) for tool in tools]
    rng.shuffle(reordered)
    assert encoded(harness.canonical_tools(reordered)) == encoded(canonical)


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(tool_lists(), st.randoms(use_true_random=False))
def test_an_explicit_order_is_kept_whatever_order_the_tools_arrive_in(
    tools: list[Any], rng: random.Random
) -> None:
    canonical = harness.canonical_tools(tools)
    names = sorted({name for tool in tools if (name := _name(tool)) is not None})
    listed = rng.sample(names, k=min(2, len(names)))
    order = [*listed, REST] if rng.random() < 0.5 else [REST, *listed]
    first = harness.canonical_tools(tools, order)
    assert encoded(harness.canonical_tools(first, order)) == encoded(first)
    assert encoded(harness.canonical_tools(list(reversed(tools)), order)) == encoded(first)
    assert sorted(map(encoded, ([t] for t in first))) == sorted(
        map(encoded, ([t] for t in canonical))
    )
    placed = [_name(tool) for tool in first]
    for name in listed:
        positions = [i for i, found in enumerate(placed) if found == name]
        assert positions == sorted(positions)
    if order[0] != REST and listed:
        assert placed[0] == listed[0]


def _name(tool: Any) -> str | None:
    for holder in (tool, tool.get("function"), tool.get("toolSpec")):
        if isinstance(holder, dict) and isinstance(holder.get("name"), str):
            return str(holder["name"])
    return None


def test_schema_objects_are_sorted_and_meaningful_arrays_kept() -> None:
    tool = {
        "name": "search",
        "input_schema": {
            "type": "object",
            "required": ["query", "limit"],
            "properties": {
                "query": {"type": ["string", "null"], "description": "what"},
                "limit": {"enum": [10, 1, 5], "anyOf": [{"type": "integer"}, {"type": "null"}]},
                "pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]},
            },
        },
    }
    (result,) = harness.canonical_tools([tool])
    schema = result["input_schema"]
    assert list(result) == ["input_schema", "name"]
    assert list(schema["properties"]) == ["limit", "pair", "query"]
    assert schema["required"] == ["limit", "query"]
    assert schema["properties"]["query"]["type"] == ["null", "string"]
    assert schema["properties"]["limit"]["enum"] == [10, 1, 5]
    assert schema["properties"]["limit"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert schema["properties"]["pair"]["prefixItems"][0] == {"type": "string"}
    assert tool["input_schema"]["required"] == ["query", "limit"]  # the input is not changed


def test_names_are_in_utf16_code_unit_order_as_the_reference_runtime_sends_them() -> None:
    tools = [{"name": name, "input_schema": {}} for name in ("\ufffd", "\U0001f600", "b", "a")]
    # code points put U+FFFD before U+1F600; UTF-16 code units (0xD83D...) the other way round
    assert [t["name"] for t in harness.canonical_tools(tools)] == ["a", "b", "\U0001f600", "\ufffd"]


def test_an_explicit_order_with_its_rest_entry() -> None:
    tools = [{"name": name, "input_schema": {}} for name in ("grep", "bash", "todo", "edit")]
    result = harness.canonical_tools(tools, ["todo", REST, "bash"])
    assert [t["name"] for t in result] == ["todo", "edit", "grep", "bash"]


@pytest.mark.parametrize(
    ("order", "says"),
    [
        (["bash"], 'must contain the "<unlisted-tools>" rest entry'),
        (["bash", "bash", REST], 'lists "bash" more than once'),
        (["ghost", REST], 'order lists unknown tool "ghost"; tools: bash, grep'),
    ],
)
def test_a_bad_order_is_one_usage_error(order: list[str], says: str) -> None:
    tools = [{"name": name, "input_schema": {}} for name in ("grep", "bash")]
    with pytest.raises(UsageError, match="canonical_tools") as raised:
        harness.canonical_tools(tools, order)
    assert says in str(raised.value)


def test_openai_chat_and_responses_shapes() -> None:
    chat = [
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"parameters": {"type": "object"}, "name": "a"}},
    ]
    assert [t["function"]["name"] for t in harness.canonical_tools(chat)] == ["a", "b"]
    responses = [{"type": "web_search"}, {"type": "function", "name": "z", "parameters": {}}]
    assert harness.canonical_tools(responses) == [
        {"name": "z", "parameters": {}, "type": "function"},
        {"type": "web_search"},  # no name: after the named tools
    ]


def test_gemini_declaration_groups_are_merged_and_ordered() -> None:
    tools = [
        {"functionDeclarations": [{"name": "search", "parameters": {}}]},
        {"googleSearch": {}},
        {"functionDeclarations": [{"name": "fetch", "parameters": {}}]},
    ]
    result = harness.canonical_tools(tools)
    assert result == [
        {
            "functionDeclarations": [
                {"name": "fetch", "parameters": {}},
                {"name": "search", "parameters": {}},
            ]
        },
        {"googleSearch": {}},
    ]
    assert harness.canonical_tools(tools[::-1]) == result
    ordered = harness.canonical_tools(tools, ["search", REST])
    assert [d["name"] for d in ordered[0]["functionDeclarations"]] == ["search", "fetch"]


def test_cache_markers_move_with_the_canonical_form() -> None:
    anthropic = [
        {"name": "b", "input_schema": {}, "cache_control": {"type": "ephemeral"}},
        {"name": "a", "input_schema": {}},
    ]
    result = harness.canonical_tools(anthropic)
    assert [("cache_control" in t, t["name"]) for t in result] == [(False, "a"), (True, "b")]
    assert harness.canonical_tools(anthropic[::-1]) == result
    bedrock = [
        {"toolSpec": {"name": "b"}},
        {"cachePoint": {"type": "default"}},
        {"toolSpec": {"name": "a"}},
    ]
    assert harness.canonical_tools(bedrock) == [
        {"toolSpec": {"name": "a"}},
        {"toolSpec": {"name": "b"}},
        {"cachePoint": {"type": "default"}},
    ]
