"""A day-planning agent on pydantic-ai, with toolkits that load concurrently."""

from day_planner.agent import build_agent, plan_day
from day_planner.toolkits import TOOLKITS, Toolkit, load_tools

__all__ = ["TOOLKITS", "Toolkit", "build_agent", "load_tools", "plan_day"]
