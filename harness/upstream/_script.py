"""What a stand-in answers: a script of turns, and which turn a request is at.

A `Turn` is what the model says once: a text, one or more tool calls, or both. A script is a list
of turns; the stand-in answers a request with the turn at the number of assistant turns its
conversation already holds (the first request gets turn 0, the request that carries the answer
to turn 0's tool call gets turn 1...). The choice depends only on the request, never on what the
stand-in answered before: the same request gets the same answer, in a prove_stable rerun, a
hash-seed child or another test. Past the end of the script, the last turn is repeated when it is
a text, and "Done." is answered after a last tool call, so an agent loop always ends.

A tool call may leave its tool unnamed (`tool_call()`): it calls the first tool the request
offers, so a script works whatever the project names its tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "Call",
    "Turn",
    "arguments_text",
    "call_id",
    "estimate_tokens",
    "parallel",
    "text",
    "tool_call",
    "turn_at",
]

DONE: Final = "Done."


@dataclass(frozen=True)
class Call:
    """One tool call: the tool's name (None: the first tool the request offers) and arguments."""

    name: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    """What the model says in one answer: a text, tool calls, or a text before tool calls."""

    text: str | None = None
    calls: tuple[Call, ...] = ()

    def __post_init__(self) -> None:
        if self.text is None and not self.calls:
            raise ValueError("a turn says something: give it a text or a tool call")


def text(words: str) -> Turn:
    """A turn that answers in text (the model's final answer)."""
    if not isinstance(words, str):
        raise TypeError(f"text() takes a string, not {type(words).__name__}")
    return Turn(text=words)


def tool_call(name: str | None = None, arguments: Mapping[str, Any] | None = None) -> Turn:
    """A turn that calls one tool (`name` None: the first tool the request offers)."""
    return Turn(calls=(Call(name, dict(arguments or {})),))


def parallel(*turns: Turn) -> Turn:
    """One turn holding the tool calls (and the first text) of several: parallel tool calls."""
    if not turns:
        raise ValueError("parallel() takes at least one turn")
    words = next((turn.text for turn in turns if turn.text is not None), None)
    return Turn(text=words, calls=tuple(call for turn in turns for call in turn.calls))


def turn_at(script: Sequence[Turn], index: int) -> Turn:
    """The turn a request at `index` answered turns gets (see the module doc)."""
    if index < len(script):
        return script[index]
    last = script[-1] if script else Turn(text=DONE)
    return last if not last.calls else Turn(text=DONE)


def estimate_tokens(data: bytes | str) -> int:
    """About four bytes a token: the stand-in's usage counters, stable for the same bytes."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    return max(1, (size + 3) // 4)


def call_id(prefix: str, index: int, position: int) -> str:
    """A tool call's id: the turn's and the call's place, never the request's bytes (a tool list
    in another order must not change the ids the conversation carries on)."""
    return f"{prefix}standin{index:03d}{position:02d}"


def arguments_text(call: Call) -> str:
    return json.dumps(dict(call.arguments), separators=(",", ":"))
