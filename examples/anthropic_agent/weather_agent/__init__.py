"""A small trip-planning agent on the `anthropic` SDK, with plugins that load concurrently."""

from weather_agent.agent import TripAgent
from weather_agent.plugins import PLUGINS, Plugin, Tool
from weather_agent.registry import ToolRegistry, load_plugins

__all__ = ["PLUGINS", "Plugin", "Tool", "ToolRegistry", "TripAgent", "load_plugins"]
