"""The agent's own tools: plain functions, described to the model from their signatures."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def search_docs(query: str) -> str:
    """Search the internal documentation."""
    return f"3 pages match {query!r}: runbooks/deploy.md, runbooks/rollback.md, faq.md"


def open_ticket(title: str, body: str) -> str:
    """Open a support ticket."""
    return f"ticket SUP-1 opened: {title}"


def escalate(ticket: str, reason: str) -> str:
    """Escalate a ticket to the on-call engineer."""
    return f"{ticket} escalated"


LOCAL_TOOLS: tuple[Callable[..., str], ...] = (search_docs, open_ticket, escalate)


def tool_schema(function: Callable[..., Any]) -> dict[str, Any]:
    parameters = list(inspect.signature(function).parameters)
    return {
        "type": "function",
        "function": {
            "name": function.__name__,
            "description": inspect.getdoc(function) or "",
            "parameters": {
                "type": "object",
                "properties": {name: {"type": "string"} for name in parameters},
                "required": parameters,
            },
        },
    }
