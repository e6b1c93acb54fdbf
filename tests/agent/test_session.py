"""The session log, the canonical request header, and deep-frozen values."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agent import (
    SESSION_EVENT,
    AssistantMessage,
    Context,
    FrozenDict,
    FrozenError,
    Header,
    LlmConfig,
    Message,
    RequestHeader,
    Session,
    StepStart,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolResultBlock,
    ToolSchema,
    ToolUseBlock,
    TurnStart,
    UserMessage,
    canonical_header,
    deep_freeze,
    derive_messages,
    fold_header,
    header_equals,
    is_deep_frozen,
)
from tests.support.properties import examples

CONFIG = LlmConfig(provider="scripted", model="m")
BASH = ToolSchema(
    "bash", "Run a command.", {"type": "object", "properties": {"cmd": {"type": "string"}}}
)
READ = ToolSchema("read", "Read a file.", {"type": "object", "properties": {}})


# -- canonical header ----------------------------------------------------------------------------


def test_canonical_header_drops_empty_system_and_tools() -> None:
    header = canonical_header(CONFIG, "", [])
    assert header.system is msgspec.UNSET
    assert header.tools is msgspec.UNSET
    assert msgspec.json.encode(header) == b'{"config":{"provider":"scripted","model":"m"}}'


def test_canonical_header_keeps_system_and_tools_in_the_order_given() -> None:
    header = canonical_header(CONFIG, "Be brief.", [READ, BASH])
    encoded = msgspec.json.decode(msgspec.json.encode(header))
    assert list(encoded) == ["config", "system", "tools"]
    assert encoded["system"] == "Be brief."
    assert [t["name"] for t in encoded["tools"]] == ["read", "bash"]
    assert list(encoded["tools"][0]) == ["name", "description", "parameters"]


def test_canonical_header_is_deep_frozen_and_detached_from_its_inputs() -> None:
    params: dict[str, Any] = {"type": "object", "properties": {"p": {"type": "string"}}}
    header = canonical_header(CONFIG, "s", [ToolSchema("t", "", params)])
    assert is_deep_frozen(header)
    assert isinstance(header.tools, tuple)
    with pytest.raises(FrozenError):
        header.tools[0].parameters["properties"]["p"]["type"] = "number"
    params["properties"]["p"]["type"] = "number"
    assert header.tools[0].parameters["properties"]["p"] == {"type": "string"}


# -- header equality -----------------------------------------------------------------------------


def test_equal_headers_built_separately_are_equal() -> None:
    assert header_equals(
        canonical_header(CONFIG, "s", [BASH]), canonical_header(CONFIG, "s", [BASH])
    )


@pytest.mark.parametrize(
    "other",
    [
        canonical_header(CONFIG, "s", [READ, BASH]),
        canonical_header(CONFIG, "s2", [BASH, READ]),
        canonical_header(CONFIG, "s", [BASH]),
        canonical_header(LlmConfig(provider="scripted", model="m2"), "s", [BASH, READ]),
        canonical_header(
            LlmConfig(provider="scripted", model="m", max_tokens=9), "s", [BASH, READ]
        ),
        canonical_header(CONFIG, "s", [BASH, ToolSchema("read", "Read a file!", READ.parameters)]),
    ],
    ids=["tool-order", "system", "tool-set", "model", "max-tokens", "description"],
)
def test_headers_differing_in_any_part_are_not_equal(other: Header) -> None:
    assert not header_equals(canonical_header(CONFIG, "s", [BASH, READ]), other)


def test_key_order_inside_tool_parameters_is_significant() -> None:
    ab = ToolSchema("t", "", {"type": "object", "properties": {}})
    ba = ToolSchema("t", "", {"properties": {}, "type": "object"})
    assert ab.parameters == ba.parameters, "equal as Python dicts..."
    assert not header_equals(canonical_header(CONFIG, "", [ab]), canonical_header(CONFIG, "", [ba]))


def test_header_equality_with_a_missing_header() -> None:
    header = canonical_header(CONFIG, "", [])
    assert header_equals(None, None)
    assert not header_equals(header, None)
    assert not header_equals(None, header)


# -- folding the log -----------------------------------------------------------------------------


def test_fold_header_is_the_latest_request_header() -> None:
    first, second = canonical_header(CONFIG, "one", []), canonical_header(CONFIG, "two", [])
    log = [
        TurnStart(turn=1),
        RequestHeader(header=first, reason="initial"),
        StepStart(step=1),
        RequestHeader(header=second, reason="change"),
        UserMessage(text="hi"),
    ]
    assert fold_header(log) is second
    assert fold_header(log[:3]) is first
    assert fold_header(log[:1]) is None


def test_derive_messages_groups_tool_results_after_the_assistant_message() -> None:
    ask = (
        TextBlock("Let me look."),
        ToolUseBlock("c1", "read", {}),
        ToolUseBlock("c2", "bash", {}),
    )
    log = [
        TurnStart(turn=1),
        UserMessage(text="hello"),
        StepStart(step=1),
        AssistantMessage(content=ask, stop_reason="tool_use"),
        ToolCall(id="c1", name="read", input={}),
        ToolResult(tool_use_id="c1", name="read", content="file"),
        ToolCall(id="c2", name="bash", input={}),
        ToolResult(tool_use_id="c2", name="bash", content="boom", is_error=True),
        AssistantMessage(content=(TextBlock("Done."),), stop_reason="end_turn"),
        UserMessage(text="thanks"),
    ]
    assert derive_messages(log) == (
        Message("user", (TextBlock("hello"),)),
        Message("assistant", ask),
        Message("user", (ToolResultBlock("c1", "file"), ToolResultBlock("c2", "boom", True))),
        Message("assistant", (TextBlock("Done."),)),
        Message("user", (TextBlock("thanks"),)),
    )


def test_trailing_tool_results_and_a_following_user_message_stay_separate() -> None:
    log = [
        AssistantMessage(content=(ToolUseBlock("c1", "read", {}),), stop_reason="tool_use"),
        ToolResult(tool_use_id="c1", name="read", content="x"),
        UserMessage(text="next"),
    ]
    messages = derive_messages(log)
    assert [m.role for m in messages] == ["assistant", "user", "user"]
    assert derive_messages(log[:2])[-1] == Message("user", (ToolResultBlock("c1", "x"),))


def test_derived_messages_are_deep_frozen() -> None:
    log = [AssistantMessage(content=(ToolUseBlock("c", "t", {"a": [1]}),), stop_reason="tool_use")]
    messages = derive_messages(log)
    assert is_deep_frozen(messages)
    with pytest.raises(FrozenError):
        messages[0].content[0].input["a"] = 2


# -- the live session ----------------------------------------------------------------------------


def test_append_stamps_freezes_stores_and_announces_the_event() -> None:
    ctx = Context()
    session = Session(ctx, session_id="s-1", clock=lambda: "T0")
    announced: list[tuple[object, Session]] = []
    ctx.on(SESSION_EVENT, lambda event, s: announced.append((event, s)))
    stamped = session.append(ToolCall(id="c", name="t", input={"deep": {"list": [1]}}))
    assert stamped.time == "T0"
    assert isinstance(stamped, ToolCall)
    assert isinstance(stamped.input["deep"], FrozenDict)
    assert stamped.input["deep"]["list"] == (1,)
    assert session.log == [stamped]
    assert announced == [(stamped, session)]


def test_a_session_gets_a_fresh_id_and_copies_the_log_it_resumes() -> None:
    log = [TurnStart(turn=1)]
    one, two = Session(Context(), log=log), Session(Context(), log=log)
    assert one.id != two.id and one.id
    one.append(TurnStart(turn=2))
    assert len(log) == 1 and len(two.log) == 1


def test_a_closed_session_refuses_appends() -> None:
    session = Session(Context(), session_id="s-1")
    session.close()
    with pytest.raises(RuntimeError, match="session s-1 is closed"):
        session.append(TurnStart(turn=1))
    assert session.log == []


# -- deep freezing -------------------------------------------------------------------------------


def test_frozen_error_is_a_type_error() -> None:
    assert issubclass(FrozenError, TypeError)


MUTATIONS = {
    "setitem": lambda d: d.__setitem__("k", 1),
    "delitem": lambda d: d.__delitem__("a"),
    "clear": lambda d: d.clear(),
    "pop": lambda d: d.pop("a"),
    "popitem": lambda d: d.popitem(),
    "setdefault": lambda d: d.setdefault("k", 1),
    "update": lambda d: d.update(k=1),
    "ior": lambda d: d.__ior__({"k": 1}),
}


@pytest.mark.parametrize("mutate", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_a_frozen_dict_refuses_every_in_place_change(mutate: Callable[[Any], object]) -> None:
    frozen = deep_freeze({"a": 1, "b": 2})
    with pytest.raises(FrozenError):
        mutate(frozen)
    assert frozen == {"a": 1, "b": 2}


def test_the_augmented_or_operator_cannot_change_a_frozen_dict() -> None:
    frozen = deep_freeze({"a": 1})
    alias = frozen
    with pytest.raises(FrozenError):
        alias |= {"b": 2}
    assert frozen == {"a": 1}


def test_deep_freeze_reaches_every_depth() -> None:
    value = {"a": [{"b": {"c": [1, 2]}}], "d": ({"e": 1},)}
    frozen = deep_freeze(value)
    assert isinstance(frozen["a"], tuple)
    assert isinstance(frozen["a"][0]["b"], FrozenDict)
    assert frozen["a"][0]["b"]["c"] == (1, 2)
    with pytest.raises(FrozenError):
        frozen["a"][0]["b"]["c2"] = []
    with pytest.raises(FrozenError):
        frozen["d"][0]["e"] = 2
    assert is_deep_frozen(frozen)
    assert not is_deep_frozen(value)
    assert value["a"][0]["b"]["c"] == [1, 2], "the input is left as it was"


def test_deep_freeze_reaches_into_frozen_structs() -> None:
    schema = ToolSchema("t", "", {"properties": {"x": {"enum": ["a", "b"]}}})
    frozen = deep_freeze(schema)
    assert frozen == ToolSchema("t", "", {"properties": {"x": {"enum": ("a", "b")}}})
    assert isinstance(frozen.parameters, FrozenDict)
    with pytest.raises(FrozenError):
        frozen.parameters["properties"]["y"] = {}
    assert not is_deep_frozen(schema)
    assert is_deep_frozen(frozen)


def test_deep_freeze_refuses_a_mutable_struct() -> None:
    class Loose(msgspec.Struct):
        items: list[int]

    with pytest.raises(FrozenError, match="Loose is not a frozen Struct"):
        deep_freeze(Loose([1]))


def test_freezing_a_frozen_value_returns_it_unchanged() -> None:
    frozen = deep_freeze({"a": [1, {"b": 2}]})
    header = canonical_header(CONFIG, "s", [BASH])
    assert deep_freeze(frozen) is frozen
    assert deep_freeze(header) is header
    assert copy.copy(frozen) is frozen
    assert copy.deepcopy(frozen) is frozen


def test_a_frozen_dict_is_hashable_and_not_pickled() -> None:
    assert hash(deep_freeze({"a": [1]})) == hash(deep_freeze({"a": [1]}))
    with pytest.raises(FrozenError):
        pickle.dumps(deep_freeze({"a": 1}))


def test_msgspec_encodes_a_frozen_dict_like_the_dict_it_was() -> None:
    value = {"z": 1, "a": {"y": [1, 2], "b": None}}
    assert msgspec.json.encode(deep_freeze(value)) == msgspec.json.encode(value)
    assert msgspec.json.encode(deep_freeze(value)) == b'{"z":1,"a":{"y":[1,2],"b":null}}'
    assert msgspec.msgpack.encode(deep_freeze(value)) == msgspec.msgpack.encode(value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(value=json_values)
def test_any_json_value_freezes_deeply_and_encodes_to_the_same_bytes(value: Any) -> None:
    frozen = deep_freeze(value)
    assert is_deep_frozen(frozen)
    assert msgspec.json.encode(frozen) == msgspec.json.encode(value)
