"""Two app presets and the agent core they configure.

Configuration flows one way: app config -> agent core -> SystemPrompt. `tool_order` travels beside
`persona` at every layer and stays UNSET when left out (an explicit `[]` is a configured list and is
rejected by SystemPrompt), so each layer declares it with the UNSET default rather than `()`.
Nothing in the LLM runtime or the loop knows about it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from harness.agent._context import Context, LoadSchedule, Plugin, load_plugins
from harness.agent._header import LlmConfig
from harness.agent._llm import Adapter, LlmRuntime
from harness.agent._loop import AgentLoop
from harness.agent._session import LogEvent, Session, TurnEnd, utc_now
from harness.agent._system_prompt import SystemPrompt, SystemPromptConfig
from harness.agent._tools import ToolRuntime

ToolOrder = tuple[str, ...] | msgspec.UnsetType


class AgentCoreConfig(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    provider: str = "scripted"
    model: str = "scripted-model"
    max_tokens: int = 1024
    persona: str = ""
    tool_order: ToolOrder = msgspec.UNSET
    include_harness_identity: bool = True
    include_runtime_context: bool = True
    max_steps: int = 16

    def system_prompt(self) -> SystemPromptConfig:
        return SystemPromptConfig(
            persona=self.persona,
            tool_order=self.tool_order,
            include_harness_identity=self.include_harness_identity,
            include_runtime_context=self.include_runtime_context,
        )

    def llm(self) -> LlmConfig:
        return LlmConfig(provider=self.provider, model=self.model, max_tokens=self.max_tokens)


class CliAppConfig(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The command-line preset: terse, runtime context on."""

    persona: str = "You are a terse command-line assistant. Prefer short answers."
    tool_order: ToolOrder = msgspec.UNSET
    model: str = "scripted-model"
    max_steps: int = 16

    def agent_core(self) -> AgentCoreConfig:
        return AgentCoreConfig(
            model=self.model,
            persona=self.persona,
            tool_order=self.tool_order,
            max_steps=self.max_steps,
        )


class TuiAppConfig(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The terminal-UI preset: chattier persona, no runtime context section, a UI theme."""

    persona: str = "You are a helpful assistant in a terminal user interface."
    tool_order: ToolOrder = msgspec.UNSET
    model: str = "scripted-model"
    theme: Literal["dark", "light"] = "dark"

    def agent_core(self) -> AgentCoreConfig:
        return AgentCoreConfig(
            model=self.model,
            persona=self.persona,
            tool_order=self.tool_order,
            include_runtime_context=False,
        )


AppPreset = Literal["cli", "tui"]
APP_CONFIGS: dict[str, type[CliAppConfig] | type[TuiAppConfig]] = {
    "cli": CliAppConfig,
    "tui": TuiAppConfig,
}


def app_config(preset: str, raw: Mapping[str, Any] | None = None) -> CliAppConfig | TuiAppConfig:
    """Decode an app's raw config (from a file or a fixture) strictly into its preset's Struct."""
    try:
        kind = APP_CONFIGS[preset]
    except KeyError:
        raise ValueError(f"unknown app preset {preset!r}; known presets: cli, tui") from None
    return msgspec.convert(dict(raw or {}), kind)


@dataclass
class Agent:
    """A booted agent: its context, services and loop, and the order its plugins registered in."""

    ctx: Context
    loop: AgentLoop
    session: Session
    prompt: SystemPrompt
    tools: ToolRuntime
    llm: LlmRuntime
    registration_order: list[str]

    async def turn(self, text: str) -> TurnEnd:
        return await self.loop.run_turn(text)


async def boot_agent(
    config: AgentCoreConfig,
    *,
    adapter: Adapter,
    plugins: Iterable[Plugin | Callable[[Context], Any]] = (),
    schedule: LoadSchedule | None = None,
    session_id: str | None = None,
    log: Sequence[LogEvent] = (),
    clock: Callable[[], str] = utc_now,
    variables: Mapping[str, str] | None = None,
    share_conversation: bool = False,
) -> Agent:
    """Build the services, load the plugins concurrently, and return a loop ready for turns.

    `share_conversation=True`: each request's messages are a `Conversation` sharing the
    session's store (constant time per request) instead of a tuple of their own; for a caller
    that reads requests without encoding them whole (the harness's replay digests them).
    """
    ctx = Context()
    tools = ToolRuntime()
    ctx.provide(ToolRuntime, tools)
    prompt = SystemPrompt(ctx, config.system_prompt())
    prompt.add_tool_provider(tools.frozen_schemas)
    for name, value in (variables or {}).items():
        prompt.set_variable(name, value)
    ctx.provide(SystemPrompt, prompt)
    session = Session(
        ctx, session_id=session_id, log=log, clock=clock, share_conversation=share_conversation
    )
    ctx.provide(Session, session)
    llm = LlmRuntime(ctx, adapter, config.llm())
    ctx.provide(LlmRuntime, llm)
    order = await load_plugins(ctx, plugins, schedule)
    loop = AgentLoop(ctx, max_steps=config.max_steps)
    return Agent(ctx, loop, session, prompt, tools, llm, order)


async def boot_app(
    preset: str,
    config: Mapping[str, Any] | CliAppConfig | TuiAppConfig | None = None,
    **options: Any,
) -> Agent:
    """Boot an app preset; `options` are those of `boot_agent`."""
    if not isinstance(config, CliAppConfig | TuiAppConfig):
        config = app_config(preset, config)
    return await boot_agent(config.agent_core(), **options)
