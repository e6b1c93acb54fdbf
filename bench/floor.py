"""The floor: the least work that re-derives what a replay checks, as one plain loop.

Given a recorded transcript (its scenario, the model's answers and the header pin), the loop
derives every session-log event and every request's messages digest, and byte-compares the
header at every step, with nothing the reference runtime does to be a runtime: no plugins, no
assembly, no events, no frozen requests, no rebuild. Its results are then compared with the
recording as the replay compares its own (the whole log's bytes, and each digest).

The header is assembled once, by the runtime, from the scenario's plugins (a transcript whose
plugins have assemble listeners is refused: its header could change between steps), and each
step's bytes are compared with the pin's.

It is what a replay cannot go below, so `ours / floor` says how much the harness spends on being
a real agent runtime under test. It handles the shapes the benchmark's transcripts have (one or
more loops of turns whose steps call tools that return or fail); `verify` checks, outside any
timing, that it reproduces a recording exactly, and refuses one it cannot.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Any

import msgspec

from harness.agent import (
    AssistantMessage,
    Block,
    Header,
    Message,
    ScriptedAdapter,
    StepEnd,
    StepStart,
    TextBlock,
    ToolCall,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
    TurnEnd,
    TurnStart,
    UserMessage,
    boot_app,
    canonical_header,
    render_prompt,
)
from harness.agent._apps import app_config
from harness.scenarios._formats import (
    SYSTEM_TOKEN,
    TIME_TOKEN,
    TOOLS_TOKEN,
    Fixture,
    RecordedHeader,
    RecordedRequestHeader,
    ToolSpec,
)
from harness.scenarios._pins import Pin
from harness.scenarios._run import ScenarioPlugin

_encode = msgspec.json.Encoder().encode


class FloorUnsupported(ValueError):
    """The transcript has a shape the floor loop does not derive."""


@dataclass(frozen=True)
class FloorResult:
    steps: int
    log_equal: bool
    digests_equal: bool
    headers_equal: bool

    @property
    def ok(self) -> bool:
        return self.log_equal and self.digests_equal and self.headers_equal


def _tools(fixture: Fixture) -> dict[str, ToolSpec]:
    found: dict[str, ToolSpec] = {}
    for plugin in fixture.scenario.plugins:
        if plugin.listeners:
            raise FloorUnsupported(f"plugin {plugin.name} has assemble listeners")
        for tool in plugin.tools:
            found.setdefault(tool.name, tool)
    return found


def assembled_header(fixture: Fixture) -> bytes:
    """The header the scenario's plugins assemble, once: booted and assembled by the runtime."""

    async def assemble() -> bytes:
        agent = await boot_app(
            fixture.scenario.app,
            fixture.scenario.config,
            adapter=ScriptedAdapter(()),
            plugins=[ScenarioPlugin(spec) for spec in fixture.scenario.plugins],
            variables=fixture.scenario.variables,
        )
        assembly = await agent.prompt.assemble()
        return _encode(canonical_header(agent.llm.config, render_prompt(assembly), assembly.tools))

    return asyncio.run(assemble())


def floor_check(fixture: Fixture, pin: Pin) -> FloorResult:
    """Derive the log and the digests of `fixture`'s transcript and compare them with it."""
    assert fixture.log is not None and fixture.requests is not None
    assert fixture.answers is not None
    answers = fixture.answers.answers
    tools = _tools(fixture)
    core = app_config(fixture.scenario.app, fixture.scenario.config).agent_core()
    max_steps, config = core.max_steps, core.llm()
    pinned = _encode(
        Header(config=config, system=pin.system or msgspec.UNSET, tools=pin.tools.initial)
    )
    header = assembled_header(fixture)  # what each step sends (no listener can change it)
    logged_header = RecordedHeader(config=config, system=SYSTEM_TOKEN, tools=TOOLS_TOKEN)
    events: list[Any] = []
    digests: list[tuple[int, str]] = []
    running = hashlib.sha256(b"[")
    count = 0
    headers_equal = True
    answer = 0
    step = 0
    turn = 0

    def commit(message: Message) -> None:
        nonlocal count
        running.update(b"," + _encode(message) if count else _encode(message))
        count += 1

    for loop, turns in enumerate(fixture.scenario.loops):
        reason = "initial" if loop == 0 else "resume"
        owed = True
        for text in turns:
            turn += 1
            events.append(TurnStart(turn=turn, time=TIME_TOKEN))
            pending: str | None = text
            for _ in range(max_steps):
                step += 1
                events.append(StepStart(step=step, time=TIME_TOKEN))
                if pending is not None:
                    events.append(UserMessage(text=pending, time=TIME_TOKEN))
                    commit(Message("user", (TextBlock(pending),)))
                    pending = None
                if owed:
                    events.append(
                        RecordedRequestHeader(header=logged_header, reason=reason, time=TIME_TOKEN)
                    )
                    owed = False
                headers_equal = headers_equal and header == pinned
                digest = running.copy()
                digest.update(b"]")
                digests.append((count, digest.hexdigest()))
                if answer >= len(answers):
                    raise FloorUnsupported("the transcript asks for more answers than it holds")
                reply = answers[answer]
                answer += 1
                if not isinstance(reply.error, msgspec.UnsetType):
                    raise FloorUnsupported("an answer is a provider error")
                stop = reply.resolved_stop_reason()
                if stop == "max_tokens":
                    raise FloorUnsupported("an answer stops at max_tokens")
                content: list[Block] = [TextBlock(reply.text)] if reply.text else []
                content += [ToolUseBlock(c.id, c.name, c.input) for c in reply.tool_calls]
                blocks = tuple(content)
                events.append(AssistantMessage(content=blocks, stop_reason=stop, time=TIME_TOKEN))
                commit(Message("assistant", blocks))
                results: list[Block] = []
                for call in reply.tool_calls:
                    events.append(
                        ToolCall(id=call.id, name=call.name, input=call.input, time=TIME_TOKEN)
                    )
                    spec = tools[call.name]
                    failed = not isinstance(spec.error, msgspec.UnsetType)
                    output = f"RuntimeError: {spec.error}" if failed else spec.result
                    events.append(
                        ToolResult(
                            tool_use_id=call.id,
                            name=call.name,
                            content=output,
                            is_error=failed,
                            time=TIME_TOKEN,
                        )
                    )
                    results.append(ToolResultBlock(call.id, output, failed))
                if results:
                    commit(Message("user", tuple(results)))
                events.append(StepEnd(step=step, reason=stop, time=TIME_TOKEN))
                if not reply.tool_calls:
                    break
            else:
                raise FloorUnsupported(f"a turn does not finish within {max_steps} steps")
            events.append(TurnEnd(reason="completed", time=TIME_TOKEN))
    recorded = fixture.requests.requests
    return FloorResult(
        steps=step,
        log_equal=_encode(events) == _encode(fixture.log.events),
        digests_equal=len(recorded) == len(digests)
        and all(
            (r.messages.count, r.messages.sha256) == d
            for r, d in zip(recorded, digests, strict=True)
        ),
        headers_equal=headers_equal,
    )


def verify(fixture: Fixture, pin: Pin) -> FloorResult:
    """The floor on a recording, refused unless it reproduces the log and digests exactly."""
    result = floor_check(fixture, pin)
    if not result.ok:
        raise FloorUnsupported(
            f"{fixture.scenario.name}: the floor does not reproduce the recording"
            f" (log {result.log_equal}, digests {result.digests_equal},"
            f" headers {result.headers_equal})"
        )
    return result
