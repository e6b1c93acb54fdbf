"""The agent: pydantic-ai on Anthropic. It makes its own model client; tests never hand one in."""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent

from day_planner.toolkits import load_tools

MODEL = "anthropic:claude-sonnet-5-5"
INSTRUCTIONS = (
    "You help people plan their day. Check the weather and their calendar with the tools"
    " before you suggest anything, and answer in two sentences at most."
)


def build_agent() -> Agent[None, str]:
    return Agent(MODEL, instructions=INSTRUCTIONS, tools=asyncio.run(load_tools()))


def plan_day(question: str) -> str:
    return build_agent().run_sync(question).output
