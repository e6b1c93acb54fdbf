"""The agent: openai-agents' Runner on the Responses API, with its own default OpenAI client."""

from __future__ import annotations

import asyncio

from agents import Agent, Runner

from support_desk.providers import gather_tools

INSTRUCTIONS = (
    "You are the support desk's assistant. Search the docs before you answer, open a ticket"
    " when the docs do not cover the question, and keep answers short."
)


def build_agent() -> Agent:
    return Agent(
        name="support desk",
        instructions=INSTRUCTIONS,
        model="gpt-4.1",
        tools=list(asyncio.run(gather_tools())),
    )


def answer(question: str) -> str:
    return str(Runner.run_sync(build_agent(), question).final_output)
