"""The reference agent runtime (SPEC part A): the system whose headers the harness proves stable.

It never imports the rest of `harness`: the harness reaches it only through its public events
(`session/event`, `llm/dispatch`, `llm/reply`, `system-prompt/assemble`) and the requests it
dispatches.
"""

from harness.agent._apps import (
    Agent,
    AgentCoreConfig,
    CliAppConfig,
    TuiAppConfig,
    boot_agent,
    boot_app,
)
from harness.agent._context import Context, ContextError, LoadSchedule, Plugin, load_plugins
from harness.agent._frozen import FrozenDict, FrozenError, FrozenList, deep_freeze, is_deep_frozen
from harness.agent._header import Conversation, Header, LlmConfig, canonical_header, header_equals
from harness.agent._llm import (
    DISPATCH_EVENT,
    REPLY_EVENT,
    REQUEST_EVENT,
    AdapterError,
    LlmRuntime,
    Request,
    ScriptedAdapter,
    ScriptedReply,
    ScriptedToolCall,
)
from harness.agent._loop import (
    TOOL_BEFORE_EVENT,
    AgentLoop,
    InvariantError,
    check_rebuild_invariant,
)
from harness.agent._session import SESSION_EVENT, LogEvent, Session, derive_messages, fold_header
from harness.agent._system_prompt import (
    ASSEMBLE_EVENT,
    TOOL_ORDER_REST,
    PromptAssembly,
    PromptAssemblyError,
    PromptRenderError,
    Section,
    SystemPrompt,
    SystemPromptConfig,
    ToolOrderError,
    order_tools,
    render_prompt,
    validate_tool_order,
)
from harness.agent._tools import ToolRuntime, ToolSchema, register_tool

__all__ = [
    "ASSEMBLE_EVENT",
    "DISPATCH_EVENT",
    "REPLY_EVENT",
    "REQUEST_EVENT",
    "SESSION_EVENT",
    "TOOL_BEFORE_EVENT",
    "TOOL_ORDER_REST",
    "AdapterError",
    "Agent",
    "AgentCoreConfig",
    "AgentLoop",
    "CliAppConfig",
    "Context",
    "ContextError",
    "Conversation",
    "FrozenDict",
    "FrozenError",
    "FrozenList",
    "Header",
    "InvariantError",
    "LlmConfig",
    "LlmRuntime",
    "LoadSchedule",
    "LogEvent",
    "Plugin",
    "PromptAssembly",
    "PromptAssemblyError",
    "PromptRenderError",
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
    "check_rebuild_invariant",
    "deep_freeze",
    "derive_messages",
    "fold_header",
    "header_equals",
    "is_deep_frozen",
    "load_plugins",
    "order_tools",
    "register_tool",
    "render_prompt",
    "validate_tool_order",
]
