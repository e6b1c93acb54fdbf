"""Cache cost as a tested property: the price pack, the simulation, and what they print.

- `_prices`: the dated, sourced price pack (`harness/providers/prices/*.json`) and a project's
  own rows (a negotiated rate);
- `_timing`: when a recorded request started and ended (session `time`, cassette timing);
- `_simulate`: request by request, what is read, written per TTL and sent uncached, under the
  rules pack and the recorded gaps and overlaps;
- `_cost`: the simulation priced, the provider's counters summed, and their agreement;
- `_text`: one conversation's cost in a line (`harness cost`, the budget marker, the report).

`costs(paths)` is what `harness cost` and `harness report` read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.cost._cost import SessionCost, cost_of
from harness.cost._simulate import Conversation, conversations

__all__ = ["conversations_of", "costs"]


def conversations_of(paths: Sequence[Path], model: str | None = None) -> list[Conversation]:
    """Every conversation the paths hold (as `harness lint` reads them), simulated."""
    from harness.rules._inputs import sessions_of

    return [c for session in sessions_of(paths) for c in conversations(session, model)]


def costs(paths: Sequence[Path], model: str | None = None) -> list[SessionCost]:
    return [cost_of(conversation) for conversation in conversations_of(paths, model)]
