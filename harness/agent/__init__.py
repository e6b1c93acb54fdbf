"""The reference agent runtime (SPEC part A): the system whose request headers the harness proves stable.

It never imports the rest of `harness`: the harness reaches it only through its public events
(`session/event`, `llm/dispatch`, `llm/reply`, `system-prompt/assemble`) and the requests it
dispatches.
"""

from harness.agent.apps import Agent, AgentCoreConfig, CliAppConfig, TuiAppConfig, boot_agent, boot_app
from harness.agent.context import Context, LoadSchedule, Plugin, load_plugins
from harness.agent.frozen import FrozenDict, FrozenError, deep_freeze
from harness.agent.llm import LlmRuntime, Request, ScriptedAdapter, ScriptedReply, ScriptedToolCall
from harness.agent.loop import AgentLoop, InvariantError
from harness.agent.session import Header, LlmConfig, Session, canonical_header, header_equals
from harness.agent.system_prompt import (
    TOOL_ORDER_REST,
    PromptAssembly,
    Section,
    SystemPrompt,
    SystemPromptConfig,
    ToolOrderError,
    order_tools,
    render_prompt,
    validate_tool_order,
)
from harness.agent.tools import ToolRuntime, ToolSchema, register_tool

__all__ = [
    "TOOL_ORDER_REST",
    "Agent",
    "AgentCoreConfig",
    "AgentLoop",
    "CliAppConfig",
    "Context",
    "FrozenDict",
    "FrozenError",
    "Header",
    "InvariantError",
    "LlmConfig",
    "LlmRuntime",
    "LoadSchedule",
    "Plugin",
    "PromptAssembly",
    "Request",
    "ScriptedAdapter",
    "ScriptedReply",
    "ScriptedToolCall",
    "Section",
    "Session",
    "SystemPrompt",
    "SystemPromptConfig",
    "ToolOrderError",
    "ToolRuntime",
    "ToolSchema",
    "TuiAppConfig",
    "boot_agent",
    "boot_app",
    "canonical_header",
    "deep_freeze",
    "header_equals",
    "load_plugins",
    "order_tools",
    "register_tool",
    "render_prompt",
    "validate_tool_order",
]
