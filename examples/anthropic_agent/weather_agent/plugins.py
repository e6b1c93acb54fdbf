"""The agent's plugins. Each one imports its backend asynchronously before its tools exist."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    properties: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": {
                "type": "object",
                "properties": self.properties,
                "required": list(self.properties),
            },
        }

    def run(self, arguments: dict[str, Any]) -> str:
        return f"{self.name}({', '.join(f'{k}={v}' for k, v in sorted(arguments.items()))}): ok"


@dataclass(frozen=True)
class Plugin:
    """A plugin whose import takes `import_steps` turns of the event loop (network, disk...)."""

    name: str
    import_steps: int
    tools: tuple[Tool, ...]

    async def load(self) -> tuple[Tool, ...]:
        for _ in range(self.import_steps):
            await asyncio.sleep(0)
        return self.tools


CITY = {"city": {"type": "string", "description": "City name, e.g. Paris"}}

WEATHER = Plugin(
    "weather",
    1,
    (
        Tool("get_weather", "Current weather for a city.", CITY),
        Tool("get_forecast", "Three-day forecast for a city.", CITY),
    ),
)
CALENDAR = Plugin(
    "calendar",
    1,
    (
        Tool("list_events", "Events on a day.", {"day": {"type": "string"}}),
        Tool(
            "create_event",
            "Add an event.",
            {"day": {"type": "string"}, "title": {"type": "string"}},
        ),
    ),
)
MAPS = Plugin(
    "maps", 2, (Tool("geocode", "Coordinates of a place.", {"place": {"type": "string"}}),)
)
UNITS = Plugin(
    "units",
    2,
    (
        Tool(
            "convert_units",
            "Convert a quantity.",
            {"value": {"type": "number"}, "to": {"type": "string"}},
        ),
    ),
)

PLUGINS: tuple[Plugin, ...] = (WEATHER, CALENDAR, MAPS, UNITS)
