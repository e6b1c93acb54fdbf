"""What `harness cost` and `harness report` read: the conversations of cassettes, request bodies
and sessions (as `harness lint` reads them), simulated and priced."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.cost._cost import SessionCost, cost_of
from harness.cost._simulate import Conversation, conversations
from harness.rules._inputs import sessions_of

__all__ = ["conversations_of", "costs"]


def conversations_of(paths: Sequence[Path], model: str | None = None) -> list[Conversation]:
    """Every conversation the paths hold, simulated (under `model`'s rules if given)."""
    return [c for session in sessions_of(paths) for c in conversations(session, model)]


def costs(paths: Sequence[Path], model: str | None = None) -> list[SessionCost]:
    return [cost_of(conversation) for conversation in conversations_of(paths, model)]
