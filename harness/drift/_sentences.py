"""A drift report's summary sentence: what moved, where, and what it costs, in one line.

The sentence quotes the compared content raw (`Quote`s): the printer redacts and cuts it when the
report is printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness._shared._views import SETTINGS, common_prefix
from harness.drift._parts import Sentence
from harness.drift._tools import ToolDiff, tool_changes, tools_sentence
from harness.drift._wording import short_member, show_pointer, tokens

__all__ = ["summary"]


def summary(
    *,
    verdict: str,
    block: str,
    kind: str,
    pointer: str,
    offset: int,
    tool: str | None,
    focus: str | None,
    provenance: str | None,
    tools: ToolDiff | None,
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    settings_changed: Sequence[str],
    lost: int,
    labels: tuple[str, str],
    invalidated: Sequence[str] = (),
    kept_blocks: Sequence[str] = (),
    at_stake: int = 0,
    cost: str | None = None,
) -> Sentence:
    """The summary sentence; `cost` is the cache model's cost clause when the caller has it."""
    place = f"at {show_pointer(pointer)}, byte {offset}"
    modelled = cost
    cost = cost or f"{lost:,} cached bytes (~{tokens(lost):,} tokens) lost"
    label_a, label_b = labels
    if block not in doc_a or block not in doc_b:
        where = label_a if block not in doc_a else label_b
        what: Sentence = (f'the "{block}" block is absent in {where}',)
        if kind in ("added", "removed", "added-and-removed") and tools is not None:
            what += ("; ", *tool_changes(tools))
        return (f"{verdict}: ", *what, f", {place}; {cost}")
    if kind in ("settings", "by-design", "retention", "unknown-setting"):
        changes: list[Sentence] = [
            (
                f"{key}: ",
                short_member(doc_a[SETTINGS], key),
                " -> ",
                short_member(doc_b[SETTINGS], key),
            )
            for key in settings_changed[:3]
        ]
        if len(settings_changed) > 3:
            changes.append((f"{len(settings_changed) - 3} more",))
        detail: Sentence = ("same settings in another key order",)
        if changes:
            detail = changes[0]
            for change in changes[1:]:
                detail += ("; ", *change)
        stake = f"{at_stake:,} prompt bytes, ~{tokens(at_stake):,} tokens"
        if kind == "retention":
            return (
                f"{verdict}: the cache's time to live changed (",
                *detail,
                "); entries are written under the new one, and whether the prefix cached"
                f" before is read again is not documented (at stake: {stake})",
            )
        if kind == "unknown-setting":
            return (
                f"{verdict}: a setting no rule knows changed (",
                *detail,
                f"); its cache effect is unknown (at stake: {stake}): a setting row in the"
                " rules says whether it keys the cache or is bookkeeping",
            )
        if kept_blocks:
            lost_part = modelled or (
                f"{lost:,} prompt bytes (~{tokens(lost):,} tokens) from the {invalidated[0]}"
                " block on lost"
            )
            return (
                f"{verdict}: settings changed (",
                *detail,
                f"); the {', '.join(kept_blocks)} cache stays, {lost_part}",
            )
        lost_all = (
            f"the cache key moves, {modelled}"
            if modelled
            else f"the cache key moves, all {lost:,} prompt bytes (~{tokens(lost):,} tokens) lost"
        )
        return (f"{verdict}: settings changed (", *detail, f"); {lost_all}")
    if kind == "block-order":
        order_a = ", ".join(key for key in doc_a if key != SETTINGS)
        order_b = ", ".join(key for key in doc_b if key != SETTINGS)
        return (
            f"{verdict}: prompt blocks in another order ({label_a}: {order_a};"
            f" {label_b}: {order_b}) {place}; {cost}",
        )
    if tools is not None and block == "tools":
        clause = tools_sentence(kind, tool, focus, provenance, tools, pointer)
        return (f"{verdict}: ", *clause, f", byte {offset}; {cost}")
    if kind == "text":
        position = _text_position(doc_a[block], doc_b[block])
        return (f"{verdict}: system text differs{position} {place}; {cost}",)
    if kind == "messages":
        position = _message_position(pointer, doc_a, doc_b)
        return (f"{verdict}: messages differ{position} {place}; {cost}",)
    if kind == "opaque":
        return (f"{verdict}: the request, judged as opaque bytes, differs {place}; {cost}",)
    if kind == "compaction":
        position = _message_position(pointer, doc_a, doc_b)
        return (
            f"{verdict}: the provider compacted the context: the conversation differs{position}"
            f" {place}, where a compaction item stands; {cost}",
        )
    return (f'{verdict}: block "{block}" differs {place}; {cost}',)


def _text_position(a: Any, b: Any) -> str:
    if not (isinstance(a, str) and isinstance(b, str)):
        return ""
    index = common_prefix(a, b)
    line = a.count("\n", 0, index) + 1
    column = index - (a.rfind("\n", 0, index) + 1) + 1
    return f" from line {line}, column {column}"


def _message_position(pointer: str, doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> str:
    parts = pointer.split("/")
    if len(parts) < 3 or not parts[2].isdigit():
        return ""
    index = int(parts[2])
    for doc in (doc_b, doc_a):
        messages = doc.get(parts[1])
        if isinstance(messages, list) and index < len(messages):
            message = messages[index]
            role = message.get("role") if isinstance(message, dict) else None
            return f" from message {index}" + (f" ({role})" if isinstance(role, str) else "")
    return f" from message {index}"
