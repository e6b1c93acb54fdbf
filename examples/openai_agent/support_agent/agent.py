"""The agent loop on Chat Completions: call tools until the model answers."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import openai

from support_agent.mcp import ENABLED_SERVERS, SERVERS
from support_agent.tools import LOCAL_TOOLS, tool_schema

MODEL = "gpt-4.1"
INSTRUCTIONS = (
    "You are the support desk's assistant. Search the docs before you answer, open a ticket"
    " when the docs do not cover the question, and keep answers short."
)


def racy() -> bool:
    """Run the code as it was before the fix (the README shows both runs)."""
    return os.environ.get("HARNESS_EXAMPLE_RACY") == "1"


def server_order(servers: Iterable[str]) -> list[str]:
    if racy():
        return list(servers)  # before the fix: set iteration order, new in every process
    return sorted(servers)  # the fix


class SupportAgent:
    def __init__(
        self,
        client: openai.OpenAI,
        tools: Sequence[Callable[..., str]] = LOCAL_TOOLS,
        servers: Iterable[str] = ENABLED_SERVERS,
    ) -> None:
        self.client = client
        self.local = {function.__name__: function for function in tools}
        self.servers = set(servers)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Our own tools first (sorted by name), then each MCP server's tools."""
        schemas = [tool_schema(self.local[name]) for name in sorted(self.local)]
        for server in server_order(self.servers):
            schemas += SERVERS[server].list_tools()
        return schemas

    def ask(self, question: str, *, max_steps: int = 5) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "developer", "content": INSTRUCTIONS},
            {"role": "user", "content": question},
        ]
        for _ in range(max_steps):
            completion = self.client.chat.completions.create(
                model=MODEL,
                messages=messages,  # type: ignore[arg-type]
                tools=self.tool_schemas(),  # type: ignore[arg-type]
                prompt_cache_key="support-agent",
            )
            message = completion.choices[0].message
            calls = message.tool_calls or []
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    **(
                        {"tool_calls": [call.model_dump(exclude_none=True) for call in calls]}
                        if calls
                        else {}
                    ),
                }
            )
            if not calls:
                return message.content or ""
            for call in calls:
                function = self.local[call.function.name]  # type: ignore[union-attr]
                arguments = json.loads(call.function.arguments)  # type: ignore[union-attr]
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": function(**arguments)}
                )
        raise RuntimeError(f"no answer after {max_steps} steps")
