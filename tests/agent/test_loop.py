"""The agent loop, booted through the app presets: headers, frozen requests, balanced turns."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agent import (
    ASSEMBLE_EVENT,
    DISPATCH_EVENT,
    REPLY_EVENT,
    REQUEST_EVENT,
    TOOL_BEFORE_EVENT,
    TOOL_ORDER_REST,
    Agent,
    AgentCoreConfig,
    AgentError,
    AgentLoop,
    CliAppConfig,
    Context,
    FrozenError,
    InvariantError,
    LoadSchedule,
    PromptAssembly,
    Request,
    RequestHeader,
    ScriptedAdapter,
    ScriptedReply,
    ScriptedToolCall,
    Session,
    StepEnd,
    StepStart,
    TextBlock,
    ToolOrderError,
    ToolResult,
    ToolResultBlock,
    ToolSchema,
    ToolUseBlock,
    TuiAppConfig,
    TurnEnd,
    UserMessage,
    boot_agent,
    boot_app,
    canonical_header,
    check_rebuild_invariant,
    derive_messages,
    is_deep_frozen,
    register_tool,
)
from tests.support.properties import examples

REST = TOOL_ORDER_REST
VARIABLES = {"cwd": "/work", "platform": "linux"}
TEXT = ScriptedReply(text="Done.")


def schema(name: str) -> ToolSchema:
    return ToolSchema(name, f"The {name} tool.", {"type": "object", "properties": {}})


class ToolPlugin:
    """A plugin registering tools; a default handler records its call and answers "<tool> ok"."""

    def __init__(
        self, name: str, *tools: str, handlers: dict[str, Callable[..., Any]] | None = None
    ):
        self.name = name
        self.tools = tools
        self.handlers = handlers or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def apply(self, ctx: Context) -> None:
        for tool in self.tools:
            register_tool(ctx, schema(tool), self.handlers.get(tool, self._echo(tool)))

    def _echo(self, tool: str) -> Callable[[dict[str, Any]], str]:
        def handler(arguments: dict[str, Any]) -> str:
            self.calls.append((tool, arguments))
            return f"{tool} ok"

        return handler


def plugins() -> list[ToolPlugin]:
    return [
        ToolPlugin("fs", "write_file", "read_file"),
        ToolPlugin("shell", "bash"),
        ToolPlugin("todo", "todo_write"),
        ToolPlugin("web", "web_fetch"),
    ]


SORTED_TOOLS = ["bash", "read_file", "todo_write", "web_fetch", "write_file"]


async def boot(
    replies: Sequence[ScriptedReply] = (TEXT,),
    config: AgentCoreConfig | None = None,
    **options: Any,
) -> tuple[Agent, ScriptedAdapter]:
    adapter = ScriptedAdapter(replies)
    options.setdefault("plugins", plugins())
    options.setdefault("variables", VARIABLES)
    options.setdefault("clock", lambda: "T")
    agent = await boot_agent(config or AgentCoreConfig(), adapter=adapter, **options)
    return agent, adapter


def tags(log: Sequence[object]) -> list[str]:
    return [type(event).__struct_config__.tag for event in log]


def headers(agent: Agent) -> list[RequestHeader]:
    return [event for event in agent.session.log if isinstance(event, RequestHeader)]


def tool_names(tools: object) -> list[str]:
    return [] if tools is msgspec.UNSET else [t.name for t in tools]


def calling(*calls: tuple[str, str], **fields: Any) -> ScriptedReply:
    return ScriptedReply(
        tool_calls=tuple(ScriptedToolCall(id, name) for id, name in calls), **fields
    )


def assert_balanced_error(agent: Agent, end: TurnEnd, message: str) -> None:
    assert end.reason == "error"
    assert end.message == message
    errors = [e for e in agent.session.log if isinstance(e, AgentError)]
    assert errors[-1].message == message
    assert tags(agent.session.log)[-2:] == ["agent/error", "turn/end"]
    assert agent.loop.state == "idle"


# -- registration order never reaches the wire ---------------------------------------------------

SCHEDULES = [
    LoadSchedule(),
    LoadSchedule(start=("web", "todo", "shell", "fs")),
    LoadSchedule(yields={"shell": 2, "web": 1}),
    LoadSchedule(start=("todo", "fs", "web", "shell"), yields={"todo": 1, "fs": 2}),
]


@pytest.mark.parametrize(
    ("tool_order", "expected"),
    [
        (msgspec.UNSET, SORTED_TOOLS),
        (
            ("todo_write", REST, "bash"),
            ["todo_write", "read_file", "web_fetch", "write_file", "bash"],
        ),
    ],
    ids=["default-order", "tool-order"],
)
@pytest.mark.anyio
async def test_logged_and_dispatched_tool_order_agree_under_any_registration_order(
    tool_order: tuple[str, ...] | msgspec.UnsetType, expected: list[str]
) -> None:
    header_bytes, registrations = set(), set()
    for schedule in SCHEDULES:
        agent, adapter = await boot(
            config=AgentCoreConfig(tool_order=tool_order), schedule=schedule
        )
        registrations.add(tuple(s.name for s in agent.tools.schemas()))
        await agent.turn("hello")
        (logged,) = headers(agent)
        (request,) = adapter.requests
        assert tool_names(logged.header.tools) == tool_names(request.tools) == expected
        assert msgspec.json.encode(request.header()) == msgspec.json.encode(logged.header)
        header_bytes.add(msgspec.json.encode(logged.header))
    assert len(registrations) == len(SCHEDULES), "every schedule registers in its own order"
    assert len(header_bytes) == 1


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_header_bytes_do_not_depend_on_a_random_load_schedule(seed: int) -> None:
    async def header_of(schedule: LoadSchedule | None) -> bytes:
        agent, adapter = await boot(schedule=schedule)
        await agent.turn("hello")
        assert agent.registration_order == (schedule or LoadSchedule()).completion_order(
            ["fs", "shell", "todo", "web"]
        )
        assert tool_names(adapter.requests[0].tools) == SORTED_TOOLS
        return msgspec.json.encode(headers(agent)[0].header)

    schedule = LoadSchedule.shuffled(["fs", "shell", "todo", "web"], random.Random(seed))
    assert asyncio.run(header_of(schedule)) == asyncio.run(header_of(None))


# -- configuration forwarding --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "runtime_context"), [("cli", True), ("tui", False)], ids=["cli", "tui"]
)
@pytest.mark.anyio
async def test_app_config_tool_order_and_persona_reach_the_system_prompt(
    preset: str, runtime_context: bool
) -> None:
    adapter = ScriptedAdapter([TEXT])
    raw = {"persona": "You are Ada.", "tool_order": ["web_fetch", REST, "bash"]}
    agent = await boot_app(preset, raw, adapter=adapter, plugins=plugins(), variables=VARIABLES)
    assert agent.prompt.config.tool_order == ("web_fetch", REST, "bash")
    assert agent.prompt.config.persona == "You are Ada."
    assert agent.prompt.config.include_runtime_context is runtime_context
    end = await agent.turn("hello")
    assert end.reason == "completed"
    (request,) = adapter.requests
    expected = ["web_fetch", "read_file", "todo_write", "write_file", "bash"]
    assert tool_names(request.tools) == expected
    assert tool_names(headers(agent)[0].header.tools) == expected
    assert isinstance(request.system, str)
    assert "You are Ada." in request.system
    assert ("Working directory: /work" in request.system) is runtime_context


@pytest.mark.parametrize(
    ("preset", "persona"),
    [("cli", "terse command-line assistant"), ("tui", "terminal user interface")],
)
@pytest.mark.anyio
async def test_app_presets_without_tool_order_keep_it_unset_and_sort(
    preset: str, persona: str
) -> None:
    adapter = ScriptedAdapter([TEXT])
    agent = await boot_app(preset, {}, adapter=adapter, plugins=plugins(), variables=VARIABLES)
    assert agent.prompt.config.tool_order is msgspec.UNSET
    await agent.turn("hello")
    assert tool_names(adapter.requests[0].tools) == SORTED_TOOLS
    assert persona in adapter.requests[0].system


@pytest.mark.parametrize("preset", ["cli", "tui"])
@pytest.mark.anyio
async def test_an_empty_tool_order_in_app_config_fails_at_boot(preset: str) -> None:
    with pytest.raises(ToolOrderError, match="rest entry"):
        await boot_app(preset, {"tool_order": []}, adapter=ScriptedAdapter([]))


@pytest.mark.parametrize(
    "config",
    [
        CliAppConfig(tool_order=("bash", REST), persona="struct persona"),
        TuiAppConfig(tool_order=("bash", REST), persona="struct persona"),
    ],
    ids=["cli", "tui"],
)
@pytest.mark.anyio
async def test_app_config_structs_are_forwarded_as_they_are(
    config: CliAppConfig | TuiAppConfig,
) -> None:
    preset = "cli" if isinstance(config, CliAppConfig) else "tui"
    adapter = ScriptedAdapter([TEXT])
    agent = await boot_app(preset, config, adapter=adapter, plugins=plugins(), variables=VARIABLES)
    await agent.turn("hello")
    assert tool_names(adapter.requests[0].tools)[0] == "bash"
    assert "struct persona" in adapter.requests[0].system


@pytest.mark.anyio
async def test_an_unknown_app_preset_or_config_field_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown app preset 'web'"):
        await boot_app("web", {}, adapter=ScriptedAdapter([]))
    with pytest.raises(msgspec.ValidationError, match="theme"):
        await boot_app("cli", {"theme": "dark"}, adapter=ScriptedAdapter([]))


@pytest.mark.anyio
async def test_agent_core_config_forwards_tool_order_and_persona() -> None:
    config = AgentCoreConfig(persona="Core persona.", tool_order=("todo_write", REST))
    agent, adapter = await boot(config=config)
    assert agent.prompt.config == config.system_prompt()
    await agent.turn("hello")
    assert tool_names(adapter.requests[0].tools)[0] == "todo_write"
    assert "Core persona." in adapter.requests[0].system


# -- frozen requests -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_dispatched_requests_are_deep_frozen() -> None:
    agent, adapter = await boot([calling(("c1", "bash")), TEXT])
    await agent.turn("hello")
    for request in adapter.requests:
        assert is_deep_frozen(request)
        assert request.session_id == agent.session.id
        with pytest.raises(FrozenError):
            request.tools[0].parameters["x"] = 1
    tool_use = adapter.requests[1].messages[1].content[0]
    assert isinstance(tool_use, ToolUseBlock)
    with pytest.raises(FrozenError):
        tool_use.input["x"] = 1


FROZEN = "this mapping is frozen; build a new frozen copy instead"
MUTATIONS: dict[str, tuple[Callable[[Request], object], str]] = {
    "tool-parameters": (lambda r: r.tools[0].parameters.__setitem__("x", 1), FROZEN),
    "nested-parameters": (lambda r: r.tools[0].parameters["properties"].update(x={}), FROZEN),
    "messages": (lambda r: setattr(r, "messages", ()), "immutable type: 'Request'"),
    "message-list": (lambda r: r.messages.append(r.messages[0]), "'tuple' object"),
    "system": (lambda r: setattr(r, "system", "changed"), "immutable type: 'Request'"),
}


@pytest.mark.parametrize(("mutate", "fragment"), MUTATIONS.values(), ids=MUTATIONS.keys())
@pytest.mark.anyio
async def test_a_listener_mutating_the_request_ends_the_turn_in_error(
    mutate: Callable[[Request], object], fragment: str
) -> None:
    agent, adapter = await boot()

    async def meddle(request: Request, next_: Any) -> Any:
        mutate(request)
        return await next_()

    agent.ctx.on(REQUEST_EVENT, meddle)
    end = await agent.turn("hello")
    assert fragment in end.message
    assert_balanced_error(agent, end, end.message)
    assert tags(agent.session.log) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "step/end",
        "agent/error",
        "turn/end",
    ]
    step_end = next(e for e in agent.session.log if isinstance(e, StepEnd))
    assert step_end.reason == "error"
    assert adapter.requests == []


@pytest.mark.parametrize(
    ("change", "part"),
    [
        (lambda r: r.replace(tools=tuple(reversed(r.tools))), "tools"),
        (lambda r: r.replace(tools=(*r.tools, schema("extra"))), "tools"),
        (lambda r: r.replace(system="Another prompt."), "system text"),
        (lambda r: r.replace(model="other-model"), "model settings"),
    ],
    ids=["reordered-tools", "added-tool", "system", "model"],
)
@pytest.mark.anyio
async def test_a_listener_returning_a_different_frozen_copy_breaks_the_rebuild_invariant(
    change: Callable[[Request], Request], part: str
) -> None:
    agent, adapter = await boot()

    async def rewrite(request: Request, next_: Any) -> Any:
        return await next_(change(request))

    agent.ctx.on(REQUEST_EVENT, rewrite)
    end = await agent.turn("hello")
    message = f"rebuild invariant: the request's {part} differ from the logged header"
    assert_balanced_error(agent, end, message)
    assert adapter.requests == []


@pytest.mark.anyio
async def test_a_listener_returning_an_equal_frozen_copy_is_dispatched() -> None:
    agent, adapter = await boot()
    copies: list[Request] = []

    async def copy_request(request: Request, next_: Any) -> Any:
        copies.append(request.replace())
        return await next_(copies[-1])

    agent.ctx.on(REQUEST_EVENT, copy_request)
    assert (await agent.turn("hello")).reason == "completed"
    (dispatched,) = adapter.requests
    assert dispatched is copies[0]


@pytest.mark.anyio
async def test_a_listener_returning_an_unfrozen_request_ends_the_turn_in_error() -> None:
    agent, adapter = await boot()

    async def thaw(request: Request, next_: Any) -> Any:
        loose = msgspec.structs.replace(request, tools=(ToolSchema("bash", "", {}),))
        return await next_(loose)

    agent.ctx.on(REQUEST_EVENT, thaw)
    end = await agent.turn("hello")
    assert_balanced_error(
        agent, end, "an llm/request listener returned a request that is not deep-frozen"
    )
    assert adapter.requests == []


def test_replace_builds_a_new_frozen_request_and_leaves_the_old_one() -> None:
    header = canonical_header(AgentCoreConfig().llm(), "s", [schema("bash")])
    request = Request.build(header, [], "sid")
    changed = request.replace(tools=[ToolSchema("x", "", {"a": [1]})])
    assert is_deep_frozen(changed)
    assert tool_names(request.tools) == ["bash"]
    assert changed.tools[0].parameters["a"] == (1,)


# -- a bad tool_order fails turns in balance -----------------------------------------------------

GHOST_MESSAGE = (
    'toolOrder lists unregistered tool "ghost"; known tools: '
    "bash, read_file, todo_write, web_fetch, write_file"
)


@pytest.mark.anyio
async def test_an_unknown_tool_order_name_fails_each_turn_before_any_step() -> None:
    agent, adapter = await boot(config=AgentCoreConfig(tool_order=("ghost", REST)))
    dispatched: list[object] = []
    agent.ctx.on(DISPATCH_EVENT, dispatched.append)
    for turn in (1, 2):
        end = await agent.turn("hello")
        assert_balanced_error(agent, end, GHOST_MESSAGE)
        assert tags(agent.session.log) == ["turn/start", "agent/error", "turn/end"] * turn
    assert headers(agent) == []
    assert adapter.requests == [] and dispatched == []


@pytest.mark.anyio
async def test_registering_the_missing_tool_fixes_later_turns() -> None:
    agent, adapter = await boot(config=AgentCoreConfig(tool_order=("ghost", REST)))
    assert (await agent.turn("hello")).reason == "error"
    agent.tools.register(schema("ghost"))
    assert (await agent.turn("again")).reason == "completed"
    assert tool_names(adapter.requests[0].tools)[0] == "ghost"
    assert headers(agent)[0].reason == "initial"


@pytest.mark.anyio
async def test_a_reserved_tool_name_fails_the_turn_like_an_unknown_one() -> None:
    agent, adapter = await boot()
    agent.tools.register({"name": REST})
    end = await agent.turn("hello")
    assert_balanced_error(
        agent,
        end,
        'tool provider returned reserved tool name "<unlisted-tools>" '
        "(reserved for toolOrder's rest entry)",
    )
    assert tags(agent.session.log) == ["turn/start", "agent/error", "turn/end"]
    assert adapter.requests == []


# -- when a header is logged ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_first_header_is_initial_and_an_unchanged_one_is_not_logged_again() -> None:
    agent, adapter = await boot([calling(("c1", "bash")), TEXT, TEXT])
    await agent.turn("one")  # two steps
    await agent.turn("two")
    assert [h.reason for h in headers(agent)] == ["initial"]
    assert len(adapter.requests) == 3
    assert {msgspec.json.encode(r.header()) for r in adapter.requests} == {
        msgspec.json.encode(headers(agent)[0].header)
    }


@pytest.mark.anyio
async def test_a_pure_tool_reorder_between_steps_logs_a_full_changed_header() -> None:
    agent, adapter = await boot([calling(("c1", "bash")), TEXT])
    assembled = 0

    async def reverse_from_step_two(assembly: PromptAssembly, next_: Any) -> Any:
        nonlocal assembled
        assembled += 1
        if assembled >= 2:
            assembly.tools.reverse()
        return await next_()

    agent.ctx.on(ASSEMBLE_EVENT, reverse_from_step_two)
    assert (await agent.turn("hello")).reason == "completed"
    initial, change = headers(agent)
    assert (initial.reason, change.reason) == ("initial", "change")
    assert tool_names(change.header.tools) == SORTED_TOOLS[::-1]
    assert change.header.system == initial.header.system
    assert change.header.config == initial.header.config
    assert [tool_names(r.tools) for r in adapter.requests] == [SORTED_TOOLS, SORTED_TOOLS[::-1]]
    logged = tags(agent.session.log)
    second_step = logged.index("step/start", logged.index("step/start") + 1)
    assert logged[second_step : second_step + 2] == ["step/start", "request/header"]


@pytest.mark.anyio
async def test_a_tool_registered_between_turns_logs_a_changed_header() -> None:
    agent, adapter = await boot([TEXT, TEXT])
    await agent.turn("one")
    agent.tools.register(schema("aaa"))
    await agent.turn("two")
    assert [h.reason for h in headers(agent)] == ["initial", "change"]
    assert tool_names(adapter.requests[1].tools) == ["aaa", *SORTED_TOOLS]


@pytest.mark.anyio
async def test_a_new_boot_over_an_existing_log_logs_an_identical_header_as_resume() -> None:
    first, _ = await boot()
    await first.turn("one")
    resumed, adapter = await boot(session_id=first.session.id, log=first.session.log)
    end = await resumed.turn("two")
    assert end.reason == "completed"
    initial, resume = headers(resumed)
    assert (initial.reason, resume.reason) == ("initial", "resume")
    assert msgspec.json.encode(initial.header) == msgspec.json.encode(resume.header)
    (request,) = adapter.requests
    assert [m.role for m in request.messages] == ["user", "assistant", "user"]
    assert tags(resumed.session.log).count("turn/start") == 2


@pytest.mark.anyio
async def test_a_new_loop_over_the_same_session_logs_resume() -> None:
    agent, _ = await boot([TEXT, TEXT])
    await agent.turn("one")
    await AgentLoop(agent.ctx).run_turn("two")
    assert [h.reason for h in headers(agent)] == ["initial", "resume"]


@pytest.mark.anyio
async def test_a_loop_over_a_log_without_headers_logs_initial() -> None:
    failed, _ = await boot(config=AgentCoreConfig(tool_order=("ghost", REST)))
    await failed.turn("one")
    agent, _ = await boot(session_id=failed.session.id, log=failed.session.log)
    await agent.turn("two")
    assert [h.reason for h in headers(agent)] == ["initial"]


# -- tool calls and how turns end ----------------------------------------------------------------


@pytest.mark.anyio
async def test_tool_calls_run_in_model_order_and_results_reach_the_next_request() -> None:
    fs = ToolPlugin("fs", "write_file", "read_file")
    shell = ToolPlugin("shell", "bash", handlers={"bash": lambda args: {"exit": 0, "argv": ["ls"]}})
    reply = ScriptedReply(
        text="Working.",
        tool_calls=(
            ScriptedToolCall("c1", "write_file", {"path": "a"}),
            ScriptedToolCall("c2", "bash"),
            ScriptedToolCall("c3", "read_file", {"path": "a"}),
        ),
    )
    agent, adapter = await boot([reply, TEXT], plugins=[fs, shell])
    end = await agent.turn("hello")
    assert end.reason == "completed"
    assert fs.calls == [("write_file", {"path": "a"}), ("read_file", {"path": "a"})]
    results = [e for e in agent.session.log if isinstance(e, ToolResult)]
    assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [
        ("c1", "write_file ok", False),
        ("c2", '{"exit":0,"argv":["ls"]}', False),
        ("c3", "read_file ok", False),
    ]
    assert tags(agent.session.log)[4:11] == [
        "assistant/message",
        "tool/call",
        "tool/result",
        "tool/call",
        "tool/result",
        "tool/call",
        "tool/result",
    ]
    _, assistant, results_message = adapter.requests[1].messages
    assert assistant.content[0] == TextBlock("Working.")
    assert [b.id for b in assistant.content[1:]] == ["c1", "c2", "c3"]
    assert results_message.role == "user"
    assert results_message.content == (
        ToolResultBlock("c1", "write_file ok"),
        ToolResultBlock("c2", '{"exit":0,"argv":["ls"]}'),
        ToolResultBlock("c3", "read_file ok"),
    )


@pytest.mark.anyio
async def test_async_tool_handlers_are_awaited() -> None:
    async def slow(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "slow ok"

    plugin = ToolPlugin("shell", "bash", handlers={"bash": slow})
    agent, _ = await boot([calling(("c1", "bash")), TEXT], plugins=[plugin])
    await agent.turn("hello")
    (result,) = [e for e in agent.session.log if isinstance(e, ToolResult)]
    assert result.content == "slow ok"


@pytest.mark.anyio
async def test_a_failing_tool_gives_an_error_result_not_a_failed_turn() -> None:
    def broken(arguments: dict[str, Any]) -> str:
        raise ValueError("disk full")

    plugin = ToolPlugin("fs", "write_file", handlers={"write_file": broken})
    agent, adapter = await boot(
        [calling(("c1", "write_file"), ("c2", "nope")), TEXT], plugins=[plugin]
    )
    end = await agent.turn("hello")
    assert end.reason == "completed"
    results = [e for e in agent.session.log if isinstance(e, ToolResult)]
    assert [(r.content, r.is_error) for r in results] == [
        ("ValueError: disk full", True),
        ("ToolError: no registered tool named 'nope' can be called", True),
    ]
    assert adapter.requests[1].messages[-1].content[0] == ToolResultBlock(
        "c1", "ValueError: disk full", True
    )


@pytest.mark.anyio
async def test_a_tool_before_listener_that_returns_a_reason_blocks_the_turn() -> None:
    plugin = ToolPlugin("shell", "bash", "read_file")
    agent, adapter = await boot(
        [calling(("c1", "read_file"), ("c2", "bash"), ("c3", "read_file"))], plugins=[plugin]
    )
    agent.ctx.on(TOOL_BEFORE_EVENT, lambda call: "no shell" if call.name == "bash" else None)
    end = await agent.turn("hello")
    assert end.reason == "blocked"
    assert plugin.calls == [("read_file", {})]
    results = [e for e in agent.session.log if isinstance(e, ToolResult)]
    assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [
        ("c1", "read_file ok", False),
        ("c2", "blocked: no shell", True),
        ("c3", "not run: an earlier call was blocked", True),
    ]
    # every tool_use has its result, so a later request would still be valid for a provider
    calls = [e.id for e in agent.session.log if type(e).__name__ == "ToolCall"]
    assert calls == [r.tool_use_id for r in results]
    assert tags(agent.session.log)[-2:] == ["step/end", "turn/end"]
    assert len(adapter.requests) == 1
    assert agent.loop.state == "idle"


@pytest.mark.parametrize(
    "truncated",
    [
        ScriptedReply(text="Trunc", stop_reason="max_tokens"),
        calling(("c1", "bash"), text="Trunc", stop_reason="max_tokens"),
    ],
    ids=["text", "with-tool-call"],
)
@pytest.mark.anyio
async def test_a_max_tokens_reply_ends_the_turn_with_max_tokens(truncated: ScriptedReply) -> None:
    agent, adapter = await boot([truncated, TEXT])
    end = await agent.turn("hello")
    assert end.reason == "max-tokens"
    step_end = next(e for e in agent.session.log if isinstance(e, StepEnd))
    assert step_end.reason == "max_tokens"
    assert len(adapter.requests) == 1


@pytest.mark.anyio
async def test_an_adapter_error_ends_the_turn_in_balance() -> None:
    agent, adapter = await boot([ScriptedReply(error="overloaded")])
    end = await agent.turn("hello")
    assert_balanced_error(agent, end, "overloaded")
    assert tags(agent.session.log) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "step/end",
        "agent/error",
        "turn/end",
    ]
    assert len(adapter.requests) == 1


@pytest.mark.anyio
async def test_running_out_of_script_ends_the_turn_in_error() -> None:
    agent, _ = await boot([])
    end = await agent.turn("hello")
    assert_balanced_error(agent, end, "the script has 0 replies; request 1 has none left")


@pytest.mark.anyio
async def test_abort_ends_the_turn_at_the_next_step_boundary() -> None:
    agent: Agent | None = None

    def abort(arguments: dict[str, Any]) -> str:
        assert agent is not None
        agent.loop.abort()
        return "aborting"

    plugin = ToolPlugin("shell", "bash", handlers={"bash": abort})
    agent, adapter = await boot([calling(("c1", "bash")), TEXT], plugins=[plugin])
    end = await agent.turn("hello")
    assert end.reason == "aborted"
    assert len(adapter.requests) == 1
    assert tags(agent.session.log)[-2:] == ["step/end", "turn/end"]
    assert agent.loop.state == "idle"
    assert (await agent.turn("again")).reason == "completed", "abort lasts one turn"


@pytest.mark.anyio
async def test_a_turn_that_never_stops_calling_tools_ends_in_error() -> None:
    agent, adapter = await boot([calling(("c1", "bash"))] * 3, config=AgentCoreConfig(max_steps=2))
    end = await agent.turn("hello")
    assert_balanced_error(agent, end, "the turn did not finish within 2 steps")
    assert len(adapter.requests) == 2


@pytest.mark.anyio
async def test_a_second_turn_cannot_start_while_one_is_running() -> None:
    agent: Agent | None = None

    async def reenter(arguments: dict[str, Any]) -> str:
        assert agent is not None
        await agent.turn("nested")
        return "unreachable"

    plugin = ToolPlugin("shell", "bash", handlers={"bash": reenter})
    agent, _ = await boot([calling(("c1", "bash")), TEXT], plugins=[plugin])
    assert (await agent.turn("hello")).reason == "completed"
    (result,) = [e for e in agent.session.log if isinstance(e, ToolResult)]
    assert result.content == "RuntimeError: a turn is already running"
    assert tags(agent.session.log).count("turn/start") == 1


@pytest.mark.anyio
async def test_a_completed_turn_logs_its_lifecycle_in_order() -> None:
    agent, _ = await boot([calling(("c1", "bash")), TEXT])
    end = await agent.turn("hello")
    assert end.reason == "completed" and end.message is msgspec.UNSET
    assert tags(agent.session.log) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert agent.session.log[-1] is end
    assert agent.loop.state == "idle"


@pytest.mark.anyio
async def test_dispatch_and_reply_events_carry_the_exact_request_and_reply() -> None:
    agent, adapter = await boot()
    dispatched: list[Request] = []
    replies: list[tuple[Any, Request]] = []
    agent.ctx.on(DISPATCH_EVENT, dispatched.append)
    agent.ctx.on(REPLY_EVENT, lambda reply, request: replies.append((reply, request)))
    await agent.turn("hello")
    assert dispatched == adapter.requests
    assert dispatched[0] is adapter.requests[0]
    ((reply, request),) = replies
    assert request is adapter.requests[0]
    assert reply.content == (TextBlock("Done."),)


@pytest.mark.anyio
async def test_the_loop_is_idle_again_after_an_observer_fails_on_turn_start() -> None:
    agent, _ = await boot([TEXT, TEXT])
    failures = iter([RuntimeError("observer failed")])

    def flaky_observer(event: object, session: object) -> None:
        if tags([event]) == ["turn/start"]:
            error = next(failures, None)
            if error is not None:
                raise error

    agent.ctx.on("session/event", flaky_observer)
    with contextlib.suppress(RuntimeError):
        await agent.turn("one")
    assert agent.loop.state == "idle"
    assert (await agent.turn("two")).reason == "completed"


@pytest.mark.anyio
async def test_streamed_text_arrives_as_one_block_before_the_tool_calls() -> None:
    long_text = "A reply long enough to be streamed in several chunks."
    agent, _ = await boot([calling(("c1", "bash"), text=long_text), TEXT])
    await agent.turn("hello")
    first = next(e for e in agent.session.log if tags([e]) == ["assistant/message"])
    assert first.content[0] == TextBlock(long_text)
    assert [type(block) for block in first.content] == [TextBlock, ToolUseBlock]


# -- the rebuild invariant, checked directly -----------------------------------------------------


def rebuildable_session() -> tuple[Session, Request]:
    session = Session(Context(), session_id="sid", clock=lambda: "T")
    session.append(StepStart(step=1))
    session.append(UserMessage(text="hello"))
    header = canonical_header(AgentCoreConfig().llm(), "System.", [schema("bash")])
    session.append(RequestHeader(header=header, reason="initial"))
    return session, Request.build(header, derive_messages(session.log), session.id)


def test_a_request_built_from_the_log_satisfies_the_rebuild_invariant() -> None:
    session, request = rebuildable_session()
    assert check_rebuild_invariant(request, session) is None  # raises InvariantError otherwise


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda s, r: (s.close(), r)[1], "session 'sid' is not live"),
        (lambda s, r: r.replace(session_id="other"), "session 'other' is not live"),
        (lambda s, r: r.replace(messages=()), "messages differ"),
        (lambda s, r: (s.append(UserMessage(text="more")), r)[1], "messages differ"),
        (lambda s, r: r.replace(max_tokens=5), "model settings differ"),
        (
            lambda s, r: msgspec.structs.replace(r, tools=(ToolSchema("bash", "", {}),)),
            "not deep-frozen",
        ),
    ],
    ids=["closed", "other-session", "no-messages", "log-moved-on", "max-tokens", "unfrozen"],
)
def test_the_rebuild_invariant_catches_a_request_the_log_does_not_rebuild(
    break_it: Callable[[Session, Request], Request], message: str
) -> None:
    session, request = rebuildable_session()
    broken = break_it(session, request)
    with pytest.raises(InvariantError, match=message):
        check_rebuild_invariant(broken, session)


@pytest.mark.parametrize(
    ("kept", "message"),
    [(("step/start", "user/message"), "no request/header"), (("user/message",), "no step/start")],
)
def test_the_rebuild_invariant_needs_a_step_and_a_header_in_the_log(
    kept: tuple[str, ...], message: str
) -> None:
    full, request = rebuildable_session()
    session = Session(Context(), session_id="sid")
    session.log = [event for event in full.log if tags([event])[0] in kept]
    with pytest.raises(InvariantError, match=message):
        check_rebuild_invariant(request, session)
