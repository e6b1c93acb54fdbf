"""MCP servers the agent connects to (stand-ins: each lists its tools like an MCP server does)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class McpServer:
    name: str
    tools: tuple[tuple[str, str], ...]  # (name, description)

    def list_tools(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": f"{self.name}__{name}",
                    "description": description,
                    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
                },
            }
            for name, description in self.tools
        ]


SERVERS = {
    server.name: server
    for server in (
        McpServer("github", (("search_issues", "Search GitHub issues."),)),
        McpServer("filesystem", (("read_file", "Read a file."), ("list_dir", "List a folder."))),
        McpServer("jira", (("find_ticket", "Find a Jira ticket."),)),
        McpServer("slack", (("post_message", "Post to a Slack channel."),)),
    )
}

# Which servers this deployment enables. A set, because duplicates make no sense here; and a set
# of strings iterates in an order that changes with every process's PYTHONHASHSEED.
ENABLED_SERVERS = {"github", "filesystem", "jira", "slack"}
