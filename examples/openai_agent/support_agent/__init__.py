"""A small support agent on the `openai` SDK: local tools plus tools from MCP servers."""

from support_agent.agent import SupportAgent
from support_agent.mcp import ENABLED_SERVERS, SERVERS
from support_agent.tools import LOCAL_TOOLS, tool_schema

__all__ = ["ENABLED_SERVERS", "LOCAL_TOOLS", "SERVERS", "SupportAgent", "tool_schema"]
