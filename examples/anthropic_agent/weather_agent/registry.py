"""Tools register as their plugin finishes loading, so registration order is a race."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from weather_agent.plugins import Plugin, Tool


def racy() -> bool:
    """Run the code as it was before the fix (the README shows both runs)."""
    return os.environ.get("HARNESS_EXAMPLE_RACY") == "1"


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        return self._tools[name]

    def schemas(self) -> list[dict[str, Any]]:
        """The tools as the model sees them (they are cached with the system prompt)."""
        tools = list(self._tools.values())  # registration order: whoever finished loading first
        if not racy():
            tools.sort(key=lambda tool: tool.name)  # the fix: the model-side order is ours
        return [tool.schema() for tool in tools]


async def load_plugins(plugins: Sequence[Plugin]) -> ToolRegistry:
    """Load every plugin concurrently; each registers its tools as soon as it is loaded."""
    registry = ToolRegistry()

    async def load(plugin: Plugin) -> None:
        for tool in await plugin.load():
            registry.register(tool)

    await asyncio.gather(*(load(plugin) for plugin in plugins))
    return registry
