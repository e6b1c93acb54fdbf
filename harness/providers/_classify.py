"""A request body's settings under the rules pack: which fields key the cache, which are
bookkeeping, which spell the provider's default, and which make the request a pre-warm.

The providers split a body through `classify`: every top-level key that is not prompt text is a
setting unless a row calls it bookkeeping; an object whose members have rows of their own
(`prompt_cache_options`, `output_config`, Bedrock's `additionalModelRequestFields`) is flattened
to dotted keys, each member judged alone, at any depth. A value a row lists as `absent` for the
request's model (Anthropic's default effort, thinking `{"type": "disabled"}` where thinking is off
by default, Bedrock's `toolChoice: {"auto": {}}`) is dropped: it is the same cache key as leaving
the field out, so the view never differs between the two. An object left empty by that is gone
too (`"output_config": {}` is no setting).

`vocabulary` gives the registry each provider's words from the rows (a setting no row names is
reported as unknown, its cache effect unknown, not as a certain break), and `prewarm` says which
field makes a request a pre-warm (OpenAI's `prompt_cache_options.prewarm: true`, Anthropic's
`max_tokens: 0`): it writes the cache and answers nothing, and the real request follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness._shared._reasons import UNKNOWN_SETTING, Effect, Reason, Vocabulary
from harness.providers._pack import Compaction, Levels, Setting, rules_pack, same_value

__all__ = ["classify", "prewarm", "vocabulary"]


def classify(
    provider: str,
    body: Mapping[str, Any],
    prompt: frozenset[str],
    model: str | None = None,
    surface: str = "",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A body's settings and its bookkeeping, by the pack's setting rows for `model` on
    `surface` (see the module doc). Both are sorted by key: top-level key order does not reach
    the prompt."""
    pack = rules_pack()
    rows = pack.settings_for(provider, model, surface)
    fields = frozenset(pack.settings(provider))
    settings: dict[str, Any] = {}
    bookkeeping: dict[str, Any] = {}
    for key in sorted(body):
        if key not in prompt:
            _place(key, body[key], rows, fields, settings, bookkeeping)
    return settings, bookkeeping


def _place(
    path: str,
    value: Any,
    rows: Mapping[str, Setting],
    fields: frozenset[str],
    settings: dict[str, Any],
    bookkeeping: dict[str, Any],
) -> None:
    row = rows.get(path)
    if row is not None and row.effect == "bookkeeping":
        bookkeeping[path] = value
    elif row is not None and any(same_value(value, default) for default in row.absent):
        return  # the provider's default, spelled out: the same cache key as leaving it out
    elif isinstance(value, dict) and any(field.startswith(path + ".") for field in fields):
        for member in sorted(value):
            _place(f"{path}.{member}", value[member], rows, fields, settings, bookkeeping)
    else:
        settings[path] = value


def prewarm(
    provider: str, values: Mapping[str, Any], model: str | None = None, surface: str = ""
) -> str | None:
    """The field that makes a request a pre-warm, given its settings and bookkeeping merged
    (`{**split.view.settings, **split.bookkeeping}`); None for an ordinary request."""
    for field, row in rules_pack().settings_for(provider, model, surface).items():
        if field in values and any(same_value(values[field], v) for v in row.prewarm):
            return field
    return None


def vocabulary(provider: str, model: str | None = None, surface: str = "") -> Vocabulary:
    """The words the pack gives `provider`'s settings (for `model` on `surface`: a per-model row
    before the model-independent one); a provider the pack knows reports a setting no row names
    as unknown (its cache effect unknown) rather than a certain break."""
    pack = rules_pack()
    if not pack.knows(provider):
        return Vocabulary()
    settings: dict[str, Reason] = {}
    rows = pack.settings_for(provider, model, surface) if model else pack.settings(provider)
    for field, row in rows.items():
        if row.effect == "bookkeeping":
            continue
        effect: Effect = "retention" if row.effect == "retention" else "breaks"
        settings[field] = Reason(
            row.word or f"{field}_changed",
            row.level or None,
            effect,
            row.may_reach or None,
            row.gate == "warning",
        )
    compacted = frozenset(t for row in pack.every(Compaction, provider) for t in row.item_types)
    word = next((row.word for row in pack.every(Compaction, provider)), "")
    levels = pack.first(Levels, provider)
    return Vocabulary(
        settings=settings,
        unknown=Reason(UNKNOWN_SETTING, None, "unknown"),
        compaction=compacted,
        compaction_word=word,
        levels=levels.order if levels is not None else (),
    )
