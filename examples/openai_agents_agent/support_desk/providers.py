"""Tool providers (a docs index, the ticket system, the on-call roster). Each connects before its
tools exist; the agent gathers them with `asyncio.as_completed`, so a provider's tools arrive in
the order the connections finish."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents import FunctionTool, function_tool


def search_docs(query: str) -> str:
    """Search the internal documentation."""
    return f"3 pages match {query!r}: runbooks/deploy.md, runbooks/rollback.md, faq.md"


def open_ticket(title: str) -> str:
    """Open a support ticket."""
    return f"ticket SUP-1 opened: {title}"


def find_ticket(query: str) -> str:
    """Find an existing support ticket."""
    return f"no ticket matches {query!r}"


def page_on_call(reason: str) -> str:
    """Page the on-call engineer."""
    return f"paged: {reason}"


@dataclass(frozen=True)
class ToolProvider:
    name: str
    connect_steps: int  # turns of the event loop its connection takes
    functions: tuple[Callable[..., str], ...]

    async def connect(self) -> list[FunctionTool]:
        for _ in range(self.connect_steps):
            await asyncio.sleep(0)
        return [function_tool(function) for function in self.functions]


PROVIDERS: tuple[ToolProvider, ...] = (
    ToolProvider("docs", 3, (search_docs,)),
    ToolProvider("tickets", 1, (open_ticket, find_ticket)),
    ToolProvider("on-call", 2, (page_on_call,)),
)


def racy() -> bool:
    """Run the code as it was before the fix (the README shows both runs)."""
    return os.environ.get("HARNESS_EXAMPLE_RACY") == "1"


async def gather_tools(providers: Sequence[ToolProvider] = PROVIDERS) -> list[FunctionTool]:
    """Connect every provider at once and take each one's tools as it arrives."""
    tools: list[FunctionTool] = []
    for arrived in asyncio.as_completed([provider.connect() for provider in providers]):
        tools.extend(await arrived)
    if not racy():
        tools.sort(key=lambda tool: tool.name)  # the fix: the model-side order is ours
    return tools
