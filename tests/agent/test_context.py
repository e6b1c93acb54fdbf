"""Context: services, the five event verbs, forks, and the concurrent plugin loader."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agent import (
    Context,
    ContextError,
    LoadSchedule,
    ToolRuntime,
    load_plugins,
    register_tool,
)
from tests.support.properties import examples


class ToolPlugin:
    """A plugin that registers one tool named after itself (plus any extra names)."""

    def __init__(self, name: str, *extra: str) -> None:
        self.name = name
        self.tools = [name, *extra]

    def apply(self, ctx: Context) -> None:
        for tool_name in self.tools:
            register_tool(ctx, {"name": tool_name})


def tool_context() -> tuple[Context, ToolRuntime]:
    ctx = Context()
    runtime = ToolRuntime()
    ctx.provide(ToolRuntime, runtime)
    return ctx, runtime


def recorder(calls: list[str], name: str, result: Any = None) -> Callable[..., Any]:
    def listener(*args: Any) -> Any:
        calls.append(name)
        return result

    return listener


# -- services ------------------------------------------------------------------------------------


def test_a_service_is_provided_once_and_shared_with_forks() -> None:
    ctx = Context()
    runtime = ToolRuntime()
    ctx.provide(ToolRuntime, runtime)
    fork = ctx.fork("plugin")
    assert fork.get(ToolRuntime) is runtime
    assert fork.has(ToolRuntime)
    with pytest.raises(ContextError, match="already provided"):
        fork.provide(ToolRuntime, ToolRuntime())


def test_getting_a_missing_service_is_an_error() -> None:
    ctx = Context()
    assert not ctx.has(ToolRuntime)
    with pytest.raises(ContextError, match="ToolRuntime is not provided"):
        ctx.get(ToolRuntime)


# -- emit ----------------------------------------------------------------------------------------


def test_emit_calls_every_listener_in_order_with_the_arguments() -> None:
    ctx = Context()
    calls: list[tuple[str, tuple[Any, ...]]] = []
    ctx.on("e", lambda *args: calls.append(("a", args)) or "ignored")
    ctx.fork("other").on("e", lambda *args: calls.append(("b", args)))
    assert ctx.emit("e", 1, "two") is None
    assert calls == [("a", (1, "two")), ("b", (1, "two"))]


def test_emit_runs_every_listener_before_raising_the_one_error() -> None:
    ctx = Context()
    calls: list[str] = []

    def fail() -> None:
        raise ValueError("first")

    ctx.on("e", fail)
    ctx.on("e", recorder(calls, "after"))
    with pytest.raises(ValueError, match="first"):
        ctx.emit("e")
    assert calls == ["after"]


def test_emit_aggregates_several_errors() -> None:
    ctx = Context()

    def fail(message: str) -> Callable[[], None]:
        def listener() -> None:
            raise ValueError(message)

        return listener

    ctx.on("e", fail("one"))
    ctx.on("e", fail("two"))
    with pytest.raises(ExceptionGroup) as group:
        ctx.emit("e")
    assert [str(e) for e in group.value.exceptions] == ["one", "two"]


def test_a_disposed_listener_is_not_called() -> None:
    ctx = Context()
    calls: list[str] = []
    dispose = ctx.on("e", recorder(calls, "gone"))
    ctx.on("e", recorder(calls, "kept"))
    dispose()
    dispose()
    ctx.emit("e")
    assert calls == ["kept"]


# -- parallel ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_parallel_runs_listeners_concurrently() -> None:
    ctx = Context()
    first, second = asyncio.Event(), asyncio.Event()

    async def a() -> None:
        first.set()
        await second.wait()

    async def b() -> None:
        second.set()
        await first.wait()

    ctx.on("e", a)
    ctx.on("e", b)
    # Run one after the other, each would wait forever for the other.
    await asyncio.wait_for(ctx.parallel("e"), timeout=2)
    assert first.is_set() and second.is_set()


@pytest.mark.anyio
async def test_parallel_runs_all_listeners_and_aggregates_their_errors() -> None:
    ctx = Context()
    calls: list[str] = []

    async def fail(message: str) -> None:
        await asyncio.sleep(0)
        raise ValueError(message)

    async def succeed() -> None:
        await asyncio.sleep(0)
        calls.append("ok")

    ctx.on("e", lambda: fail("one"))
    ctx.on("e", succeed)
    ctx.on("e", lambda: fail("two"))
    with pytest.raises(ExceptionGroup) as group:
        await ctx.parallel("e")
    assert sorted(str(e) for e in group.value.exceptions) == ["one", "two"]
    assert calls == ["ok"]


@pytest.mark.anyio
async def test_parallel_raises_a_single_error_as_itself() -> None:
    ctx = Context()

    async def fail() -> None:
        raise KeyError("only")

    ctx.on("e", fail)
    with pytest.raises(KeyError):
        await ctx.parallel("e")


@pytest.mark.anyio
async def test_parallel_runs_all_listeners_when_a_synchronous_one_raises() -> None:
    ctx = Context()
    calls: list[str] = []

    def fail_now(message: str) -> Callable[[], None]:
        def listener() -> None:
            raise ValueError(message)

        return listener

    async def succeed() -> None:
        calls.append("ok")

    ctx.on("e", fail_now("one"))
    ctx.on("e", succeed)
    ctx.on("e", fail_now("two"))
    with pytest.raises(ExceptionGroup) as group:
        await ctx.parallel("e")
    assert [str(e) for e in group.value.exceptions] == ["one", "two"]
    assert calls == ["ok"]


# -- serial and bail -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_serial_awaits_in_order_and_stops_at_the_first_result() -> None:
    ctx = Context()
    calls: list[str] = []

    async def nothing() -> None:
        calls.append("nothing")
        await asyncio.sleep(0)

    async def answer(x: int) -> int:
        calls.append("answer")
        return x * 2

    ctx.on("e", lambda x: nothing())
    ctx.on("e", answer)
    ctx.on("e", recorder(calls, "never", "late"))
    assert await ctx.serial("e", 21) == 42
    assert calls == ["nothing", "answer"]


@pytest.mark.anyio
async def test_serial_returns_none_when_no_listener_answers() -> None:
    ctx = Context()
    calls: list[str] = []
    ctx.on("e", recorder(calls, "a"))
    ctx.on("e", recorder(calls, "b"))
    assert await ctx.serial("e") is None
    assert calls == ["a", "b"]


def test_bail_calls_in_order_and_the_first_result_wins() -> None:
    ctx = Context()
    calls: list[str] = []
    ctx.on("e", recorder(calls, "none"))
    ctx.on("e", recorder(calls, "first", "blocked"))
    ctx.on("e", recorder(calls, "second", "other"))
    assert ctx.bail("e", "arg") == "blocked"
    assert calls == ["none", "first"]


def test_bail_returns_none_when_no_listener_answers() -> None:
    ctx = Context()
    calls: list[str] = []
    ctx.on("e", recorder(calls, "a"))
    assert ctx.bail("e") is None
    assert calls == ["a"]


# -- waterfall -----------------------------------------------------------------------------------


def appender(tag: str, calls: list[str] | None = None):
    async def listener(value: list[str], next_: Any) -> Any:
        if calls is not None:
            calls.append(tag)
        return await next_([*value, tag])

    return listener


@pytest.mark.anyio
async def test_waterfall_runs_listeners_in_order_passing_replacements_down() -> None:
    ctx = Context()
    ctx.on("w", appender("a"))
    ctx.on("w", appender("b"))
    assert await ctx.waterfall("w", []) == ["a", "b"]


@pytest.mark.anyio
async def test_waterfall_without_listeners_returns_the_value() -> None:
    value = object()
    assert await Context().waterfall("w", value) is value


@pytest.mark.anyio
async def test_waterfall_listeners_get_the_extra_arguments_before_next() -> None:
    ctx = Context()
    seen: list[tuple[Any, ...]] = []

    async def listener(value: int, a: str, b: str, next_: Any) -> Any:
        seen.append((value, a, b))
        return await next_()

    ctx.on("w", listener)
    assert await ctx.waterfall("w", 1, "x", "y") == 1
    assert seen == [(1, "x", "y")]


@pytest.mark.anyio
async def test_waterfall_next_without_a_replacement_passes_the_same_value() -> None:
    ctx = Context()
    value = ["original"]
    seen: list[object] = []

    async def observe(v: list[str], next_: Any) -> Any:
        seen.append(v)
        return await next_()

    ctx.on("w", observe)
    ctx.on("w", observe)
    assert await ctx.waterfall("w", value) is value
    assert seen[0] is value and seen[1] is value


@pytest.mark.anyio
async def test_a_listener_that_does_not_call_next_vetoes_the_rest() -> None:
    ctx = Context()
    calls: list[str] = []

    async def veto(value: list[str], next_: Any) -> Any:
        calls.append("veto")
        return ["vetoed"]

    ctx.on("w", appender("a", calls))
    ctx.on("w", veto)
    ctx.on("w", appender("never", calls))
    assert await ctx.waterfall("w", []) == ["vetoed"]
    assert calls == ["a", "veto"]


@pytest.mark.anyio
async def test_the_outermost_return_value_wins() -> None:
    ctx = Context()

    async def outer(value: str, next_: Any) -> Any:
        inner = await next_()
        return f"outer({inner})"

    async def inner(value: str, next_: Any) -> Any:
        await next_()
        return "inner"

    ctx.on("w", outer)
    ctx.on("w", inner)
    assert await ctx.waterfall("w", "v") == "outer(inner)"


@pytest.mark.anyio
async def test_prepend_puts_a_listener_first() -> None:
    ctx = Context()
    ctx.on("w", appender("a"))
    ctx.on("w", appender("b"))
    ctx.on("w", appender("first"), prepend=True)
    assert await ctx.waterfall("w", []) == ["first", "a", "b"]


@pytest.mark.anyio
async def test_sync_waterfall_listeners_may_return_next_s_awaitable() -> None:
    ctx = Context()
    ctx.on("w", lambda value, next_: next_(value + 1))
    ctx.on("w", lambda value, next_: next_(value * 10))
    assert await ctx.waterfall("w", 1) == 20


# -- forks and owners ----------------------------------------------------------------------------


def test_register_tool_records_the_fork_owner() -> None:
    ctx, runtime = tool_context()
    register_tool(ctx.fork("shell"), {"name": "bash"})
    register_tool(ctx.fork("fs"), {"name": "read"})
    register_tool(ctx.fork("other-shell"), {"name": "bash"})
    register_tool(ctx, {"name": "anonymous"})
    assert runtime.owners() == {"bash": "shell", "read": "fs", "anonymous": None}
    assert [entry.owner for entry in runtime.entries()] == ["shell", "fs", "other-shell", None]


@pytest.mark.anyio
async def test_a_plugin_registers_on_a_fork_named_after_it() -> None:
    ctx, runtime = tool_context()

    def fs(fork: Context) -> None:
        register_tool(fork, {"name": "read"})

    fork = await ctx.plugin(ToolPlugin("shell", "sh"))
    await ctx.plugin(fs)
    assert fork.owner == "shell"
    assert runtime.owners() == {"shell": "shell", "sh": "shell", "read": "fs"}


@pytest.mark.anyio
async def test_a_plugin_without_a_name_is_refused() -> None:
    class Nameless:
        name = ""

        def apply(self, ctx: Context) -> None:
            raise AssertionError("must not be applied")

    with pytest.raises(ContextError, match="has no name"):
        await load_plugins(Context(), [Nameless()])


# -- the concurrent loader -----------------------------------------------------------------------

PLUGIN_NAMES = ["fs", "shell", "todo", "web", "mcp"]


@pytest.mark.anyio
async def test_plugins_register_in_completion_order() -> None:
    ctx, runtime = tool_context()
    schedule = LoadSchedule(start=("web", "fs", "shell"), yields={"fs": 2, "web": 1})
    order = await load_plugins(ctx, [ToolPlugin(n) for n in ["fs", "shell", "web"]], schedule)
    assert order == ["shell", "web", "fs"]
    assert [s.name for s in runtime.schemas()] == order


@pytest.mark.anyio
async def test_without_a_schedule_plugins_register_in_the_order_given() -> None:
    ctx, runtime = tool_context()
    assert await load_plugins(ctx, [ToolPlugin(n) for n in PLUGIN_NAMES]) == PLUGIN_NAMES
    assert [s.name for s in runtime.schemas()] == PLUGIN_NAMES


@pytest.mark.anyio
async def test_an_import_step_that_takes_longer_registers_later() -> None:
    class SlowPlugin(ToolPlugin):
        async def load(self) -> None:
            for _ in range(5):
                await asyncio.sleep(0)

    ctx, runtime = tool_context()
    assert await load_plugins(ctx, [SlowPlugin("slow"), ToolPlugin("fast")]) == ["fast", "slow"]
    assert [s.name for s in runtime.schemas()] == ["fast", "slow"]


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(
    plugin_names=st.lists(
        st.text("abcdefgh", min_size=1, max_size=3), unique=True, min_size=1, max_size=6
    ),
    seed=st.integers(0, 2**32 - 1),
    max_yields=st.integers(0, 4),
)
def test_completion_order_predicts_the_registration_order(
    plugin_names: list[str], seed: int, max_yields: int
) -> None:
    schedule = LoadSchedule.shuffled(plugin_names, random.Random(seed), max_yields)
    ctx, runtime = tool_context()
    order = asyncio.run(load_plugins(ctx, [ToolPlugin(n) for n in plugin_names], schedule))
    assert order == schedule.completion_order(plugin_names)
    assert [s.name for s in runtime.schemas()] == order
    assert runtime.owners() == {name: name for name in plugin_names}


def test_a_shuffled_schedule_is_reproducible_from_its_seed() -> None:
    one = LoadSchedule.shuffled(PLUGIN_NAMES, random.Random(7))
    two = LoadSchedule.shuffled(PLUGIN_NAMES, random.Random(7))
    assert one == two
    assert sorted(one.start) == sorted(PLUGIN_NAMES)
    assert set(one.yields) == set(PLUGIN_NAMES)


@pytest.mark.anyio
async def test_the_loader_refuses_two_plugins_with_one_name() -> None:
    with pytest.raises(ContextError, match="two plugins are named 'fs'"):
        await load_plugins(tool_context()[0], [ToolPlugin("fs"), ToolPlugin("fs")])


@pytest.mark.anyio
async def test_the_loader_refuses_a_schedule_for_other_plugins() -> None:
    schedule = LoadSchedule(start=("fs", "web"))
    with pytest.raises(ContextError, match="load schedule starts"):
        await load_plugins(tool_context()[0], [ToolPlugin("fs"), ToolPlugin("shell")], schedule)


@pytest.mark.anyio
async def test_a_failing_plugin_does_not_stop_its_siblings_from_registering() -> None:
    class Broken(ToolPlugin):
        def apply(self, ctx: Context) -> None:
            raise RuntimeError("broken plugin")

    ctx, runtime = tool_context()
    with pytest.raises(RuntimeError, match="broken plugin"):
        await load_plugins(ctx, [Broken("bad"), ToolPlugin("good")])
    assert [s.name for s in runtime.schemas()] == ["good"]
