"""The comparator: the drift from one cache view to another, in the providers' own words.

`compare` says which block diverged first, in the providers' cache-miss vocabulary
(`model_changed`, `tools_changed`, `system_changed`, `messages_changed`), where (a JSON pointer and
a byte offset into `canonical_bytes` that agree with each other), which tool is there and which
plugin registered it, how much cached prefix is lost, and a structured diff. `compare_values` does
the same for any two JSON-able values (session logs, pins), without a cache verdict.

The report holds what was compared, raw: the comparator neither redacts nor cuts (printing a
report does both, redacting first: `harness.drift._printed`). What it holds is bounded whatever
the input: excerpts keep a window of bytes around the first difference, hints read near the
first difference only, and the structured diff (deepdiff) runs on the smallest part around the
first difference that fits `DEEPDIFF_INPUT` bytes a side; past that it keeps the region around
the difference instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness._shared._reasons import (
    GENERIC,
    MODEL_CHANGED,
    Reason,
    Vocabulary,
    vocabulary_for,
)
from harness._shared._views import (
    OPAQUE,
    OPAQUE_NOTE,
    SETTINGS,
    UNRECOGNISED,
    UNRECOGNISED_NOTE,
    CacheView,
    common_prefix,
    document,
    encode_json,
    plain,
    prompt_bytes,
    window,
)
from harness.drift._far import FAR, encoded_length, far_difference
from harness.drift._locate import (
    first_byte_difference,
    pointer_of,
    resolve,
    same_encoding,
    walk,
)
from harness.drift._parts import Around, Quote, Reproduce, Sentence
from harness.drift._report import DriftReport, Loss
from harness.drift._sentences import summary as summary_of
from harness.drift._settings import names_ttl, setting_level, setting_reason, start_of
from harness.drift._structured import structured_diff
from harness.drift._tools import (
    ToolDiff,
    diff_tools,
    provenance_of,
    tool_at,
    tool_name,
)
from harness.drift._wording import (
    ABSENT,
    short_encoded,
    show_pointer,
    tokens,
)

HINT_REACH: Final = 32 * 1024  # characters each side of the first difference hints look at


def compare(
    a: CacheView,
    b: CacheView,
    *,
    owners: Mapping[str, str | None] | None = None,
    reproduce: Reproduce | None = None,
    label_a: str = "expected",
    label_b: str = "actual",
    caching: str | None = None,
    loss: Loss | None = None,
    vocabulary: Vocabulary | None = None,
) -> DriftReport:
    """The drift from `a` (expected) to `b` (actual), as a provider's prompt cache sees it.

    Settings are compared first (a setting that keys the cache loses every block, or the blocks
    from its level on), then the blocks in `a`'s order followed by blocks only `b` has: the first
    whose encoding differs is the verdict, and it and every block after it lose their cache. A
    setting whose effect is not certain (a time to live, a setting no rule knows) is the verdict
    only when no block changed, and loses nothing for certain. `owners` maps tool names to the
    plugin that registered them, for provenance. `caching` is what the provider's rules say the
    prefix caches, when the caller knows them: an identical report says it, and says nothing of
    caching without it.
    """
    doc_a, doc_b = document(a), document(b)
    bytes_a, bytes_b = encode_json(doc_a), encode_json(doc_b)
    prompt_a, prompt_b = prompt_bytes(doc_a), prompt_bytes(doc_b)
    if bytes_a == bytes_b:
        said = caching or (
            f"{len(prompt_b):,} prompt bytes (~{tokens(len(prompt_b)):,} tokens); whether they"
            " cache is the provider's rules' to say"
        )
        return DriftReport(
            identical=True,
            raw_summary=(
                f"identical: {label_a} and {label_b} encode to the same {len(bytes_a):,} bytes;"
                f" {said}",
            ),
            prefix_bytes_kept=len(prompt_b),
            tokens_kept=tokens(len(prompt_b)),
            raw_reproduce=reproduce,
            notes=_notes(a, b),
            raw_label_a=label_a,
            raw_label_b=label_b,
        )

    offset = first_byte_difference(bytes_a, bytes_b)
    path = walk(doc_a, doc_b) or []
    pointer = pointer_of(path)
    order = _block_order(doc_a, doc_b)
    settings_a, settings_b = doc_a[SETTINGS], doc_b[SETTINGS]
    settings_changed = _changed_keys(settings_a, settings_b)

    if vocabulary is None:
        vocabulary = vocabulary_for(b.provider if b.provider == a.provider else a.provider)
    changed = [key for key in order if _enc_member(doc_a, key) != _enc_member(doc_b, key)]
    setting = setting_reason(vocabulary, settings_changed, order)
    if encode_json(settings_a) != encode_json(settings_b) and setting is None:
        setting = Reason(MODEL_CHANGED)  # same settings in another key order
    if setting is not None and setting.effect != "breaks" and changed:
        setting = None  # a block changed for certain: that is the verdict
    level = setting_level(setting, order)
    block: str
    first_level: str | None = None  # the first level the change invalidates (None: all)
    if setting is not None and (not changed or order.index(changed[0]) >= level):
        block, verdict = SETTINGS, setting.word
        if setting.effect == "breaks":
            kind = "by-design" if setting.by_design else "settings"
            invalidated = tuple(order[level:])
            first_level = setting.level
            kept = min(start_of(doc_a, order, level), first_byte_difference(prompt_a, prompt_b))
        else:  # a time to live, or a setting no rule knows: nothing is lost for certain
            kind = "retention" if setting.effect == "retention" else "unknown-setting"
            invalidated, kept = (), len(prompt_b)
    else:
        if changed:
            block = changed[0]
            kind = _block_kind(block, b.provider)
        else:  # same blocks, same contents, another order
            keys_a = [key for key in doc_a if key != SETTINGS]
            keys_b = [key for key in doc_b if key != SETTINGS]
            block = next(x for x, y in zip(keys_a, keys_b, strict=False) if x != y)
            kind = "block-order"
        verdict = vocabulary.block(block)
        ttl = names_ttl(path)
        if ttl is not None:
            kind, verdict = "cache-ttl", vocabulary.setting(ttl).word
        elif kind == "messages" and _compacted(vocabulary.compaction, doc_a, doc_b, block):
            kind, verdict = "compaction", vocabulary.compaction_word or "context_compacted"
        invalidated = tuple(order[order.index(block) :])
        first_level = block
        kept = first_byte_difference(prompt_a, prompt_b)
    if invalidated and vocabulary.levels:
        start = first_level or vocabulary.levels[0]
        invalidated = _table_levels(vocabulary.levels, start, doc_a, doc_b)
    lost = len(prompt_b) - kept
    tokens_lost = tokens(lost)
    if loss is not None:
        lost = loss.bytes if loss.bytes is not None else 0
        tokens_lost = loss.tokens if loss.tokens is not None else 0

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

    hints = _block_hints(doc_a, doc_b, block, kind, tools)

    summary = summary_of(
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
        at_stake=len(prompt_b),
        cost=loss.clause() if loss is not None else None,
    )
    return DriftReport(
        identical=False,
        verdict=verdict,
        raw_block=block,
        invalidated=invalidated,
        kind=kind,
        raw_summary=summary,
        raw_pointer=pointer,
        offset=offset,
        raw_context_a=window(bytes_a, offset),
        raw_context_b=window(bytes_b, offset),
        raw_tool=tool,
        raw_settings_changed=tuple(settings_changed),
        raw_tools_added=tools.added if tools else (),
        raw_tools_removed=tools.removed if tools else (),
        raw_tools_a=tools.names_a if tools else (),
        raw_tools_b=tools.names_b if tools else (),
        prefix_bytes_kept=kept,
        prefix_bytes_lost=lost,
        tokens_kept=tokens(kept),
        tokens_lost=tokens_lost,
        raw_provenance=provenance,
        raw_reproduce=reproduce,
        raw_hints=hints,
        raw_deepdiff=structured_diff(doc_a, doc_b, path, max(len(bytes_a), len(bytes_b))),
        notes=(*_notes(a, b), *_may_reach(setting if block == SETTINGS else None, order)),
        raw_label_a=label_a,
        raw_label_b=label_b,
    )


def _table_levels(
    levels: tuple[str, ...], first: str, doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]
) -> tuple[str, ...]:
    """What a change from block `first` on invalidates, as the provider's invalidation table
    names it (its `levels`, in order): that level and every one after it, whether the request
    holds it or not ("the cache is per model": a model change loses the tools level too, tools
    or none). Two names of one level (Gemini's `systemInstruction` and `system_instruction`) are
    one: the one the requests use, else the first."""
    rank = {name: place for place, name in enumerate(levels)}
    if first in rank:
        start = rank[first]
    else:
        generic = GENERIC.block(first)
        start = next(
            (place for place, name in enumerate(levels) if GENERIC.block(name) == generic),
            0,
        )
    found: list[str] = []
    words: dict[str, int] = {}
    for name in levels[start:]:
        word = GENERIC.block(name)
        present = name in doc_a or name in doc_b
        if word in words:
            if present:
                found[words[word]] = name
            continue
        words[word] = len(found)
        found.append(name)
    return tuple(found)


def _block_hints(
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    block: str,
    kind: str,
    tools: ToolDiff | None,
) -> tuple[str, str, bool] | None:
    """What the hints read: the changed block's two texts. A reorder moves the same tools, so
    what differs at one place is another tool's name or text, never a counter: its hints read
    only the tools whose content changed (none, for a pure reorder)."""
    if block == "tools" and tools is not None and kind in ("reorder", "reorder-and-content"):
        if not tools.changed:
            return None
        named_a = _tools_named(doc_a.get("tools"), tools.changed)
        named_b = _tools_named(doc_b.get("tools"), tools.changed)
        return _hints(named_a, named_b, differential=bool(named_a) and bool(named_b))
    hint_a, hint_b = _enc_member(doc_a, block), _enc_member(doc_b, block)
    return _hints(
        hint_a.decode("utf-8", "replace"),
        hint_b.decode("utf-8", "replace"),
        differential=bool(hint_a) and bool(hint_b),
    )


def _tools_named(tools: Any, names: tuple[str, ...]) -> str:
    """The JSON of the tools called `names`, in name order (the same text on both sides)."""
    if not isinstance(tools, list):
        return ""
    wanted = set(names)
    found = sorted(
        (tool_name(tool), encode_json(tool)) for tool in tools if tool_name(tool) in wanted
    )
    return b",".join(encoded for _, encoded in found).decode("utf-8", "replace")


def _compacted(
    types: frozenset[str], doc_a: Mapping[str, Any], doc_b: Mapping[str, Any], block: str
) -> bool:
    """Whether `b`'s conversation holds a compaction item `a`'s does not (the provider compacted
    the context: OpenAI's `context_compacted`)."""
    if not types:
        return False
    items_a, items_b = doc_a.get(block), doc_b.get(block)
    if not isinstance(items_b, list):
        return False

    def compactions(items: Any) -> list[bytes]:
        if not isinstance(items, list):
            return []
        return [
            encode_json(item)
            for item in items
            if isinstance(item, dict) and item.get("type") in types
        ]

    return bool(set(compactions(items_b)) - set(compactions(items_a)))


def compare_values(
    a: Any,
    b: Any,
    *,
    label_a: str = "expected",
    label_b: str = "actual",
    decoded: bool = False,
    size: int = 0,
) -> DriftReport:
    """The first difference between two JSON-able values (session logs, pins), by encoding.

    There is no cache verdict; `block` is the first segment of the pointer (None at the root).
    `decoded`: both values came from a JSON decoder already (no copy to plain values needed);
    `size`: about how many bytes they encode to, when known: over `FAR`, the difference is found
    member by member (`harness.drift._far`) instead of encoding both values whole.
    """
    plain_a, plain_b = (a, b) if decoded else (plain(a), plain(b))
    if size > FAR:
        if same_encoding(plain_a, plain_b):
            return _identical(label_a, label_b, encoded_length(plain_a))
        offset, context_a, context_b = far_difference(plain_a, plain_b)
    else:
        bytes_a, bytes_b = encode_json(plain_a), encode_json(plain_b)
        if bytes_a == bytes_b:
            return _identical(label_a, label_b, len(bytes_a))
        offset = first_byte_difference(bytes_a, bytes_b)
        context_a, context_b = window(bytes_a, offset), window(bytes_b, offset)
        size = max(len(bytes_a), len(bytes_b))
        del bytes_a, bytes_b
    path = walk(plain_a, plain_b) or []
    pointer = pointer_of(path)
    value_a, value_b = resolve(plain_a, path), resolve(plain_b, path)
    text_a, text_b = _hint_texts(value_a, value_b)
    shown_a: str | Quote | Around
    shown_b: str | Quote | Around
    if isinstance(value_a, str) and isinstance(value_b, str):  # show where they differ
        shown_a, shown_b = Around(value_a, value_b, 50, 0), Around(value_a, value_b, 50, 1)
    else:
        shown_a, shown_b = short_encoded(value_a), short_encoded(value_b)
    where = Quote(pointer, 300) if pointer else show_pointer(pointer)
    summary: Sentence = (
        "values differ at ",
        where,
        f", byte {offset}: {label_a} has ",
        shown_a,
        f", {label_b} has ",
        shown_b,
    )
    return DriftReport(
        identical=False,
        raw_block=path[0] if path else None,
        raw_summary=summary,
        raw_pointer=pointer,
        offset=offset,
        raw_context_a=context_a,
        raw_context_b=context_b,
        raw_hints=_hints(text_a, text_b, differential=bool(text_a) and bool(text_b)),
        raw_deepdiff=structured_diff(plain_a, plain_b, path, size),
        raw_label_a=label_a,
        raw_label_b=label_b,
    )


def _identical(label_a: str, label_b: str, size: int) -> DriftReport:
    return DriftReport(
        identical=True,
        raw_summary=(f"identical: {label_a} and {label_b} encode to the same {size:,} bytes",),
        raw_label_a=label_a,
        raw_label_b=label_b,
    )


def _hint_texts(a: Any, b: Any) -> tuple[str, str]:
    """What hints read of two values: their JSON; of two long strings, only near where they
    first differ (encoding 50 MB to look at 64 KiB of it would be the slow part)."""
    if isinstance(a, str) and isinstance(b, str) and len(a) + len(b) > 2 * HINT_REACH:
        at = common_prefix(a, b)
        start = max(at - HINT_REACH, 0)
        a, b = a[start : at + HINT_REACH], b[start : at + HINT_REACH]
    return tuple(  # type: ignore[return-value]
        "" if v is ABSENT else encode_json(v).decode("utf-8", "replace") for v in (a, b)
    )


def _may_reach(setting: Reason | None, order: Sequence[str]) -> tuple[str, ...]:
    """A note where the pack says a setting loses earlier levels on some models (Anthropic's
    thinking: "tool and system-prompt breakpoints can miss too, depending on where the model
    renders the configuration"): the loss above counts only what is lost for certain."""
    if setting is None or not setting.may_reach or setting.may_reach == setting.level:
        return ()
    return (
        f"on some models the {setting.may_reach} cache (and what follows it) is lost too;"
        f" the loss counted is from the {setting.level or 'first'} level on",
    )


def _notes(*views: CacheView) -> tuple[str, ...]:
    if any(v.provider == OPAQUE for v in views):
        return (OPAQUE_NOTE,)
    return (UNRECOGNISED_NOTE,) if any(v.provider == UNRECOGNISED for v in views) else ()


def _enc_member(doc: Mapping[str, Any], key: str) -> bytes:
    return encode_json(doc[key]) if key in doc else b""


def _block_order(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> list[str]:
    """`a`'s blocks, with each block only `b` has at its place in `b` (before the first shared
    block that follows it there): tools added in front of a conversation are the first change,
    not the last."""
    order = [key for key in doc_a if key != SETTINGS]
    keys_b = [key for key in doc_b if key != SETTINGS]
    for index, key in enumerate(keys_b):
        if key in doc_a:
            continue
        after = next((k for k in keys_b[index + 1 :] if k in order), None)
        order.insert(order.index(after) if after is not None else len(order), key)
    return order


def _changed_keys(a: Any, b: Any) -> tuple[str, ...]:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return ()
    keys = list(a) + [key for key in b if key not in a]
    return tuple(key for key in keys if _enc_member(a, key) != _enc_member(b, key))


def _block_kind(block: str, provider: str) -> str:
    """The kind of a change in `block`: a tool list's kind is the tool diff's (`content` until
    then); a whole body no provider recognised is `opaque`; another block is `block`, never a
    tool sentence."""
    if provider in (OPAQUE, UNRECOGNISED) and block == "body":
        return "opaque"
    verdict = GENERIC.block(block)
    if verdict == "system_changed":
        return "text"
    if verdict == "messages_changed":
        return "messages"
    return "content" if verdict == "tools_changed" else "block"


def _hints(a_text: str, b_text: str, *, differential: bool) -> tuple[str, str, bool]:
    """What hints read: the texts near the first difference (bounded); hints are made when the
    report is printed, from the redacted texts."""
    if len(a_text) + len(b_text) > 2 * HINT_REACH:
        at = common_prefix(a_text, b_text)
        start = max(at - HINT_REACH, 0)
        a_text, b_text = a_text[start : at + HINT_REACH], b_text[start : at + HINT_REACH]
    return a_text, b_text, differential
