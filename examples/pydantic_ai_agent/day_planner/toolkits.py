"""The agent's toolkits. Each one awaits its own setup before its tools exist, so they load
concurrently and register in the order they finish."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic_ai import Tool


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: dry, 21C, light wind"


def get_forecast(city: str) -> str:
    """Three-day forecast for a city."""
    return f"{city}: dry today, showers tomorrow"


def list_events(day: str) -> str:
    """The user's calendar for a day."""
    return f"{day}: lunch at 12:30"


def find_parks(city: str) -> str:
    """Parks near the city centre."""
    return f"{city}: Jardin du Luxembourg, Parc Monceau"


@dataclass(frozen=True)
class Toolkit:
    """A group of tools whose setup takes `setup_steps` turns of the event loop."""

    name: str
    setup_steps: int
    functions: tuple[Callable[..., str], ...]

    async def load(self) -> list[Tool[None]]:
        for _ in range(self.setup_steps):
            await asyncio.sleep(0)  # a network call, a file read...
        return [Tool(function) for function in self.functions]


TOOLKITS: tuple[Toolkit, ...] = (
    Toolkit("weather", 2, (get_weather, get_forecast)),
    Toolkit("calendar", 1, (list_events,)),
    Toolkit("maps", 3, (find_parks,)),
)


def racy() -> bool:
    """Run the code as it was before the fix (the README shows both runs)."""
    return os.environ.get("HARNESS_EXAMPLE_RACY") == "1"


async def load_tools(toolkits: Sequence[Toolkit] = TOOLKITS) -> list[Tool[None]]:
    """Load every toolkit concurrently; each adds its tools as soon as it is ready."""
    tools: list[Tool[None]] = []

    async def load(toolkit: Toolkit) -> None:
        tools.extend(await toolkit.load())

    await asyncio.gather(*(load(toolkit) for toolkit in toolkits))
    if not racy():
        tools.sort(key=lambda tool: tool.name)  # the fix: the model-side order is ours
    return tools
