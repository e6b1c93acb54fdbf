"""SystemPrompt: the one owner of the model-side order of sections and tools (SPEC part A)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agent import (
    ASSEMBLE_EVENT,
    TOOL_ORDER_REST,
    Context,
    PromptAssembly,
    PromptAssemblyError,
    PromptRenderError,
    Section,
    SystemPrompt,
    SystemPromptConfig,
    ToolOrderError,
    ToolRuntime,
    ToolSchema,
    order_tools,
    render_prompt,
    validate_tool_order,
)
from tests.support.properties import examples

REST = TOOL_ORDER_REST
RESERVED_MESSAGE = (
    'tool provider returned reserved tool name "<unlisted-tools>" '
    "(reserved for toolOrder's rest entry)"
)
MISSING_REST_MESSAGE = (
    'toolOrder must contain the "<unlisted-tools>" rest entry (where unlisted tools are inserted)'
)


def tool(name: str, description: str = "") -> ToolSchema:
    return ToolSchema(name, description, {"type": "object", "properties": {}})


def names(tools: Iterable[ToolSchema]) -> list[str]:
    return [t.name for t in tools]


def bare_config(**fields: object) -> SystemPromptConfig:
    """A config without the built-in sections, so tests see only what they add."""
    return SystemPromptConfig(
        include_harness_identity=False,
        include_runtime_context=False,
        **fields,
    )


def make_prompt(
    *providers: Sequence[ToolSchema], config: SystemPromptConfig | None = None
) -> tuple[Context, SystemPrompt]:
    ctx = Context()
    prompt = SystemPrompt(ctx, config or bare_config())
    for provided in providers:
        prompt.add_tool_provider(lambda provided=provided: list(provided))
    return ctx, prompt


def utf16_units(name: str) -> list[int]:
    """An oracle for JavaScript's string order, written out by hand (no codec involved)."""
    units: list[int] = []
    for char in name:
        point = ord(char)
        if point > 0xFFFF:
            point -= 0x10000
            units += [0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)]
        else:
            units.append(point)
    return units


# -- order_tools: the default order --------------------------------------------------------------


def test_without_tool_order_tools_are_sorted_by_name() -> None:
    tools = [tool("todo_write"), tool("bash"), tool("Read"), tool("_x"), tool("grep")]
    assert names(order_tools(tools, msgspec.UNSET)) == ["Read", "_x", "bash", "grep", "todo_write"]


def test_none_and_unset_tool_order_mean_the_same_default_order() -> None:
    tools = [tool("b"), tool("c"), tool("a")]
    assert order_tools(tools, None) == order_tools(tools, msgspec.UNSET)


def test_default_sort_is_stable_for_equal_names() -> None:
    first, second = tool("bash", "from plugin one"), tool("bash", "from plugin two")
    assert order_tools([tool("zed"), first, second], msgspec.UNSET) == [first, second, tool("zed")]
    assert order_tools([second, tool("a"), first], msgspec.UNSET) == [tool("a"), second, first]


def test_order_tools_does_not_reorder_its_input() -> None:
    tools = [tool("b"), tool("a")]
    order_tools(tools, msgspec.UNSET)
    assert names(tools) == ["b", "a"]


def test_default_order_compares_utf16_code_units_not_code_points() -> None:
    astral, fullwidth_tilde = "\U0001f600", "\uff5e"
    tools = [tool(fullwidth_tilde), tool(astral)]
    # Python's own order puts U+FF5E first; UTF-16 puts the surrogate pair (0xD83D...) first.
    assert sorted([fullwidth_tilde, astral]) == [fullwidth_tilde, astral]
    assert names(order_tools(tools, msgspec.UNSET)) == [astral, fullwidth_tilde]


def test_unlisted_tools_at_the_rest_entry_use_utf16_order_too() -> None:
    tools = [tool("\ue000"), tool("a\U00010000"), tool("bash")]
    ordered = order_tools(tools, ("bash", REST))
    assert names(ordered) == ["bash", "a\U00010000", "\ue000"]


# -- order_tools: list and rest positions --------------------------------------------------------

REGISTERED = [tool("web_fetch"), tool("todo_write"), tool("bash"), tool("read"), tool("grep")]


@pytest.mark.parametrize(
    ("tool_order", "expected"),
    [
        pytest.param(
            (REST, "todo_write", "bash"),
            ["grep", "read", "web_fetch", "todo_write", "bash"],
            id="rest-first",
        ),
        pytest.param(
            ("todo_write", REST, "bash"),
            ["todo_write", "grep", "read", "web_fetch", "bash"],
            id="rest-middle",
        ),
        pytest.param(
            ("todo_write", "bash", REST),
            ["todo_write", "bash", "grep", "read", "web_fetch"],
            id="rest-last",
        ),
        pytest.param((REST,), ["bash", "grep", "read", "todo_write", "web_fetch"], id="rest-only"),
        pytest.param(
            ("web_fetch", "todo_write", "bash", "read", "grep", REST),
            ["web_fetch", "todo_write", "bash", "read", "grep"],
            id="everything-listed",
        ),
    ],
)
def test_listed_tools_take_list_positions_and_unlisted_ones_sort_at_the_rest_entry(
    tool_order: tuple[str, ...], expected: list[str]
) -> None:
    assert names(order_tools(REGISTERED, tool_order)) == expected


def test_a_shared_listed_name_expands_to_every_tool_with_it_in_collection_order() -> None:
    one, two = tool("bash", "one"), tool("bash", "two")
    ordered = order_tools([tool("zed"), one, tool("a"), two], ("bash", REST))
    assert ordered == [one, two, tool("a"), tool("zed")]
    assert order_tools([two, one], ("bash", REST)) == [two, one]


def test_a_shared_unlisted_name_keeps_collection_order_at_the_rest_entry() -> None:
    one, two = tool("grep", "one"), tool("grep", "two")
    assert order_tools([two, tool("bash"), one], ("bash", REST)) == [tool("bash"), two, one]


def test_known_names_count_as_registered_without_being_in_the_tool_list() -> None:
    ordered = order_tools([tool("bash")], ("ghost", REST), known_names=["bash", "ghost"])
    assert names(ordered) == ["bash"]


@pytest.mark.anyio
async def test_tools_sharing_a_name_across_providers_follow_provider_registration_order() -> None:
    one, two = tool("bash", "provider one"), tool("bash", "provider two")
    config = bare_config(tool_order=("bash", REST))
    _, prompt = make_prompt([tool("a"), one], [two], config=config)
    assert (await prompt.assemble()).tools == [one, two, tool("a")]
    _, swapped = make_prompt([two], [tool("a"), one], config=config)
    assert (await swapped.assemble()).tools == [two, one, tool("a")]


# -- invalid lists -------------------------------------------------------------------------------


def test_tool_order_error_is_a_value_error() -> None:
    assert issubclass(ToolOrderError, ValueError)


@pytest.mark.parametrize(
    ("tool_order", "message"),
    [
        (("bash", REST, "bash"), 'toolOrder lists "bash" more than once'),
        ((REST, "todo_write", REST), 'toolOrder lists "<unlisted-tools>" more than once'),
        (("bash", "todo_write"), MISSING_REST_MESSAGE),
        ((), MISSING_REST_MESSAGE),
    ],
    ids=["duplicate-name", "duplicate-rest", "missing-rest", "empty"],
)
def test_malformed_tool_order_fails_in_the_constructor(
    tool_order: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ToolOrderError) as shape_error:
        validate_tool_order(tool_order)
    assert str(shape_error.value) == message
    with pytest.raises(ToolOrderError) as constructor_error:
        SystemPrompt(Context(), SystemPromptConfig(tool_order=tool_order))
    assert str(constructor_error.value) == message


def test_validate_tool_order_returns_a_valid_list_as_a_tuple() -> None:
    assert validate_tool_order(["bash", REST]) == ("bash", REST)


@pytest.mark.anyio
async def test_config_decoded_without_tool_order_keeps_it_unset_and_sorts() -> None:
    config = msgspec.json.decode(b"{}", type=SystemPromptConfig)
    assert config.tool_order is msgspec.UNSET
    assert b"tool_order" not in msgspec.json.encode(config)
    _, prompt = make_prompt([tool("b"), tool("a")], config=config)
    assert names((await prompt.assemble()).tools) == ["a", "b"]


def test_config_decoded_with_an_empty_tool_order_is_rejected_by_the_constructor() -> None:
    config = msgspec.json.decode(b'{"tool_order": []}', type=SystemPromptConfig)
    assert config.tool_order == ()
    with pytest.raises(ToolOrderError) as error:
        SystemPrompt(Context(), config)
    assert str(error.value) == MISSING_REST_MESSAGE


def test_config_conversion_keeps_absent_and_empty_tool_order_apart() -> None:
    assert msgspec.convert({}, SystemPromptConfig).tool_order is msgspec.UNSET
    assert msgspec.convert({"tool_order": []}, SystemPromptConfig).tool_order == ()


# -- unknown and reserved names ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("registered", "tool_order", "message"),
    [
        (
            ["todo_write", "bash"],
            ("ghost", REST),
            'toolOrder lists unregistered tool "ghost"; known tools: bash, todo_write',
        ),
        (
            ["bash"],
            ("a", REST, "bash", "b"),
            'toolOrder lists unregistered tools "a", "b"; known tools: bash',
        ),
        ([], ("ghost", REST), 'toolOrder lists unregistered tool "ghost"; known tools: (none)'),
        (
            ["\uff5e", "\U0001f600"],
            ("ghost", REST),
            'toolOrder lists unregistered tool "ghost"; known tools: \U0001f600, \uff5e',
        ),
    ],
    ids=["singular", "plural", "none-registered", "known-in-utf16-order"],
)
@pytest.mark.anyio
async def test_unregistered_listed_names_reject_assembly(
    registered: list[str], tool_order: tuple[str, ...], message: str
) -> None:
    _, prompt = make_prompt(
        [tool(n) for n in registered], config=bare_config(tool_order=tool_order)
    )
    with pytest.raises(ToolOrderError) as error:
        await prompt.assemble()
    assert str(error.value) == message


@pytest.mark.anyio
async def test_an_unregistered_name_rejects_every_assembly_until_the_tool_registers() -> None:
    ctx = Context()
    runtime = ToolRuntime()
    prompt = SystemPrompt(ctx, bare_config(tool_order=("ghost", REST)))
    prompt.add_tool_provider(runtime.schemas)
    runtime.register(tool("bash"))
    for _ in range(3):
        with pytest.raises(ToolOrderError, match='unregistered tool "ghost"'):
            await prompt.assemble()
    runtime.register(tool("ghost"))
    assert names((await prompt.assemble()).tools) == ["ghost", "bash"]


@pytest.mark.parametrize(
    "tool_order", [msgspec.UNSET, ("bash", REST)], ids=["no-tool-order", "with-tool-order"]
)
@pytest.mark.anyio
async def test_a_provider_tool_named_like_the_rest_entry_is_rejected(
    tool_order: tuple[str, ...] | msgspec.UnsetType,
) -> None:
    ctx, prompt = make_prompt([tool("bash"), tool(REST)], config=bare_config(tool_order=tool_order))
    seen: list[object] = []
    ctx.on(ASSEMBLE_EVENT, lambda assembly, next_: seen.append(assembly) or next_())
    with pytest.raises(ToolOrderError) as error:
        await prompt.assemble()
    assert str(error.value) == RESERVED_MESSAGE
    assert seen == [], "no waterfall listener may see a rejected tool list"


def test_order_tools_rejects_the_reserved_name_before_ordering() -> None:
    with pytest.raises(ToolOrderError) as error:
        order_tools([tool(REST)], msgspec.UNSET)
    assert str(error.value) == RESERVED_MESSAGE


# -- provider and registration order independence ------------------------------------------------

NAME_ALPHABET = ["a", "b", "B", "_", "z", "é", "\ue000", "\uff5e", "\U00010000", "\U0001f600"]
tool_names = st.text(st.sampled_from(NAME_ALPHABET), min_size=1, max_size=4)


def expected_order(all_names: list[str], tool_order: Sequence[str] | None) -> list[str]:
    by_units = sorted(all_names, key=utf16_units)
    if tool_order is None:
        return by_units
    listed = [n for n in tool_order if n != REST]
    rest = [n for n in by_units if n not in listed]
    at = list(tool_order).index(REST)
    return listed[:at] + rest + listed[at:]


async def assembled_names(
    provider_tools: list[list[ToolSchema]], tool_order: tuple[str, ...] | None
) -> list[str]:
    config = bare_config() if tool_order is None else bare_config(tool_order=tool_order)
    _, prompt = make_prompt(*provider_tools, config=config)
    return names((await prompt.assemble()).tools)


@pytest.mark.slow
@settings(max_examples=examples(75), deadline=None)
@given(data=st.data(), unique_names=st.lists(tool_names, unique=True, max_size=8))
def test_assembled_order_is_independent_of_registration_and_provider_order(
    data: st.DataObject, unique_names: list[str]
) -> None:
    providers = data.draw(
        st.lists(st.integers(0, 2), min_size=len(unique_names), max_size=len(unique_names))
    )
    listed = data.draw(
        st.lists(st.sampled_from(unique_names), unique=True) if unique_names else st.just([])
    )
    rest_at = data.draw(st.integers(0, len(listed)))
    tool_order = data.draw(st.sampled_from([None, (*listed[:rest_at], REST, *listed[rest_at:])]))

    def split(registration: list[str], provider_order: list[int]) -> list[list[ToolSchema]]:
        owner = dict(zip(unique_names, providers, strict=True))
        return [[tool(n) for n in registration if owner[n] == p] for p in provider_order]

    orders = []
    for _ in range(2):
        registration = data.draw(st.permutations(unique_names))
        provider_order = data.draw(st.permutations([0, 1, 2]))
        orders.append(asyncio.run(assembled_names(split(registration, provider_order), tool_order)))
    assert orders[0] == orders[1] == expected_order(unique_names, tool_order)


# -- the waterfall starts from the authoritative list --------------------------------------------


@pytest.mark.parametrize(
    ("tool_order", "authoritative"),
    [
        (msgspec.UNSET, ["bash", "read", "todo_write"]),
        (("todo_write", REST), ["todo_write", "bash", "read"]),
    ],
    ids=["default", "tool-order"],
)
@pytest.mark.anyio
async def test_the_first_waterfall_listener_sees_the_authoritative_order(
    tool_order: tuple[str, ...] | msgspec.UnsetType, authoritative: list[str]
) -> None:
    ctx = Context()
    runtime = ToolRuntime()
    prompt = SystemPrompt(ctx, bare_config(tool_order=tool_order))
    prompt.add_tool_provider(runtime.schemas)
    for name in ["read", "todo_write", "bash"]:
        runtime.register(tool(name))
    seen: list[list[str]] = []

    async def observe(assembly: PromptAssembly, next_: Any) -> Any:
        seen.append(names(assembly.tools))
        return await next_()

    ctx.on(ASSEMBLE_EVENT, observe)
    assembly = await prompt.assemble()
    assert seen == [authoritative]
    assert names(assembly.tools) == authoritative
    assert names(runtime.schemas()) == ["read", "todo_write", "bash"], "the registry never sorts"


@pytest.mark.anyio
async def test_tools_a_listener_adds_are_not_resorted() -> None:
    ctx, prompt = make_prompt([tool("bash"), tool("zed")])

    async def append_after(assembly: PromptAssembly, next_: Any) -> Any:
        result = await next_()
        result.tools.append(tool("aaa"))
        return result

    async def append_before(assembly: PromptAssembly, next_: Any) -> Any:
        assembly.tools.append(tool("aab"))
        return await next_()

    ctx.on(ASSEMBLE_EVENT, append_after)
    ctx.on(ASSEMBLE_EVENT, append_before)
    assert names((await prompt.assemble()).tools) == ["bash", "zed", "aab", "aaa"]


@pytest.mark.anyio
async def test_a_listener_may_reorder_and_remove_tools() -> None:
    ctx, prompt = make_prompt([tool("a"), tool("b"), tool("c")])

    async def reverse_without_b(assembly: PromptAssembly, next_: Any) -> Any:
        assembly.tools = [t for t in reversed(assembly.tools) if t.name != "b"]
        return await next_()

    ctx.on(ASSEMBLE_EVENT, reverse_without_b)
    assert names((await prompt.assemble()).tools) == ["c", "a"]


@pytest.mark.anyio
async def test_provider_schemas_are_copied_to_exactly_three_fields() -> None:
    provided = {"name": "bash", "description": "run", "parameters": {"type": "object"}, "x": 1}
    ctx = Context()
    prompt = SystemPrompt(ctx, bare_config())
    prompt.add_tool_provider(lambda: [provided])
    (assembled,) = (await prompt.assemble()).tools
    assert msgspec.json.encode(assembled) == (
        b'{"name":"bash","description":"run","parameters":{"type":"object"}}'
    )
    assembled.parameters["type"] = "changed"
    assert provided["parameters"] == {"type": "object"}, "the assembly holds a copy"


@pytest.mark.anyio
async def test_a_listener_editing_an_assembled_tool_does_not_edit_the_registered_one() -> None:
    ctx = Context()
    runtime = ToolRuntime()
    prompt = SystemPrompt(ctx, bare_config())
    prompt.add_tool_provider(runtime.schemas)
    runtime.register(tool("bash"))

    async def edit(assembly: PromptAssembly, next_: Any) -> Any:
        assembly.tools[0].parameters["edited"] = True
        return await next_()

    dispose = ctx.on(ASSEMBLE_EVENT, edit)
    assert "edited" in (await prompt.assemble()).tools[0].parameters
    dispose()
    assert runtime.schemas()[0].parameters == {"type": "object", "properties": {}}
    assert "edited" not in (await prompt.assemble()).tools[0].parameters


@pytest.mark.anyio
async def test_async_tool_providers_are_awaited() -> None:
    ctx = Context()
    prompt = SystemPrompt(ctx, bare_config())

    async def provider() -> list[ToolSchema]:
        await asyncio.sleep(0)
        return [tool("z"), tool("y")]

    prompt.add_tool_provider(provider)
    assert names((await prompt.assemble()).tools) == ["y", "z"]


@pytest.mark.anyio
async def test_a_removed_provider_no_longer_contributes_tools() -> None:
    ctx = Context()
    prompt = SystemPrompt(ctx, bare_config())
    remove = prompt.add_tool_provider(lambda: [tool("gone")])
    prompt.add_tool_provider(lambda: [tool("kept")])
    remove()
    assert names((await prompt.assemble()).tools) == ["kept"]


# -- the invariant listener ----------------------------------------------------------------------


def listener_that(edit: Callable[[PromptAssembly], object]) -> Callable[..., Any]:
    async def listener(assembly: PromptAssembly, next_: Any) -> Any:
        edit(assembly)
        return await next_()

    return listener


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda a: a.sections.append(Section("identity", "again")),
            'two system prompt sections are named "identity"',
        ),
        (lambda a: a.sections.append(Section("", "anonymous")), "section has an empty name"),
        (lambda a: a.tools.append(tool("")), "tool without a name"),
        (lambda a: a.tools.append({"name": "dict"}), "tool without a name"),
    ],
    ids=["duplicate-section", "empty-section-name", "empty-tool-name", "not-a-schema"],
)
@pytest.mark.anyio
async def test_the_invariant_listener_rejects_what_a_listener_breaks(
    edit: Callable[[PromptAssembly], object], message: str
) -> None:
    ctx = Context()
    prompt = SystemPrompt(ctx, SystemPromptConfig())
    prompt.add_tool_provider(lambda: [tool("bash")])
    ctx.on(ASSEMBLE_EVENT, listener_that(edit))
    with pytest.raises(PromptAssemblyError, match=message):
        await prompt.assemble()


@pytest.mark.anyio
async def test_the_invariant_checks_the_result_even_when_a_listener_vetoes_the_rest() -> None:
    ctx, prompt = make_prompt([tool("bash")])

    async def veto_with_bad_tool(assembly: PromptAssembly, next_: Any) -> Any:
        assembly.tools.append(tool(""))
        return assembly  # never calls next_

    ctx.on(ASSEMBLE_EVENT, veto_with_bad_tool)
    with pytest.raises(PromptAssemblyError):
        await prompt.assemble()


@pytest.mark.anyio
async def test_the_final_assembly_is_validated_even_around_a_later_prepended_listener() -> None:
    ctx, prompt = make_prompt([tool("bash")])

    async def outermost(assembly: PromptAssembly, next_: Any) -> Any:
        result = await next_()
        result.tools.append(tool(""))
        return result

    ctx.on(ASSEMBLE_EVENT, outermost, prepend=True)
    with pytest.raises(PromptAssemblyError):
        await prompt.assemble()


# -- sections ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_builtin_sections_come_in_their_fixed_order() -> None:
    _, prompt = make_prompt(config=SystemPromptConfig(persona="You are Ada."))
    sections = (await prompt.assemble()).sections
    assert [s.name for s in sections] == ["identity", "persona", "runtime-context"]
    assert sections[1].text == "You are Ada."


@pytest.mark.anyio
async def test_builtin_sections_can_be_switched_off_and_an_empty_persona_adds_none() -> None:
    _, prompt = make_prompt(config=bare_config())
    assert (await prompt.assemble()).sections == []


@pytest.mark.anyio
async def test_sections_are_sorted_by_order_and_ties_keep_insertion_order() -> None:
    _, prompt = make_prompt(config=SystemPromptConfig(persona="p", include_runtime_context=False))
    for section in [Section("late", "", 500), Section("tie-1", "", 100), Section("early", "", -5)]:
        prompt.add_section(section)
    prompt.add_section(Section("tie-2", "", 100))
    sections = (await prompt.assemble()).sections
    assert [s.name for s in sections] == ["early", "identity", "persona", "tie-1", "tie-2", "late"]


@pytest.mark.anyio
async def test_a_complete_section_replaces_all_the_others() -> None:
    _, prompt = make_prompt(config=SystemPromptConfig(persona="p"))
    whole = Section("prompt-file", "The whole prompt.", order=7, complete=True)
    prompt.add_section(whole)
    prompt.add_section(Section("extra", "more", order=-1))
    assert (await prompt.assemble()).sections == [whole]


@pytest.mark.anyio
async def test_two_complete_sections_are_an_error() -> None:
    _, prompt = make_prompt()
    prompt.add_section(Section("file-a", "a", complete=True))
    prompt.add_section(Section("file-b", "b", complete=True))
    with pytest.raises(PromptAssemblyError, match='"file-a", "file-b"'):
        await prompt.assemble()


@pytest.mark.anyio
async def test_a_removed_section_is_not_assembled() -> None:
    _, prompt = make_prompt()
    remove = prompt.add_section(Section("temp", "t"))
    remove()
    remove()  # removing twice is harmless
    assert (await prompt.assemble()).sections == []


# -- render_prompt -------------------------------------------------------------------------------


def assembly(*texts: str, **variables: str | None) -> PromptAssembly:
    sections = [Section(f"s{i}", text) for i, text in enumerate(texts)]
    return PromptAssembly(sections, [], dict(variables))


def test_render_joins_non_empty_sections_with_a_blank_line() -> None:
    rendered = render_prompt(assembly("First.", "", "  \n", "{{empty}}", "Second.", empty=""))
    assert rendered == "First.\n\nSecond."


def test_render_interpolates_variables() -> None:
    rendered = render_prompt(
        assembly("cwd={{cwd}} os={{os.name}}", cwd="/w", **{"os.name": "linux"})
    )
    assert rendered == "cwd=/w os=linux"


def test_render_inserts_values_literally_without_reinterpolating_them() -> None:
    assert render_prompt(assembly("{{a}}", a="{{b}}")) == "{{b}}"


@pytest.mark.parametrize(
    ("text", "variables", "error"),
    [
        ("hi {{nope}}", {}, r'section "s0": unknown variable \{\{nope\}\}'),
        ("hi {{ cwd }}", {"cwd": "/w"}, r"malformed variable reference '\{\{ cwd \}\}'"),
        ("hi {{}}", {}, "malformed variable reference"),
        ("hi {{9lives}}", {"9lives": "x"}, "malformed variable reference"),
        ("hi {{cwd}}", {"cwd": None}, r"variable \{\{cwd\}\} has no value"),
        ("hi {{cwd", {"cwd": "/w"}, "unclosed variable reference at offset 3"),
        ("{{cwd}} and {{", {"cwd": "/w"}, "unclosed variable reference at offset 12"),
    ],
    ids=[
        "unknown",
        "malformed-spaces",
        "malformed-empty",
        "malformed-digit",
        "valueless",
        "unclosed",
        "unclosed-after-valid",
    ],
)
def test_render_is_strict_about_references(
    text: str, variables: dict[str, str | None], error: str
) -> None:
    with pytest.raises(PromptRenderError, match=error):
        render_prompt(assembly(text, **variables))


def test_set_variable_rejects_names_a_reference_could_not_use() -> None:
    _, prompt = make_prompt()
    with pytest.raises(PromptRenderError):
        prompt.set_variable("not a name", "x")
    prompt.set_variable("cwd", "/w")
    assert prompt.variables["cwd"] == "/w"


@pytest.mark.anyio
async def test_the_default_runtime_context_needs_cwd_and_platform_values() -> None:
    _, prompt = make_prompt(config=SystemPromptConfig(include_harness_identity=False))
    with pytest.raises(PromptRenderError, match=r"\{\{cwd\}\} has no value"):
        render_prompt(await prompt.assemble())
    prompt.set_variable("cwd", "/work")
    prompt.set_variable("platform", "linux")
    assert render_prompt(await prompt.assemble()) == "Working directory: /work\nPlatform: linux"
