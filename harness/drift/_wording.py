"""Small words every part of a drift report shares: quoted values, name lists, plurals, tokens.

A value quoted from the compared content goes into a sentence as a `Quote`, raw: the printer
redacts it and then cuts it (a cut key may no longer look like one), so a 1 MiB tool name is shown
as its first characters and how many more there were. Token counts are an approximation:
bytes // 4, the usual rule of thumb for English text and JSON (CJK text and long identifiers run
denser); they size the loss, they do not bill it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from harness._shared._reasons import GENERIC
from harness._shared._views import WINDOW_REACH, encode_json
from harness.drift._parts import Quote, Sentence

BYTES_PER_TOKEN: Final = 4
NAME_LIMIT: Final = 120  # characters of a tool name, key or label a report shows

# Block keys -> the providers' cache-miss reason (the generic vocabulary of
# `harness._shared._reasons`;
# aliases cover the providers' own block names, OpenAI `instructions`/`input`, Gemini
# `systemInstruction`/`contents`, so a view in a provider's vocabulary gets one of the reasons).
VERDICTS: Final[dict[str, str]] = dict(GENERIC.blocks)

KIND_TEXT: Final[dict[str, str]] = {
    "reorder": "same tools, other order",
    "content": "same tool names in the same order; a tool's content changed",
    "added": "tools added",
    "removed": "tools removed",
    "added-and-removed": "tools added and removed",
    "reorder-and-content": "same tools in another order, and a tool's content changed",
    "settings": "a setting that keys the cache changed",
    "by-design": "a feature the request uses keys the cache: a level lost by design",
    "cache-ttl": "a cache breakpoint's time to live changed",
    "retention": "the cache's time to live (retention) changed; its effect is not documented",
    "unknown-setting": "a setting no rule knows changed; its cache effect is unknown",
    "compaction": "the provider compacted the context",
    "text": "the system text changed",
    "messages": "the conversation changed",
    "block-order": "the same blocks in another order",
    "block": "a prompt block's content changed",
    "tools-shape": "the tools block is not a list of tools on one side",
    "opaque": "no provider recognised the request; its bytes, judged whole, changed",
}


# Kinds whose cache effect is not certain: nothing is counted lost (a report says "at stake").
UNCERTAIN_KINDS: Final = frozenset({"retention", "unknown-setting"})


class Absent:
    """A member one side does not have."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Final = Absent()


def tokens(size: int) -> int:
    return size // BYTES_PER_TOKEN


def quoted(text: str) -> Quote:
    """A tool name, key or label, quoted."""
    return Quote(text, NAME_LIMIT, "name")


def short(value: Any) -> Quote:
    return Quote(str(value)[: 60 + WINDOW_REACH + 1], 60, "clip")


def short_encoded(value: Any) -> str | Quote:
    if value is ABSENT:
        return "(absent)"
    if isinstance(value, str) and len(value) > 60 + WINDOW_REACH:
        value = value[: 60 + WINDOW_REACH]  # only its start is shown: encode no more than that
    return Quote(encode_json(value).decode("utf-8", "replace")[: 60 + WINDOW_REACH + 1], 60, "clip")


def short_member(mapping: Any, key: str) -> str | Quote:
    if not isinstance(mapping, dict) or key not in mapping:
        return "(absent)"
    return short_encoded(mapping[key])


def names(items: Sequence[str]) -> Sentence:
    parts: list[str | Quote] = []
    for index, item in enumerate(items[:8]):
        parts += [", " if index else "", '"', quoted(item), '"']
    if len(items) > 8:
        parts.append(f" and {len(items) - 8} more")
    return tuple(parts)


def plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def words(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def show_pointer(pointer: str) -> str:
    return pointer if pointer else '"" (the whole value)'
