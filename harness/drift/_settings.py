"""Which block a settings change invalidates, in a provider's own vocabulary.

Most settings (the model, the service tier) move the whole cache key; some invalidate only from
a block on (Anthropic's `tool_choice` and `thinking`: the messages cache). `setting_reason` picks,
of the changed settings, the one that invalidates the most; `setting_level` says from which
block; `start_of` where that block starts in the prompt bytes (what a report keeps). A change in
a cache breakpoint's time to live is its own reason (`names_ttl`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness._shared._reasons import MODEL_CHANGED, Reason, Vocabulary
from harness._shared._views import prompt_bytes

__all__ = ["names_ttl", "setting_level", "setting_reason", "start_of"]


def setting_reason(
    vocabulary: Vocabulary, keys: Sequence[str], order: Sequence[str]
) -> Reason | None:
    """The reason for a settings change: of the changed settings, a certain break first (a time
    to live or a setting no rule knows only when nothing else changed), then the one that
    invalidates the most (a whole-key change first); at the same level one the vocabulary names,
    the model first, then in key order."""
    ranked = sorted(
        range(len(keys)),
        key=lambda i: (
            vocabulary.setting(keys[i]).effect != "breaks",
            setting_level(vocabulary.setting(keys[i]), order),
            not vocabulary.named(keys[i]),
            vocabulary.setting(keys[i]).word != MODEL_CHANGED,
            i,
        ),
    )
    return vocabulary.setting(keys[ranked[0]]) if ranked else None


# The conversation: the last level wherever it is named (a cached prefix may stop before it).
_CONVERSATION: Final = frozenset({"messages", "input", "contents"})


def setting_level(reason: Reason | None, order: Sequence[str]) -> int:
    """The index in `order` of the first block a setting change invalidates (0: all of them;
    `len(order)`: none of them, when it invalidates the conversation and a cached prefix that
    stops before the conversation is compared)."""
    if reason is None or reason.level is None:
        return 0
    if reason.level not in order:
        return len(order) if reason.level in _CONVERSATION else 0
    return order.index(reason.level)


def start_of(doc: Mapping[str, Any], order: Sequence[str], level: int) -> int:
    """Where block `order[level]` starts in the document's prompt bytes (what a report keeps)."""
    before = {key: doc[key] for key in order[:level] if key in doc}
    return len(prompt_bytes(before)) + (1 if before else 0)


MARKER_KEYS = ("cache_control", "cachePoint", "prompt_cache_breakpoint")


def names_ttl(path: Sequence[str]) -> str | None:
    """The setting key of a cache breakpoint's time to live when a difference lies in one
    (`.../cache_control/ttl`: `cache_control.ttl`), else None."""
    if len(path) >= 2 and path[-1] == "ttl" and path[-2] in MARKER_KEYS:
        return f"{path[-2]}.ttl"
    return None
