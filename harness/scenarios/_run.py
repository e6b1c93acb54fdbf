"""Running a scenario: its declared plugins made real, booted on the reference runtime, recorded.

The harness reaches the runtime only through its public surface: it boots an app preset, hands
it plugins, listens to `session/event`, `llm/dispatch` and `llm/reply`, and adds one `llm/request`
listener that rebuilds the assembly at every dispatch. That rebuild is the harness's side of the
rebuild invariant: the same inputs (same log, same registry) must assemble the same header, so a
listener with hidden state is caught the first time it behaves differently.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from harness.agent._apps import boot_app
from harness.agent._context import Context, LoadSchedule
from harness.agent._header import Conversation, Header, Message, canonical_header, header_equals
from harness.agent._llm import REQUEST_EVENT, Adapter, LlmRuntime, Reply, Request
from harness.agent._session import (
    SESSION_EVENT,
    AgentError,
    LogEvent,
    RequestHeader,
    Session,
    StepEnd,
    StepStart,
    TurnEnd,
    utc_now,
)
from harness.agent._system_prompt import (
    ASSEMBLE_EVENT,
    PromptAssembly,
    Section,
    SystemPrompt,
    render_prompt,
)
from harness.agent._tools import ToolRuntime, ToolSchema
from harness.scenarios._formats import (
    AppendInLoadOrder,
    AppendTool,
    ListenerSpec,
    MessagesDigest,
    PluginSpec,
    RecordedRequest,
    ReverseToolsFromStep,
    RotatePerCall,
    Scenario,
    ToolSpec,
)

Next = Callable[[], Awaitable[PromptAssembly]]


def _handler(tool: ToolSpec) -> Callable[[dict[str, Any]], str]:
    def handle(arguments: dict[str, Any]) -> str:
        if not isinstance(tool.error, msgspec.UnsetType):
            raise RuntimeError(tool.error)
        return tool.result

    return handle


class _LoadOrderTools:
    """Tools that plugins hand to a shared listener in the order they finished loading."""

    def __init__(self) -> None:
        self.tools: list[ToolSpec] = []


def _completed_steps(ctx: Context) -> int:
    return ctx.get(Session).count(StepEnd)


def _listener(ctx: Context, spec: ListenerSpec) -> Callable[[PromptAssembly, Next], Awaitable[Any]]:
    if isinstance(spec, ReverseToolsFromStep):

        async def reverse(assembly: PromptAssembly, next_: Next) -> Any:
            # The step being assembled is the one after the completed ones; counting step/end
            # (not step/start) keeps build and rebuild of the same step on the same inputs.
            if _completed_steps(ctx) + 1 >= spec.step:
                assembly.tools.reverse()
            return await next_()

        return reverse
    if isinstance(spec, AppendTool):
        schema = spec.tool.schema()

        async def append(assembly: PromptAssembly, next_: Next) -> Any:
            assembly.tools.append(schema)
            return await next_()

        return append
    if isinstance(spec, RotatePerCall):
        calls = 0

        async def rotate(assembly: PromptAssembly, next_: Next) -> Any:
            nonlocal calls
            if assembly.tools:
                shift = calls % len(assembly.tools)
                assembly.tools[:] = assembly.tools[shift:] + assembly.tools[:shift]
            calls += 1
            return await next_()

        return rotate
    assert isinstance(spec, AppendInLoadOrder)
    shared = ctx.get(_LoadOrderTools)

    async def append_loaded(assembly: PromptAssembly, next_: Next) -> Any:
        assembly.tools.extend(tool.schema() for tool in shared.tools)
        return await next_()

    return append_loaded


class ScenarioPlugin:
    """A declared plugin made real: registers its tools, sections and listeners when applied."""

    def __init__(self, spec: PluginSpec) -> None:
        self.name = spec.name
        self.spec = spec

    def apply(self, ctx: Context) -> None:
        tools = ctx.get(ToolRuntime)
        prompt = ctx.get(SystemPrompt)
        if self.spec.provider:
            # Assembly copies what it collects through JSON (ToolSchema.copy_of), so handing it
            # the shared frozen copies changes no byte; they are made once per distinct tool, not
            # at every boot and every assembly.
            schemas = tuple(ToolSchema.frozen_copy_of(tool.schema()) for tool in self.spec.tools)
            prompt.add_tool_provider(lambda: schemas)
            for tool in self.spec.tools:
                tools.register_handler(tool.name, _handler(tool))
        else:
            for tool in self.spec.tools:
                tools.register(tool.schema(), _handler(tool), owner=ctx.owner)
        for section in self.spec.sections:
            prompt.add_section(Section(section.name, section.text, section.order, section.complete))
        for listener in self.spec.listeners:
            if isinstance(listener, AppendInLoadOrder):
                first = not ctx.has(_LoadOrderTools)
                if first:
                    ctx.provide(_LoadOrderTools, _LoadOrderTools())
                ctx.get(_LoadOrderTools).tools.extend(listener.tools)
                for tool in listener.tools:
                    tools.register_handler(tool.name, _handler(tool))
                if not first:
                    continue
            elif isinstance(listener, AppendTool):
                tools.register_handler(listener.tool.name, _handler(listener.tool))
            ctx.on(ASSEMBLE_EVENT, _listener(ctx, listener))


def owners_of(scenario: Scenario) -> dict[str, str | None]:
    """Tool name -> the plugin that declares it, for provenance in drift reports."""
    owners: dict[str, str | None] = {}
    for plugin in scenario.plugins:
        for tool in plugin.tools:
            owners.setdefault(tool.name, plugin.name)
        for listener in plugin.listeners:
            if isinstance(listener, AppendTool):
                owners.setdefault(listener.tool.name, plugin.name)
            elif isinstance(listener, AppendInLoadOrder):
                for tool in listener.tools:
                    owners.setdefault(tool.name, plugin.name)
    return owners


@dataclass(frozen=True)
class RebuildMismatch:
    """At a dispatch, assembling again from the same inputs gave another header."""

    step: int
    logged: Header
    rebuilt: Header


class MessagesDigester:
    """`MessagesDigest.of(request.messages)` for a session's requests, in time proportional to
    the messages that are new since the previous request.

    A request built from the session's fold holds the very tuple `session.messages()` returns
    (or the very Conversation `session.conversation()` returns: that identity is the proof of
    equality), whose committed messages only grow at the end of the fold's store: the SHA-256
    of its JSON array is carried forward message by message. Any other request is digested
    from scratch.
    """

    def __init__(self) -> None:
        self._fold: object = None
        self._count = 0
        self._hash = hashlib.sha256(b"[")

    def digest(self, messages: Sequence[Message], session: Session | None) -> MessagesDigest:
        if session is None:
            return MessagesDigest.of(messages)
        shared = isinstance(messages, Conversation)
        if messages is not (session.conversation() if shared else session.messages()):
            return MessagesDigest.of(messages)
        fold = session.fold()
        store, pending = fold.committed()
        committed = len(store)
        if fold is not self._fold or committed < self._count:
            self._fold, self._count, self._hash = fold, 0, hashlib.sha256(b"[")
        for message in store[self._count : committed]:
            self._hash.update(b"," + _encode(message) if self._count else _encode(message))
            self._count += 1
        running = self._hash.copy()
        if pending is not None:
            running.update(b"," + _encode(pending) if committed else _encode(pending))
        running.update(b"]")
        return MessagesDigest(committed + (pending is not None), running.hexdigest())


_encode = msgspec.json.Encoder().encode


def dispatched_record(request: Request, digest: MessagesDigest) -> RecordedRequest:
    """A dispatched request as the requests file keeps it: messages as count + SHA-256."""
    return RecordedRequest(
        provider=request.provider,
        model=request.model,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        system=request.system,
        tools=request.tools,
        messages=digest,
        session_id=request.session_id,
    )


@dataclass
class Recorder:
    """Captures what the runtime announces: log events, dispatched requests, the model's replies.

    A dispatch that got no reply (the adapter raised) is answered by the error the turn ended
    with, so a recording can replay failures too.

    Every dispatched request is kept in `dispatched` as the requests file stores it (messages as
    count + SHA-256). The full requests are kept too unless `keep_requests` is False: each holds
    the whole conversation so far, so a long session's full requests take memory quadratic in
    its length. `requests` is the full requests when kept, else `dispatched`.
    """

    events: list[LogEvent] = field(default_factory=list)
    full_requests: list[Request] = field(default_factory=list)
    dispatched: list[RecordedRequest] = field(default_factory=list)
    replies: list[Reply | str | None] = field(default_factory=list)
    keep_requests: bool = True
    _session: Session | None = field(default=None, repr=False)
    _digester: MessagesDigester = field(default_factory=MessagesDigester, repr=False)

    @property
    def requests(self) -> list[Request] | list[RecordedRequest]:
        return self.full_requests if self.keep_requests else self.dispatched

    def attach(self, ctx: Context) -> None:
        self._session = ctx.get(Session) if ctx.has(Session) else None
        ctx.on(SESSION_EVENT, self._on_event)
        ctx.on("llm/dispatch", self._on_dispatch)
        ctx.on("llm/reply", self._on_reply)

    def _on_event(self, event: LogEvent, session: object) -> None:
        self.events.append(event)
        if isinstance(event, AgentError) and self.replies and self.replies[-1] is None:
            self.replies[-1] = event.message

    def _on_dispatch(self, request: Request) -> None:
        digest = self._digester.digest(request.messages, self._session)
        self.dispatched.append(dispatched_record(request, digest))
        if self.keep_requests:
            self.full_requests.append(request)
        self.replies.append(None)

    def _on_reply(self, reply: Reply, request: Request) -> None:
        self.replies[-1] = reply


@dataclass
class Run:
    """One execution of a scenario."""

    scenario: Scenario
    recorder: Recorder
    session_id: str
    registration_orders: list[list[str]]
    rebuilds: list[RebuildMismatch]
    turn_ends: list[TurnEnd]

    @property
    def headers(self) -> list[tuple[str, Header]]:
        return [(e.reason, e.header) for e in self.recorder.events if isinstance(e, RequestHeader)]

    @property
    def registration_order(self) -> list[str]:
        return self.registration_orders[0] if self.registration_orders else []


def _rebuild_listener(
    ctx: Context, mismatches: list[RebuildMismatch]
) -> Callable[[Request, Callable[[], Awaitable[Request]]], Awaitable[Request]]:
    # A service is provided once and never replaced: look them up once, not at every step.
    session, prompt, llm = ctx.get(Session), ctx.get(SystemPrompt), ctx.get(LlmRuntime)

    async def rebuild(request: Request, next_: Callable[[], Awaitable[Request]]) -> Request:
        result = await next_()
        # Every listener runs again (read_only only lets an assembly no listener sees share
        # frozen tool copies); a listener with hidden state assembles other tools here.
        assembly = await prompt.assemble(read_only=True)
        rebuilt = canonical_header(llm.config, render_prompt(assembly), assembly.tools)
        logged = session.header()
        if logged is not None and not header_equals(logged, rebuilt):
            mismatches.append(RebuildMismatch(session.count(StepStart), logged, rebuilt))
        return result

    return rebuild


async def run_scenario(
    scenario: Scenario,
    adapter: Adapter,
    *,
    schedule: LoadSchedule | None = None,
    plugin_order: Sequence[str] | None = None,
    rebuild: bool = True,
    session_id: str | None = None,
    keep_requests: bool = True,
    clock: Callable[[], str] = utc_now,
    share_conversation: bool = False,
) -> Run:
    """Run every loop of the scenario; each loop boots afresh over the log so far (a resume).

    `session_id` fixes the session's id (default: a fresh uuid, which normalisation hides).
    `keep_requests=False` keeps dispatched requests as digests only (see `Recorder`).
    `clock` stamps the events' times (normalisation hides them too). `share_conversation`:
    requests hold a Conversation, not a tuple (see `boot_agent`); for a run whose requests are
    only digested (`keep_requests=False`, and an adapter that keeps none).
    """
    plugins = [ScenarioPlugin(spec) for spec in scenario.plugins]
    if plugin_order is not None:
        by_name = {plugin.name: plugin for plugin in plugins}
        plugins = [by_name[name] for name in plugin_order]
    recorder = Recorder(keep_requests=keep_requests)
    mismatches: list[RebuildMismatch] = []
    orders: list[list[str]] = []
    ends: list[TurnEnd] = []
    log: list[LogEvent] = []
    for turns in scenario.loops:
        agent = await boot_app(
            scenario.app,
            scenario.config,
            adapter=adapter,
            plugins=plugins,
            schedule=schedule,
            session_id=session_id,
            log=log,
            variables=scenario.variables,
            clock=clock,
            share_conversation=share_conversation,
        )
        orders.append(agent.registration_order)
        recorder.attach(agent.ctx)
        if rebuild:
            agent.ctx.on(REQUEST_EVENT, _rebuild_listener(agent.ctx, mismatches))
        for text in turns:
            ends.append(await agent.turn(text))
        log = agent.session.log
        session_id = agent.session.id
    return Run(scenario, recorder, session_id or "", orders, mismatches, ends)


def run_sync(scenario: Scenario, adapter: Adapter, **options: Any) -> Run:
    """`run_scenario` from synchronous code (the CLI, the pytest plugin)."""
    runs: list[Run] = []

    async def main() -> None:
        runs.append(await run_scenario(scenario, adapter, **options))

    # The run is handed out through `runs`, not as the task's result: when asyncio.run restores
    # the SIGINT handler it formats the handler, which holds the finished task, whose repr holds
    # its result; a long run's repr (every event) costs seconds.
    asyncio.run(main())
    return runs[0]
