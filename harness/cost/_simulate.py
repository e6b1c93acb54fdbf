"""The cost model's conversations: the one cache replay (`harness.cache._replay`) over a file.

The replay is what every reader of "read, written, lost" shares; the cost model prices it. A
file's replay under its own models is made once per session (`Session.replayed`, which the rules
read too); `model` replays it under another model's rules (`harness cost --model`: its minimum).
"""

from __future__ import annotations

from harness.cache._replay import Conversation, replay
from harness.rules._engine import Session

__all__ = ["conversations"]


def conversations(session: Session, model: str | None = None) -> list[Conversation]:
    """The session's conversations (one per endpoint), replayed; under `model`'s rules if given."""
    if model is None:
        return session.replayed
    return replay(session.file, list(session.analysed()), model)
