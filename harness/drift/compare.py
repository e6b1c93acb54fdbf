"""The comparator: the drift from one cache view to another, in the providers' own words.

`compare` says which block diverged first, in the providers' cache-miss vocabulary
(`model_changed`, `tools_changed`, `system_changed`, `messages_changed`), where (a JSON pointer and
a byte offset into `canonical_bytes` that agree with each other), which tool is there and which
plugin registered it, how much cached prefix is lost, and a structured diff. `compare_values` does
the same for any two JSON-able values (session logs, pins), without a cache verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from harness.drift.hints import hints_between
from harness.drift.locate import (
    excerpt,
    first_byte_difference,
    pointer_of,
    resolve,
    walk,
)
from harness.drift.report import DriftReport, Reproduce
from harness.drift.tools import (
    ToolDiff,
    diff_tools,
    provenance_of,
    tool_at,
    tool_changes,
    tools_by_name,
    tools_sentence,
)
from harness.drift.wording import (
    ABSENT,
    short_encoded,
    short_member,
    show_pointer,
    tokens,
)
from harness.reasons import (
    GENERIC,
    MODEL_CHANGED,
    TTL_SETTING,
    Reason,
    Vocabulary,
    vocabulary_for,
)
from harness.views import (
    SETTINGS,
    UNRECOGNISED,
    UNRECOGNISED_NOTE,
    CacheView,
    document,
    encode_json,
    plain,
    prompt_bytes,
)


def compare(
    a: CacheView,
    b: CacheView,
    *,
    owners: Mapping[str, str | None] | None = None,
    reproduce: Reproduce | None = None,
    label_a: str = "expected",
    label_b: str = "actual",
) -> DriftReport:
    """The drift from `a` (expected) to `b` (actual), as a provider's prompt cache sees it.

    Settings are compared first (any difference is `model_changed` and loses every block), then
    the blocks in `a`'s order followed by blocks only `b` has: the first whose encoding differs is
    the verdict, and it and every block after it lose their cache. `owners` maps tool names to the
    plugin that registered them, for provenance.
    """
    doc_a, doc_b = document(a), document(b)
    bytes_a, bytes_b = encode_json(doc_a), encode_json(doc_b)
    prompt_a, prompt_b = prompt_bytes(doc_a), prompt_bytes(doc_b)
    if bytes_a == bytes_b:
        return DriftReport(
            identical=True,
            summary=(
                f"identical: {label_a} and {label_b} encode to the same {len(bytes_a):,} bytes;"
                f" the whole prefix stays cached ({len(prompt_b):,} prompt bytes,"
                f" ~{tokens(len(prompt_b)):,} tokens)"
            ),
            prefix_bytes_kept=len(prompt_b),
            tokens_kept=tokens(len(prompt_b)),
            reproduce=reproduce,
            notes=_notes(a, b),
            label_a=label_a,
            label_b=label_b,
        )

    offset = first_byte_difference(bytes_a, bytes_b)
    path = walk(doc_a, doc_b) or []
    pointer = pointer_of(path)
    order = _block_order(doc_a, doc_b)
    settings_a, settings_b = doc_a[SETTINGS], doc_b[SETTINGS]
    settings_changed = _changed_keys(settings_a, settings_b)

    vocabulary = vocabulary_for(b.provider if b.provider == a.provider else a.provider)
    changed = [key for key in order if _enc_member(doc_a, key) != _enc_member(doc_b, key)]
    setting = _setting_reason(vocabulary, settings_changed, order)
    if encode_json(settings_a) != encode_json(settings_b) and setting is None:
        setting = Reason(MODEL_CHANGED)  # same settings in another key order
    level = _setting_level(setting, order)
    block: str
    if setting is not None and (not changed or order.index(changed[0]) >= level):
        block, kind, verdict = SETTINGS, "settings", setting.word
        invalidated = tuple(order[level:])
        kept = min(_start_of(doc_a, order, level), first_byte_difference(prompt_a, prompt_b))
    else:
        if changed:
            block = changed[0]
            kind = _block_kind(block)
        else:  # same blocks, same contents, another order
            keys_a = [key for key in doc_a if key != SETTINGS]
            keys_b = [key for key in doc_b if key != SETTINGS]
            block = next(x for x, y in zip(keys_a, keys_b, strict=False) if x != y)
            kind = "block-order"
        verdict = vocabulary.block(block)
        if _names_ttl(path):
            kind, verdict = "cache-ttl", vocabulary.setting(TTL_SETTING).word
        invalidated = tuple(order[order.index(block) :])
        kept = first_byte_difference(prompt_a, prompt_b)
    lost = len(prompt_b) - kept

    tools = None
    tools_a_value, tools_b_value = doc_a.get("tools", ABSENT), doc_b.get("tools", ABSENT)
    if _enc_member(doc_a, "tools") != _enc_member(doc_b, "tools"):
        tools = diff_tools(tools_a_value, tools_b_value)
        if block == "tools":
            kind = tools.kind

    tool = tool_at(path, tools_a_value, tools_b_value)
    focus = tool
    if tools is not None and block == "tools" and kind in ("reorder", "reorder-and-content"):
        if tools.mismatch is not None and tools.mismatch < len(tools.names_b):
            focus = tools.names_b[tools.mismatch]
        if kind == "reorder":
            tool = focus
    provenance = provenance_of(owners, focus)

    hint_a, hint_b = _enc_member(doc_a, block), _enc_member(doc_b, block)
    hints = hints_between(
        hint_a.decode("utf-8", "replace"),
        hint_b.decode("utf-8", "replace"),
        differential=bool(hint_a) and bool(hint_b),
    )

    summary = _summary(
        verdict=verdict,
        block=block,
        kind=kind,
        pointer=pointer,
        offset=offset,
        tool=tool,
        focus=focus,
        provenance=provenance,
        tools=tools,
        doc_a=doc_a,
        doc_b=doc_b,
        settings_changed=settings_changed,
        lost=lost,
        labels=(label_a, label_b),
        invalidated=invalidated,
        kept_blocks=[key for key in order if key not in invalidated] if invalidated else [],
    )
    return DriftReport(
        identical=False,
        verdict=verdict,
        block=block,
        invalidated=invalidated,
        kind=kind,
        summary=summary,
        pointer=pointer,
        offset=offset,
        context_a=excerpt(bytes_a, offset),
        context_b=excerpt(bytes_b, offset),
        tool=tool,
        settings_changed=settings_changed,
        tools_added=tools.added if tools else (),
        tools_removed=tools.removed if tools else (),
        tools_a=tools.names_a if tools else (),
        tools_b=tools.names_b if tools else (),
        prefix_bytes_kept=kept,
        prefix_bytes_lost=lost,
        tokens_kept=tokens(kept),
        tokens_lost=tokens(lost),
        provenance=provenance,
        reproduce=reproduce,
        volatile_hints=hints,
        deepdiff=_deepdiff(doc_a, doc_b),
        notes=_notes(a, b),
        label_a=label_a,
        label_b=label_b,
    )


def compare_values(
    a: Any, b: Any, *, label_a: str = "expected", label_b: str = "actual"
) -> DriftReport:
    """The first difference between two JSON-able values (session logs, pins), by encoding.

    There is no cache verdict; `block` is the first segment of the pointer (None at the root).
    """
    plain_a, plain_b = plain(a), plain(b)
    bytes_a, bytes_b = encode_json(plain_a), encode_json(plain_b)
    if bytes_a == bytes_b:
        return DriftReport(
            identical=True,
            summary=f"identical: {label_a} and {label_b} encode to the same {len(bytes_a):,} bytes",
            label_a=label_a,
            label_b=label_b,
        )
    offset = first_byte_difference(bytes_a, bytes_b)
    path = walk(plain_a, plain_b) or []
    pointer = pointer_of(path)
    value_a, value_b = resolve(plain_a, path), resolve(plain_b, path)
    text_a = "" if value_a is ABSENT else encode_json(value_a).decode("utf-8", "replace")
    text_b = "" if value_b is ABSENT else encode_json(value_b).decode("utf-8", "replace")
    summary = (
        f"values differ at {show_pointer(pointer)}, byte {offset}: {label_a} has"
        f" {short_encoded(value_a)}, {label_b} has {short_encoded(value_b)}"
    )
    return DriftReport(
        identical=False,
        block=path[0] if path else None,
        summary=summary,
        pointer=pointer,
        offset=offset,
        context_a=excerpt(bytes_a, offset),
        context_b=excerpt(bytes_b, offset),
        volatile_hints=hints_between(text_a, text_b, differential=bool(text_a) and bool(text_b)),
        deepdiff=_deepdiff(plain_a, plain_b),
        label_a=label_a,
        label_b=label_b,
    )


def _notes(*views: CacheView) -> tuple[str, ...]:
    return (UNRECOGNISED_NOTE,) if any(v.provider == UNRECOGNISED for v in views) else ()


def _enc_member(doc: Mapping[str, Any], key: str) -> bytes:
    return encode_json(doc[key]) if key in doc else b""


def _block_order(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> list[str]:
    order = [key for key in doc_a if key != SETTINGS]
    return order + [key for key in doc_b if key != SETTINGS and key not in doc_a]


def _changed_keys(a: Any, b: Any) -> tuple[str, ...]:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return ()
    keys = list(a) + [key for key in b if key not in a]
    return tuple(key for key in keys if _enc_member(a, key) != _enc_member(b, key))


def _block_kind(block: str) -> str:
    verdict = GENERIC.block(block)
    if verdict == "system_changed":
        return "text"
    if verdict == "messages_changed":
        return "messages"
    return "content"


def _setting_reason(
    vocabulary: Vocabulary, keys: Sequence[str], order: Sequence[str]
) -> Reason | None:
    """The reason for a settings change: of the changed settings, the one that invalidates the
    most (a whole-key change first); at the same level one the vocabulary names, the model
    first, then in key order."""
    ranked = sorted(
        range(len(keys)),
        key=lambda i: (
            _setting_level(vocabulary.setting(keys[i]), order),
            not vocabulary.named(keys[i]),
            vocabulary.setting(keys[i]).word != MODEL_CHANGED,
            i,
        ),
    )
    return vocabulary.setting(keys[ranked[0]]) if ranked else None


def _setting_level(reason: Reason | None, order: Sequence[str]) -> int:
    """The index in `order` of the first block a setting change invalidates (0: all of them)."""
    if reason is None or reason.level is None or reason.level not in order:
        return 0
    return order.index(reason.level)


def _start_of(doc: Mapping[str, Any], order: Sequence[str], level: int) -> int:
    """Where block `order[level]` starts in the document's prompt bytes (what a report keeps)."""
    before = {key: doc[key] for key in order[:level] if key in doc}
    return len(prompt_bytes(before)) + (1 if before else 0)


def _names_ttl(path: Sequence[str]) -> bool:
    """Whether a difference lies in a cache breakpoint's time to live (`.../cache_control/ttl`)."""
    return len(path) >= 2 and path[-1] == "ttl" and path[-2] in ("cache_control", "cachePoint")


def _deepdiff(a: Any, b: Any) -> dict[str, Any]:
    from deepdiff import DeepDiff  # imported on first drift: it is slow to import

    try:
        diff = DeepDiff(tools_by_name(a), tools_by_name(b), verbose_level=2)
        decoded = msgspec.json.decode(diff.to_json())
    except Exception as error:  # a diff that cannot be made must not hide the report
        return {"error": f"deepdiff failed: {error!r}"}
    return decoded if isinstance(decoded, dict) else {"result": decoded}


def _summary(
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
) -> str:
    place = f"at {show_pointer(pointer)}, byte {offset}"
    cost = f"{lost:,} cached bytes (~{tokens(lost):,} tokens) lost"
    label_a, label_b = labels
    if block not in doc_a or block not in doc_b:
        where = label_a if block not in doc_a else label_b
        what = f'the "{block}" block is absent in {where}'
        if kind in ("added", "removed", "added-and-removed") and tools is not None:
            what += "; " + tool_changes(tools)
        return f"{verdict}: {what}, {place}; {cost}"
    if kind == "settings":
        changes = [
            f"{key}: {short_member(doc_a[SETTINGS], key)} -> {short_member(doc_b[SETTINGS], key)}"
            for key in settings_changed[:3]
        ]
        if len(settings_changed) > 3:
            changes.append(f"{len(settings_changed) - 3} more")
        detail = "; ".join(changes) if changes else "same settings in another key order"
        if kept_blocks:
            return (
                f"{verdict}: settings changed ({detail}); the {', '.join(kept_blocks)} cache"
                f" stays, {lost:,} prompt bytes (~{tokens(lost):,} tokens) from the"
                f" {invalidated[0]} block on lost"
            )
        return (
            f"{verdict}: settings changed ({detail}); the cache key moves, all"
            f" {lost:,} prompt bytes (~{tokens(lost):,} tokens) lost"
        )
    if kind == "block-order":
        order_a = ", ".join(key for key in doc_a if key != SETTINGS)
        order_b = ", ".join(key for key in doc_b if key != SETTINGS)
        return (
            f"{verdict}: prompt blocks in another order ({label_a}: {order_a};"
            f" {label_b}: {order_b}) {place}; {cost}"
        )
    if tools is not None and block == "tools":
        return f"{verdict}: {tools_sentence(kind, tool, focus, provenance, tools, pointer)}" + (
            f", byte {offset}; {cost}"
        )
    if kind == "text":
        position = _text_position(doc_a[block], doc_b[block])
        return f"{verdict}: system text differs{position} {place}; {cost}"
    if kind == "messages":
        return (
            f"{verdict}: messages differ{_message_position(pointer, doc_a, doc_b)} {place}; {cost}"
        )
    return f'{verdict}: block "{block}" differs {place}; {cost}'


def _text_position(a: Any, b: Any) -> str:
    if not (isinstance(a, str) and isinstance(b, str)):
        return ""
    index = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
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
