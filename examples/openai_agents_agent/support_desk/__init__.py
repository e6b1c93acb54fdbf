"""A support-desk agent on openai-agents, with tool providers that connect concurrently."""

from support_desk.agent import answer, build_agent
from support_desk.providers import PROVIDERS, ToolProvider, gather_tools

__all__ = ["PROVIDERS", "ToolProvider", "answer", "build_agent", "gather_tools"]
