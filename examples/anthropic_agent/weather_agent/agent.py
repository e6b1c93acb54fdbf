"""The agent loop: stream a turn, run the tools the model asks for, answer with their results."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import anthropic

from weather_agent.plugins import Plugin
from weather_agent.registry import ToolRegistry, load_plugins

MODEL = "claude-sonnet-4-5"
SYSTEM = (
    "You are a trip-planning assistant. Use the tools to check the weather and the user's"
    " calendar before you suggest plans. Answer in two sentences at most."
)


class TripAgent:
    def __init__(self, client: anthropic.Anthropic, registry: ToolRegistry) -> None:
        self.client = client
        self.registry = registry

    @classmethod
    def with_plugins(cls, client: anthropic.Anthropic, plugins: Sequence[Plugin]) -> TripAgent:
        return cls(client, asyncio.run(load_plugins(plugins)))

    def run(self, prompt: str, *, max_steps: int = 5) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": prompt}]}
        ]
        for _ in range(max_steps):
            with self.client.messages.stream(
                model=MODEL,
                max_tokens=1024,
                system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
                tools=self.registry.schemas(),
                messages=_with_breakpoint(messages),
            ) as stream:
                reply = stream.get_final_message()
            content = [_block(block) for block in reply.content]
            messages.append({"role": "assistant", "content": content})
            calls = [block for block in content if block["type"] == "tool_use"]
            if reply.stop_reason != "tool_use" or not calls:
                return "".join(block.get("text", "") for block in content)
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call["id"],
                            "content": self.registry.get(call["name"]).run(call["input"]),
                        }
                        for call in calls
                    ],
                }
            )
        raise RuntimeError(f"no answer after {max_steps} steps")


def _block(block: Any) -> dict[str, Any]:
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {"type": "text", "text": block.text}


def _with_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with a cache breakpoint on its last block (moved forward every turn)."""
    *earlier, last = messages
    blocks = [dict(block) for block in last["content"]]
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return [*earlier, {**last, "content": blocks}]
