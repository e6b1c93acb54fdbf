"""The runtime's fast paths agree with the reference definitions they replace.

The runtime skips work it can prove redundant: an incremental fold of the session log instead of
rereading it, identity memos for values already checked deep-frozen, shared frozen tool copies,
remembered orders and renders. Each is checked here against the plain definition (kept in the
code, or copied below from before the change) on random inputs, so a fast path cannot drift from
what it stands for. The harness's own fast paths are checked the same way in
`tests/scenarios/test_recording_fast_paths.py` (recorded digests, whole scenarios) and
`tests/bottom/test_decode_fast_path.py` (the typed decode of what the harness wrote).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import re
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness.agent import (
    ASSEMBLE_EVENT,
    TOOL_ORDER_REST,
    AgentError,
    AssistantMessage,
    Context,
    Conversation,
    FrozenDict,
    FrozenError,
    FrozenList,
    Header,
    LlmConfig,
    LogEvent,
    PromptAssembly,
    PromptAssemblyError,
    PromptRenderError,
    RequestHeader,
    ScriptedAdapter,
    Section,
    Session,
    StepEnd,
    StepStart,
    SystemPrompt,
    SystemPromptConfig,
    TextBlock,
    ToolCall,
    ToolOrderError,
    ToolResult,
    ToolRuntime,
    ToolSchema,
    ToolUseBlock,
    TurnEnd,
    TurnStart,
    UserMessage,
    canonical_header,
    deep_freeze,
    derive_messages,
    fold_header,
    header_bytes,
    header_equals,
    is_deep_frozen,
    order_tools,
    render_prompt,
)
from harness.agent._frozen import extend_frozen
from harness.agent._header import messages_json
from harness.agent._session import EventLog, has_header
from harness.agent._system_prompt import check_assembly
from tests.support.properties import examples

CONFIG = LlmConfig(provider="scripted", model="m")
SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def enc(value: Any) -> bytes:
    return msgspec.json.encode(value)


# -- the reference deep_freeze / is_deep_frozen (as they were before the identity memo) ----------


def reference_freeze(value: Any) -> Any:
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):
        return FrozenDict({key: reference_freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        items = tuple(reference_freeze(item) for item in value)
        if isinstance(value, tuple) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    if isinstance(value, msgspec.Struct):
        changes = {}
        for field in value.__struct_fields__:
            current = getattr(value, field)
            frozen = reference_freeze(current)
            if frozen is not current:
                changes[field] = frozen
        if not value.__struct_config__.frozen:
            raise FrozenError(f"{type(value).__name__} is not a frozen Struct")
        return msgspec.structs.replace(value, **changes) if changes else value
    return value


def reference_is_deep_frozen(value: Any) -> bool:
    if isinstance(value, FrozenDict | tuple):
        items = value.values() if isinstance(value, dict) else value
        return all(reference_is_deep_frozen(item) for item in items)
    if isinstance(value, dict | list | set | bytearray):
        return False
    if isinstance(value, msgspec.Struct):
        return value.__struct_config__.frozen and all(
            reference_is_deep_frozen(getattr(value, field)) for field in value.__struct_fields__
        )
    return True


def shape(value: Any) -> Any:
    """Types and values, all the way down (equality alone would let a list pass for a tuple)."""
    if isinstance(value, dict):
        return (type(value).__name__, [(k, shape(v)) for k, v in value.items()])
    if isinstance(value, list | tuple | set | frozenset):
        return (type(value).__name__, [shape(v) for v in value])
    if isinstance(value, msgspec.Struct):
        return (type(value).__name__, [shape(getattr(value, f)) for f in value.__struct_fields__])
    return (type(value).__name__, value)


class Loose(msgspec.Struct):
    items: Any


class Pair(msgspec.Struct, frozen=True):
    left: Any
    right: Any


leaves = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4)
)
values = st.recursive(
    leaves | st.binary(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.lists(inner, max_size=20).map(tuple)  # long enough to be remembered
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3).map(FrozenDict)
        | st.builds(Pair, inner, inner)
        | st.builds(ToolSchema, st.text(max_size=3), st.text(max_size=3), inner)
        | st.frozensets(st.integers(), max_size=3)
        | st.sets(st.integers(), max_size=3)
    ),
    max_leaves=25,
)


@pytest.mark.slow
@SETTINGS
@given(value=values)
def test_deep_freeze_and_is_deep_frozen_give_what_the_reference_gives(value: Any) -> None:
    for _ in range(2):  # the second round runs with whatever the first one remembered
        expected = reference_freeze(value)
        frozen = deep_freeze(value)
        assert shape(frozen) == shape(expected)
        assert (frozen is value) == (expected is value)
        for candidate in (value, frozen):
            assert is_deep_frozen(candidate) == reference_is_deep_frozen(candidate)


def test_a_mutable_struct_is_refused_and_never_remembered() -> None:
    loose = Loose([1])
    for _ in range(2):
        with pytest.raises(FrozenError, match="Loose is not a frozen Struct"):
            deep_freeze(Pair(loose, 1))
        assert not is_deep_frozen(Pair(loose, 1))


@pytest.mark.slow
@SETTINGS
@given(prefix=st.lists(values, max_size=30), more=st.lists(values, max_size=3))
def test_extend_frozen_is_freezing_the_concatenation(prefix: list[Any], more: list[Any]) -> None:
    base = deep_freeze(tuple(prefix))
    extended = extend_frozen(base, more)
    assert shape(extended) == shape(reference_freeze((*base, *more)))
    assert is_deep_frozen(extended) == reference_is_deep_frozen(extended)


# -- the incremental fold of the session log ------------------------------------------------------

tool_ids = st.sampled_from(["c1", "c2", "c3"])
blocks = st.one_of(
    st.builds(TextBlock, st.text(max_size=5)),
    st.builds(ToolUseBlock, tool_ids, st.sampled_from(["bash", "read"]), st.just({"a": [1]})),
    # a set stays a set: the message, and every conversation holding it, is not deep-frozen
    st.builds(ToolUseBlock, tool_ids, st.just("bash"), st.just({"s": {1}})),
)
headers = st.builds(
    lambda system, names: canonical_header(
        CONFIG, system, [ToolSchema(n, "", {"type": "object"}) for n in names]
    ),
    st.text(max_size=3),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
)
events = st.one_of(
    st.builds(UserMessage, text=st.text(max_size=5)),
    st.builds(
        AssistantMessage,
        content=st.lists(blocks, max_size=3).map(tuple),
        stop_reason=st.just("tool_use"),
    ),
    st.builds(ToolCall, id=tool_ids, name=st.just("bash"), input=st.just({})),
    st.builds(
        ToolResult,
        tool_use_id=tool_ids,
        name=st.just("bash"),
        content=st.text(max_size=5),
        is_error=st.booleans(),
    ),
    st.builds(StepStart, step=st.integers(1, 3)),
    st.builds(StepEnd, step=st.integers(1, 3), reason=st.just("end_turn")),
    st.builds(TurnStart, turn=st.integers(1, 3)),
    st.builds(TurnEnd, reason=st.just("completed")),
    st.builds(AgentError, message=st.text(max_size=3)),
    st.builds(RequestHeader, header=headers, reason=st.sampled_from(["initial", "change"])),
)
# What happens between reads of the fold: appends, or changes the fold must notice.
actions = st.one_of(
    st.tuples(st.just("append"), events),
    st.tuples(st.just("extend"), st.lists(events, max_size=3)),
    st.tuples(st.just("insert"), events),
    st.tuples(st.just("pop"), st.none()),
    st.tuples(st.just("replace-last"), events),
    st.tuples(st.just("delete-first"), st.none()),
    st.tuples(st.just("reverse"), st.none()),
    st.tuples(st.just("plain-list"), st.none()),
    st.tuples(st.just("event-log"), st.none()),
)


def stamped(event: LogEvent) -> LogEvent:
    return deep_freeze(msgspec.structs.replace(event, time="T"))


def assert_fold_agrees(session: Session) -> None:
    log = list(session.log)
    messages = session.messages()
    assert enc(messages) == enc(derive_messages(log))
    assert messages == derive_messages(log)
    assert is_deep_frozen(messages) == reference_is_deep_frozen(derive_messages(log))
    fold = session.fold()  # for a plain list, a fresh fold: take both from the same one
    assert_conversation_is(fold.conversation(), fold.messages())
    assert session.conversation() == messages
    if isinstance(session.log, EventLog):
        assert session.conversation() is session.conversation()  # until a message changes
    assert session.header() is fold_header(log)
    for kind in (StepStart, StepEnd, TurnStart, RequestHeader, UserMessage, ToolResult):
        assert session.count(kind) == sum(isinstance(e, kind) for e in log)
    assert (session.count(RequestHeader) > 0) == has_header(log)
    folded, committed = session.fold().parts()
    if isinstance(session.log, EventLog):  # a plain list is folded afresh at every read
        assert folded is session.messages()
    assert enc(folded) == enc(messages)
    assert len(folded) - committed in (0, 1)


def assert_conversation_is(conversation: Conversation, messages: tuple[Any, ...]) -> None:
    """A Conversation is the tuple of its messages in every way but its type."""
    assert conversation == messages and messages == conversation
    assert (conversation != messages) is False
    try:
        hashed = hash(messages)
    except TypeError:  # a set inside: neither hashes
        with pytest.raises(TypeError):
            hash(conversation)
    else:
        assert hash(conversation) == hashed
    assert len(conversation) == len(messages)
    assert all(a is b for a, b in zip(conversation, messages, strict=True))
    size = len(messages)
    assert all(conversation[i] is messages[i] for i in range(-size, size))
    for index in (size, -size - 1):
        with pytest.raises(IndexError):
            conversation[index]
    for part in (slice(1, None), slice(None, -1), slice(None, None, -1), slice(0, 9, 2)):
        assert conversation[part] == messages[part]
    assert list(reversed(conversation)) == list(reversed(messages))
    assert messages_json(conversation) == enc(messages)
    assert is_deep_frozen(conversation) == is_deep_frozen(messages)
    assert deep_freeze(conversation) is conversation
    assert (messages[-1] in conversation) if messages else (len(conversation) == 0)


@SETTINGS
@given(script=st.lists(st.tuples(actions, st.booleans()), max_size=25))
@example(
    script=[
        (("append", UserMessage(text="hi")), True),
        (
            (
                "append",
                AssistantMessage(
                    content=(ToolUseBlock("c1", "bash", {"s": {1}}),), stop_reason="tool_use"
                ),
            ),
            True,
        ),
        (("append", ToolResult(tool_use_id="c1", name="bash", content="r")), True),
    ]
)
def test_the_incremental_fold_agrees_with_the_reference_functions(
    script: list[tuple[tuple[str, Any], bool]],
) -> None:
    session = Session(Context(), session_id="s", clock=lambda: "T")
    for (action, payload), read in script:
        log = session.log
        if action == "append":
            session.append(payload)
        elif action == "extend":
            log.extend(stamped(e) for e in payload)
        elif action == "insert":
            log.insert(0, stamped(payload))
        elif action == "pop" and log:
            log.pop()
        elif action == "replace-last" and log:
            log[-1] = stamped(payload)
        elif action == "delete-first" and log:
            del log[0]
        elif action == "reverse":
            log.reverse()
        elif action == "plain-list":
            session.log = list(log)  # a plain list: refolded from scratch on every read
        elif action == "event-log":
            session.log = EventLog(log)
        if read:
            assert_fold_agrees(session)
    assert_fold_agrees(session)


def test_every_change_but_growth_bumps_the_revision() -> None:
    log = EventLog([stamped(StepStart(step=1))])
    before = log.revision
    log.append(stamped(StepStart(step=2)))
    log.extend([stamped(StepStart(step=3))])
    log += [stamped(StepStart(step=4))]
    assert log.revision == before
    for change in (
        lambda: log.insert(0, stamped(StepStart(step=0))),
        lambda: log.pop(),
        lambda: log.__setitem__(0, stamped(StepStart(step=9))),
        lambda: log.__delitem__(0),
        lambda: log.reverse(),
        lambda: log.sort(key=lambda e: e.step),
        lambda: log.remove(log[0]),
        lambda: log.__imul__(1),
        lambda: log.__init__([]),
        lambda: log.clear(),
    ):
        revision = log.revision
        change()
        assert log.revision > revision


def test_committed_messages_never_change_within_a_fold() -> None:
    session = Session(Context(), session_id="s", clock=lambda: "T")
    seen: list[Any] = []
    for event in [
        UserMessage(text="hi"),
        AssistantMessage(content=(ToolUseBlock("c1", "bash", {}),), stop_reason="tool_use"),
        ToolResult(tool_use_id="c1", name="bash", content="one"),
        ToolResult(tool_use_id="c2", name="bash", content="two"),
        AssistantMessage(content=(TextBlock("done"),), stop_reason="end_turn"),
        UserMessage(text="again"),
    ]:
        session.append(event)
        messages, committed = session.fold().parts()
        seen.append(messages[:committed])
    for earlier, later in itertools.pairwise(seen):
        assert all(a is b for a, b in zip(earlier, later, strict=False))


# -- headers: canonical form remembered, equality as bytes ----------------------------------------

parameters = st.dictionaries(
    st.sampled_from(["type", "a", "b"]),
    st.sampled_from([1, True, 1.0, "x", [1], {"k": 1}]),
    max_size=3,
)
tool_lists = st.lists(
    st.builds(ToolSchema, st.sampled_from(["a", "b"]), st.just(""), parameters), max_size=3
)
configs = st.builds(
    LlmConfig,
    provider=st.just("p"),
    model=st.sampled_from(["m", "n"]),
    max_tokens=st.sampled_from([1024, 5]),
)


def any_header(config: LlmConfig, system: str, tools: list[ToolSchema], shared: bool) -> Header:
    if shared:  # shared frozen copies, as a read-only assembly gives them
        return canonical_header(config, system, [ToolSchema.frozen_copy_of(t) for t in tools])
    return canonical_header(config, system, tools)


@SETTINGS
@given(
    a=st.tuples(configs, st.sampled_from(["", "s", "t"]), tool_lists, st.booleans()),
    b=st.tuples(configs, st.sampled_from(["", "s", "t"]), tool_lists, st.booleans()),
)
def test_header_equality_is_byte_equality(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    first, second = any_header(*a), any_header(*b)
    again = any_header(*a)
    for x, y in ((first, second), (first, again), (second, first)):
        assert header_equals(x, y) == (header_bytes(x) == header_bytes(y))
    assert header_bytes(again) == header_bytes(first)
    direct = Header(config=a[0], system=a[1] or msgspec.UNSET, tools=tuple(a[2]) or msgspec.UNSET)
    assert header_equals(first, direct) == (header_bytes(first) == header_bytes(direct))
    assert enc(first) == enc(deep_freeze(direct))


def test_a_header_built_again_from_the_same_shared_tools_is_the_same_object() -> None:
    tools = [ToolSchema.frozen_copy_of(ToolSchema(n, "", {"type": "object"})) for n in "ab"]
    first = canonical_header(CONFIG, "system", tools)
    assert canonical_header(LlmConfig(provider="scripted", model="m"), "system", tools) is first
    assert canonical_header(CONFIG, "other", tools) is not first
    assert (
        canonical_header(LlmConfig(provider="scripted", model="m", max_tokens=5), "system", tools)
        is not first
    )


def test_unencodable_headers_still_raise_when_compared() -> None:
    tools = [ToolSchema.frozen_copy_of(ToolSchema("a", "", {}))]
    first = canonical_header(CONFIG, "bad \ud800", tools)
    second = canonical_header(CONFIG, "bad \ud800", list(tools))
    assert first is not second  # never remembered: it cannot be encoded
    for other in (second, deep_freeze(Header(config=CONFIG, system="bad \ud800"))):
        with pytest.raises(UnicodeEncodeError):
            header_equals(first, other)


# -- tools: shared frozen copies, remembered orders ------------------------------------------------


@SETTINGS
@given(name=st.text(max_size=3), description=st.text(max_size=3), params=values)
def test_a_frozen_copy_is_a_frozen_plain_copy(name: str, description: str, params: Any) -> None:
    source = ToolSchema(name, description, params)
    try:
        expected = deep_freeze(ToolSchema.copy_of(source))
    except (TypeError, ValueError, msgspec.EncodeError) as error:
        with pytest.raises(type(error)):
            ToolSchema.frozen_copy_of(source)
        return
    copy = ToolSchema.frozen_copy_of(source)
    assert shape(copy) == shape(expected)
    assert is_deep_frozen(copy)
    assert ToolSchema.frozen_copy_of(ToolSchema(name, description, params)) is copy
    frozen_source = deep_freeze(source)
    assert shape(ToolSchema.frozen_copy_of(frozen_source)) == shape(expected)


def test_a_frozen_copy_follows_a_source_edited_in_place() -> None:
    source = ToolSchema("t", "", {"type": "object", "properties": {}})
    before = ToolSchema.frozen_copy_of(source)
    source.parameters["properties"]["x"] = {"type": "string"}
    after = ToolSchema.frozen_copy_of(source)
    assert "x" in after.parameters["properties"] and "x" not in before.parameters["properties"]


names = st.lists(st.sampled_from(["a", "b", "c", "é", "𝔵", "\ue000"]), max_size=6)
orders = st.one_of(
    st.none(),
    st.lists(st.sampled_from(["a", "b", "ghost"]), unique=True, max_size=2).flatmap(
        lambda listed: st.permutations([*listed, TOOL_ORDER_REST])
    ),
)


@SETTINGS
@given(first=names, second=names, tool_order=orders)
def test_assembly_orders_tools_exactly_as_order_tools(
    first: list[str], second: list[str], tool_order: list[str] | None
) -> None:
    config = SystemPromptConfig(tool_order=tuple(tool_order) if tool_order else msgspec.UNSET)
    prompt = SystemPrompt(Context(), config)
    for batch in (first, second, first):  # remembered, then another, then remembered again
        tools = [ToolSchema(n, str(i), {}) for i, n in enumerate(batch)]
        try:
            expected = order_tools(tools, config.tool_order)
        except ToolOrderError as error:
            with pytest.raises(ToolOrderError, match=re.escape(str(error))):
                prompt._in_order(tools)
            continue
        got = prompt._in_order(tools)
        assert [id(t) for t in got] == [id(t) for t in expected]


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_a_read_only_assembly_has_the_bytes_of_a_plain_one() -> None:
    ctx = Context()
    runtime = ToolRuntime()
    prompt = SystemPrompt(ctx, SystemPromptConfig(tool_order=("b", TOOL_ORDER_REST)))
    prompt.add_tool_provider(runtime.schemas)
    frozen = [deep_freeze(ToolSchema("z", "", {"type": "object", "x": [1]}))]
    prompt.add_tool_provider(lambda: frozen)
    mutable = [ToolSchema("m", "", {"type": "object", "properties": {}})]  # not a registry's
    prompt.add_tool_provider(lambda: mutable)
    disposers = {
        name: runtime.register(ToolSchema(name, "", {"type": "object", "properties": {}}))
        for name in "cab"
    }
    for _ in range(2):
        plain = run(prompt.assemble())
        shared = run(prompt.assemble(read_only=True))
        assert enc(shared.tools) == enc(plain.tools)
        assert all(is_deep_frozen(t) for t in shared.tools)
        assert not any(is_deep_frozen(t) for t in plain.tools)
    before = run(prompt.assemble(read_only=True)).tools
    # The fallback: a provider's own mutable schema edited in place is seen (re-encoded).
    mutable[0].parameters["properties"]["new"] = {}
    after = run(prompt.assemble(read_only=True)).tools
    assert enc(after) == enc(run(prompt.assemble()).tools) != enc(before)
    assert next(t for t in after if t.name == "m").parameters["properties"] == {"new": {}}
    # The registry's schemas are frozen (decision 0012): an edit in place raises, and a schema
    # registered anew is seen.
    with pytest.raises(FrozenError):
        runtime.schemas()[0].parameters["properties"]["new"] = {}
    disposers["c"]()
    runtime.register(ToolSchema("c", "new", {"type": "object", "properties": {}}))
    changed = run(prompt.assemble(read_only=True)).tools
    assert [t.description for t in changed if t.name == "c"] == ["new"]
    assert enc(changed) == enc(run(prompt.assemble()).tools)

    async def edit(assembly: PromptAssembly, next_: Any) -> Any:
        assembly.tools[0].parameters["edited"] = True  # a listener may edit its copies
        return await next_()

    ctx.on(ASSEMBLE_EVENT, edit)
    edited = run(prompt.assemble(read_only=True))
    assert edited.tools[0].parameters["edited"] is True
    assert "edited" not in runtime.schemas()[0].parameters


# What may change between two assemblies. The fast path (read-only, no listener) must give
# exactly what assembling from scratch gives, or raise what it raises.
prompt_changes = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(["a", "b", "c", "", "𝔵"])),
    st.tuples(st.just("dispose"), st.integers(0, 5)),
    st.tuples(st.just("same tuple"), st.none()),
    st.tuples(st.just("new tuple"), st.sampled_from(["a", "d", ""])),
    st.tuples(st.just("new frozen tuple"), st.sampled_from(["a", "g", ""])),
    st.tuples(st.just("async provider"), st.none()),
    st.tuples(st.just("edit tuple member"), st.integers(0, 3)),
    st.tuples(st.just("edit mutable"), st.integers(0, 3)),
    st.tuples(st.just("variable"), st.sampled_from(["/w", "/v", None])),
    st.tuples(st.just("section"), st.sampled_from([0, 100, 2000])),
    st.tuples(st.just("complete"), st.none()),
    st.tuples(st.just("drop section"), st.none()),
    st.tuples(st.just("replace section"), st.sampled_from([0, 100, 2000])),
    st.tuples(st.just("tool order"), orders),
    st.tuples(st.just("listener"), st.none()),
    st.tuples(st.just("second prompt"), st.none()),
)


def awaiting(tools: tuple[ToolSchema, ...]) -> Any:
    """An async tool provider returning `tools`."""

    async def provide() -> tuple[ToolSchema, ...]:
        return tools

    return provide


def reference_assembly(prompt: SystemPrompt) -> tuple[bytes, str | None]:
    """Sections, tools and rendered text computed from scratch, as the spec says."""
    sections = [s for s in prompt._sections if s.complete]
    if len(sections) > 1:
        raise PromptAssemblyError("more than one complete system prompt section")
    sections = sections or sorted(prompt._sections, key=lambda s: s.order)
    tools = order_tools(run(prompt.collect_tools()), prompt.config.tool_order)
    check_assembly(PromptAssembly(list(sections), tools, dict(prompt.variables)))
    assembly = PromptAssembly(list(sections), tools, dict(prompt.variables))
    try:
        text = render_prompt(PromptAssembly(list(sections), [], dict(prompt.variables)))
    except PromptRenderError:
        text = None
    return enc(assembly), text


@pytest.mark.slow
@settings(SETTINGS, max_examples=examples(200))
@given(changes=st.lists(prompt_changes, max_size=12), with_list=st.booleans())
@example(changes=[("tool order", [TOOL_ORDER_REST, "a"]), ("tool order", None)], with_list=False)
@example(changes=[("tool order", ["a", "ghost", TOOL_ORDER_REST])], with_list=True)
@example(changes=[("register", "b"), ("dispose", 0), ("register", "")], with_list=True)
@example(changes=[("new tuple", "d"), ("same tuple", None), ("new tuple", "")], with_list=True)
@example(changes=[("edit mutable", 1), ("variable", "/w"), ("edit mutable", 2)], with_list=True)
@example(
    changes=[("variable", "/w"), ("section", 0), ("drop section", None), ("variable", None)],
    with_list=True,
)
@example(changes=[("complete", None), ("complete", None), ("drop section", None)], with_list=True)
@example(changes=[("variable", "/w"), ("section", 0), ("replace section", 2000)], with_list=True)
@example(
    changes=[("new frozen tuple", "g"), ("same tuple", None), ("register", "b"), ("dispose", 0)],
    with_list=False,
)
@example(
    changes=[("async provider", None), ("new frozen tuple", "a"), ("async provider", None)],
    with_list=False,
)
@example(changes=[("variable", "/w"), ("listener", None), ("second prompt", None)], with_list=True)
@example(
    changes=[("new tuple", "d"), ("edit tuple member", 1), ("edit tuple member", 2)],
    with_list=False,
)
def test_a_read_only_assembly_is_assembling_from_scratch(
    changes: list[tuple[str, Any]], with_list: bool
) -> None:
    ctx = Context()
    runtime = ToolRuntime()
    prompt = SystemPrompt(ctx, SystemPromptConfig())
    prompt.set_variable("platform", "linux")
    prompt.add_tool_provider(runtime.frozen_schemas)
    own = [(deep_freeze(ToolSchema("e", "", {"type": "object"})),)]
    prompt.add_tool_provider(lambda: own[0])
    mutable = [ToolSchema("m", "", {"type": "object", "properties": {}})]
    if with_list:  # a provider returning a list: never proven unchanged by identity alone
        prompt.add_tool_provider(lambda: mutable)
    disposers: list[Any] = []
    removers: list[Any] = []
    for action, value in [("register", "a"), *changes]:
        if action == "register":
            disposers.append(runtime.register(ToolSchema(value, "", {"type": "object"})))
        elif action == "dispose" and disposers:
            disposers.pop(value % len(disposers))()
        elif action == "same tuple":
            own[0] = (*own[0],)  # the same objects in a new tuple
        elif action == "new tuple":
            own[0] = (*own[0], ToolSchema(value, "x", {"type": "object"}))
        elif action == "new frozen tuple":
            own[0] = (*own[0], deep_freeze(ToolSchema(value, "f", {"type": "object"})))
        elif action == "edit tuple member":  # a tuple is immutable, its schemas' dicts are not
            editable = [t for t in own[0] if not is_deep_frozen(t)]
            if editable:
                editable[-1].parameters[f"x{value}"] = value
        elif action == "async provider":
            prompt.add_tool_provider(awaiting(own[0]))
        elif action == "edit mutable":
            mutable[0].parameters["properties"][f"p{value}"] = {}
        elif action == "variable":
            prompt.set_variable("cwd", value)
        elif action == "section":
            removers.append(prompt.add_section(Section(f"s{value}", f"at {value}", value)))
        elif action == "complete":
            removers.append(prompt.add_section(Section("whole", "complete", complete=True)))
        elif action == "drop section" and removers:
            removers.pop()()
        elif action == "replace section" and removers:  # as many sections, another one
            removers.pop()()
            removers.append(prompt.add_section(Section(f"r{value}", f"now {value}", value)))
        elif action == "tool order":
            prompt.config = SystemPromptConfig(tool_order=tuple(value) if value else msgspec.UNSET)
        elif action == "listener":
            ctx.on(ASSEMBLE_EVENT, lambda assembly, next_: next_())  # observed from now on
        elif action == "second prompt":
            SystemPrompt(ctx)  # a second invariant listener on the same context
        try:
            expected, text = reference_assembly(prompt)
        except (ToolOrderError, PromptAssemblyError) as error:
            with pytest.raises(type(error)):
                run(prompt.assemble(read_only=True))
            continue
        for _ in range(2):  # the second time from what the first remembered
            assembly = run(prompt.assemble(read_only=True))
            assert enc(assembly) == expected
            if text is None:
                with pytest.raises(PromptRenderError):
                    render_prompt(assembly)
                continue
            rendered = render_prompt(assembly)
            assert rendered == text
            header = canonical_header(CONFIG, rendered, assembly.tools)
            assert header_bytes(header) == header_bytes(
                canonical_header(CONFIG, rendered, list(assembly.tools))
            )


def test_a_read_only_assembly_refuses_changes_and_a_later_bad_tool_is_still_refused() -> None:
    ctx = Context()
    prompt = SystemPrompt(ctx, SystemPromptConfig())
    tools = [(deep_freeze(ToolSchema("a", "", {})),)]
    prompt.add_tool_provider(lambda: tools[0])
    assembly = run(prompt.assemble(read_only=True))
    assert type(assembly.tools) is FrozenList and type(assembly.sections) is FrozenList
    for change in (
        lambda: assembly.tools.append(assembly.tools[0]),
        lambda: assembly.tools.reverse(),
        lambda: assembly.sections.pop(),
        lambda: assembly.tools.__setitem__(0, assembly.tools[0]),
    ):
        with pytest.raises(FrozenError):
            change()
    assert list(assembly.tools) == list(tools[0])
    assert type(run(prompt.assemble()).tools) is list  # a plain assembly stays editable
    tools[0] = (deep_freeze(ToolSchema("", "", {})),)  # the check is not skipped for new tools
    for _ in range(2):
        with pytest.raises(PromptAssemblyError, match="without a name"):
            run(prompt.assemble(read_only=True))


def cyclic_garbage(work: Any) -> int:
    """How many objects `work` left that only the cyclic garbage collector could free."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        work()
        gc.collect()
        return len(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.slow
def test_a_waterfall_leaves_no_reference_cycle_behind() -> None:
    ctx = Context()

    async def add(value: int, next_: Any) -> int:
        return int(await next_(value + 1))

    ctx.on("e", add)
    ctx.on("e", add)

    def waterfalls(count: int) -> None:
        async def main() -> None:
            for _ in range(count):
                assert await ctx.waterfall("e", 1) == 3

        run(main())

    # A cycle per waterfall leaves at least 200 more objects after 200 of them than after none,
    # in every attempt. Garbage another thread (a pool of an earlier test) drops into the window
    # is noise, so one clean attempt of three is enough.
    attempts = [
        (cyclic_garbage(lambda: waterfalls(200)), cyclic_garbage(lambda: waterfalls(0)))
        for _ in range(3)
    ]
    assert any(many == none for many, none in attempts), attempts


@pytest.mark.slow
def test_a_longer_session_leaves_no_more_cyclic_garbage_and_its_values_are_untracked() -> None:
    from harness.agent import AgentCoreConfig, ScriptedReply, ScriptedToolCall, boot_agent

    def session(turns: int) -> Any:
        replies = []
        for turn in range(turns):
            replies += [
                ScriptedReply(text="x", tool_calls=(ScriptedToolCall(f"c{turn}", "t", {"a": 1}),)),
                ScriptedReply(text="done"),
            ]

        async def main() -> Any:
            agent = await boot_agent(
                AgentCoreConfig(),
                adapter=ScriptedAdapter(replies, keep_requests=False),  # the requests live on
                variables={"cwd": "/w", "platform": "linux"},
            )
            agent.tools.register(ToolSchema("t", "", {}), lambda _: "ok")
            for _ in range(turns):
                assert (await agent.turn("go")).reason == "completed"
            return agent.session

        return run(main())

    # Ten more turns (twenty more steps) leave next to nothing more (a cache entry or two):
    # a cycle per step would leave at least three objects a step.
    assert cyclic_garbage(lambda: session(12)) - cyclic_garbage(lambda: session(2)) < 10
    done = session(2)
    assert not any(gc.is_tracked(event) for event in done.log)
    assert not any(gc.is_tracked(message) for message in done.messages())


def test_render_remembers_successes_and_still_refuses_errors() -> None:
    sections = [Section("one", "cwd {{cwd}}"), Section("two", "text")]
    good = PromptAssembly(list(sections), [], {"cwd": "/w"})
    assert render_prompt(good) == "cwd /w\n\ntext"
    assert render_prompt(PromptAssembly(list(sections), [], {"cwd": "/w"})) is render_prompt(good)
    for broken in ({"cwd": None}, {}):
        with pytest.raises(PromptRenderError):
            render_prompt(PromptAssembly(list(sections), [], broken))
    assert render_prompt(PromptAssembly(list(sections), [], {"cwd": "/v"})) == "cwd /v\n\ntext"


def test_a_call_runs_the_first_registered_handler_of_that_name() -> None:
    runtime = ToolRuntime()
    runtime.register_handler("t", lambda _: "fallback")
    assert run(runtime.call("t", {})) == "fallback"
    dispose_first = runtime.register(ToolSchema("t", "", {}), lambda _: "first")
    runtime.register(ToolSchema("t", "", {}), lambda _: "second")
    runtime.register(ToolSchema("u", "", {}))  # no handler: not callable by itself
    assert run(runtime.call("t", {})) == "first"
    dispose_first()
    assert run(runtime.call("t", {})) == "second"
    with pytest.raises(Exception, match="no registered tool named 'u'"):
        run(runtime.call("u", {}))


@pytest.mark.parametrize("share", [False, True], ids=["tuples", "shared"])
@pytest.mark.parametrize(
    ("replace", "fails"),
    [
        (lambda messages: tuple(messages), None),  # equal messages, another object: compared
        (lambda messages: tuple(messages)[:-1], "messages differ from the log's"),
        (
            lambda messages: Conversation([*messages][:-1], len(messages) - 1, frozen=True),
            "messages differ from the log's",
        ),
        (lambda messages: Conversation([*messages], len(messages), frozen=True), None),
        (lambda messages: Conversation([*messages], len(messages)), "not deep-frozen"),
    ],
    ids=["equal tuple", "shorter tuple", "shorter view", "equal view", "unchecked view"],
)
def test_the_invariant_compares_messages_that_are_not_the_sessions_own(
    share: bool, replace: Any, fails: str | None
) -> None:
    from harness.agent import (
        REQUEST_EVENT,
        AgentCoreConfig,
        ScriptedReply,
        ScriptedToolCall,
        boot_agent,
    )

    replies = [
        ScriptedReply(tool_calls=(ScriptedToolCall("c1", "t"),)),
        ScriptedReply(text="done"),
    ]

    async def main() -> Any:
        agent = await boot_agent(
            AgentCoreConfig(),
            adapter=ScriptedAdapter(replies),
            share_conversation=share,
            variables={"cwd": "/w", "platform": "linux"},
        )
        agent.tools.register(ToolSchema("t", "", {}), lambda _: "ok")

        async def swap(request: Any, next_: Any) -> Any:
            return await next_(request.replace(messages=replace(request.messages)))

        agent.ctx.on(REQUEST_EVENT, swap)
        return await agent.turn("hi")

    end = run(main())
    if fails:
        assert end.reason == "error" and fails in end.message
    else:
        assert end.reason == "completed"


def test_the_plugin_check_is_the_protocol_check() -> None:
    from harness.agent import Plugin
    from harness.agent._context import _is_plugin

    class Named:
        name = "n"

        def apply(self, ctx: Context) -> None:
            return None

    class Blocked(Named):
        apply = None  # type: ignore[assignment]

    class Nameless:
        def apply(self, ctx: Context) -> None:
            return None

    class Declared(Plugin):  # a nominal subclass that defines nothing
        pass

    def function(ctx: Context) -> None:
        return None

    candidates: list[object] = [Named(), Blocked(), Nameless(), Declared(), function, 3, None]
    for candidate in candidates:
        assert _is_plugin(candidate) == isinstance(candidate, Plugin)
