"""What `harness cost` and `harness report` read: the conversations of cassettes, request bodies
and sessions (as `harness lint` reads them), simulated and priced."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.cache._replay import Conversation, Step
from harness.cost._cost import SessionCost, agreement, cost_of
from harness.cost._simulate import conversations
from harness.rules._engine import Session
from harness.rules._inputs import sessions_of

__all__ = ["agreement_by_provider", "conversations_of", "costs"]


def conversations_of(paths: Sequence[Path], model: str | None = None) -> list[Conversation]:
    """Every conversation the paths hold, simulated (under `model`'s rules if given)."""
    return [c for session in sessions_of(paths) for c in conversations(session, model)]


def costs(paths: Sequence[Path], model: str | None = None) -> list[SessionCost]:
    return [cost_of(conversation) for conversation in conversations_of(paths, model)]


def agreement_by_provider(
    paths: Sequence[Path], sessions: Sequence[Session] | None = None
) -> dict[str, tuple[float, int]]:
    """Per provider, the agreement of the predicted cache reads with the recorded counters, and
    how many requests held counters (providers whose recordings hold none are left out).
    `sessions`: the paths' sessions already read and analysed (`harness check` shares them)."""
    steps: dict[str, list[Step]] = {}
    found_sessions = sessions_of(paths) if sessions is None else sessions
    for conversation in (c for s in found_sessions for c in conversations(s)):
        found = [step for step in conversation.steps if step.recorded is not None]
        if found:
            steps.setdefault(conversation.provider, []).extend(found)
    result: dict[str, tuple[float, int]] = {}
    for provider, found in sorted(steps.items()):
        value = agreement(found)
        if value is not None:
            result[provider] = (value, len(found))
    return result
