"""The raw parts a drift report is made of: sentences with quoted content, and how to reproduce.

A sentence of a report (its summary) is plain words and quoted content. The content stays raw
here (`Quote`, `Around`): cutting it is printing, done by `harness.drift._printed` after the
printer has redacted it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Around", "Quote", "Reproduce", "Sentence"]


class Quote(msgspec.Struct, frozen=True, array_like=True, tag="quote"):
    """Content quoted in a sentence, shown redacted and then cut: `bounded` says how many more
    characters there were, `clip` ends in an ellipsis, `name` is a tool name (an unnamed tool's
    JSON is clipped inside its `<unnamed ...>`)."""

    text: str
    limit: int = 120
    style: Literal["bounded", "clip", "name"] = "bounded"


class Around(msgspec.Struct, frozen=True, array_like=True, tag="around"):
    """One side of two differing strings, shown (as a JSON string) around their first
    difference: `side` 0 is `a`, 1 is `b`."""

    a: str
    b: str
    width: int
    side: int


Sentence = tuple[str | Quote | Around, ...]


class Reproduce(msgspec.Struct, frozen=True):
    """How to get the same two sides again."""

    seed: int | None = None
    order_a: tuple[str, ...] = ()
    order_b: tuple[str, ...] = ()
    command: str | None = None
