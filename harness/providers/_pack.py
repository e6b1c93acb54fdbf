"""The rules pack: what each provider's prompt cache does, as dated rows with their sources.

Facts about providers are data, never constants in code: the minimum cacheable tokens per model
family, how many breakpoints a request may carry and what counts toward them, how far a
breakpoint looks back, the cache's times to live and their order, which request fields key the
cache (and at which level) and which are bookkeeping. Each fact is a row of a JSON file shipped
inside the package (`harness/providers/rules/*.json`, kind `harness/rules`), and every row
carries `source` (a URL or a document), `checked_on` (a date) and, where sources disagree,
`conflicts` (each a claim and its source). `harness rules` prints them.

A project adds or overrides rows: its own rows are read before the shipped ones, and the first
row that matches wins (`overlay`: a rules file, `harness-rules.json` or the `harness_rules` ini
value, or `harness_capture_config`'s `rules` key). A model no `minimum` row names is unknown:
rules that need it abstain (`harness.rules` says so once, as `unknown-model`).

The providers read their settings through `classify` (cache key, retention or bookkeeping), and
the registry declares each provider's vocabulary from the rows (`vocabulary`): a setting no row
names is reported as unknown, its cache effect unknown, not as a certain break.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from fnmatch import fnmatchcase
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import msgspec

from harness._shared._errors import FixtureError, UsageError
from harness._shared._reasons import UNKNOWN_SETTING, Effect, Reason, Vocabulary

__all__ = [
    "PACK_FILES",
    "AnyRow",
    "Breakpoints",
    "Caching",
    "Compaction",
    "Conflict",
    "KeyOrder",
    "Levels",
    "Lookback",
    "Minimum",
    "Pack",
    "Row",
    "RulesFile",
    "Setting",
    "Ttl",
    "classify",
    "load_rules_file",
    "on_change",
    "overlay",
    "parse_rows",
    "rows_of",
    "rules_pack",
    "vocabulary",
]

KIND: Final = "harness/rules"
FORMAT: Final = 1
PACK_FILES: Final = (
    "anthropic.json",
    "bedrock.json",
    "openai.json",
    "gemini.json",
    "deepseek.json",
    "cohere.json",
    "compatible.json",
)
Severity = Literal["error", "warning", "info"]


class Conflict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What another source claims, where it disagrees with the row's own source."""

    claim: str
    source: str


class Row(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="rule"):
    """One fact: for `providers` (harness provider names), on `surfaces` (empty: all of them:
    `claude-api`, `vertex`, `bedrock`...) and `models` (glob patterns on the lower-cased model
    id; empty: every model), with its source and the date it was checked."""

    providers: tuple[str, ...]
    source: str
    checked_on: datetime.date
    surfaces: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    note: str = ""

    def applies(self, provider: str, model: str | None, surface: str) -> bool:
        if provider not in self.providers:
            return False
        if self.surfaces and surface not in self.surfaces:
            return False
        if not self.models:
            return True
        name = (model or "").lower()
        return bool(name) and any(fnmatchcase(name, pattern) for pattern in self.models)


class Caching(Row, tag="caching", frozen=True):
    """How the provider caches: `breakpoints` (only what a marker or the top-level automatic
    marker asks for), `automatic` (every request, implicitly), `implicit` (automatic with no
    guarantee), `units` (whole prefix units, no minimum) or `none` (no provider caching: the
    prefix chain still judges stability byte for byte). `marker` is the key that marks a
    breakpoint; `automatic_marker` the top-level key that asks for automatic caching."""

    mode: Literal["breakpoints", "automatic", "implicit", "units", "none"]
    marker: str = ""
    automatic_marker: str = ""


class Minimum(Row, tag="minimum", frozen=True):
    """Below `tokens`, nothing is written, silently."""

    tokens: int


class Breakpoints(Row, tag="breakpoints", frozen=True):
    """At most `limit` markers per request; `over_limit` says what the API does with more
    (`refused`: an error; `ignored`: only the latest `limit` are written). `automatic_counts`: a
    top-level automatic marker takes a slot. `mode` is the request's cache mode the row is for
    (OpenAI `prompt_cache_options.mode`; empty: any); `implicit` the breakpoints the provider adds
    itself in that mode."""

    limit: int
    over_limit: Literal["refused", "ignored"]
    counts: str
    automatic_counts: bool = False
    mode: str = ""
    implicit: int = 0


class Lookback(Row, tag="lookback", frozen=True):
    """A breakpoint finds an earlier entry at most `reach` `unit`s back."""

    unit: Literal["blocks", "breakpoints"]
    reach: int


class Ttl(Row, tag="ttl", frozen=True):
    """The times to live a marker may ask for, longest first; `order`: whether entries with a
    longer TTL must come before shorter ones (`longer-first`), and what the API does otherwise."""

    values: tuple[str, ...]
    default: str
    order: Literal["longer-first", "any"] = "any"
    out_of_order: Literal["refused", "ignored", ""] = ""


class Levels(Row, tag="levels", frozen=True):
    """The cache key levels in order: a change invalidates its level and every later one."""

    order: tuple[str, ...]


class Setting(Row, tag="setting", frozen=True):
    """A request field (a dotted path: `prompt_cache_options.ttl`) and what changing it does:
    `keys-cache` (the verdict `word`; `level`: the first block it invalidates, empty for the
    whole cache key), `retention` (a time to live changed: its own word), or `bookkeeping` (it
    never reaches the cache; a report names it and moves on)."""

    field: str
    effect: Literal["keys-cache", "retention", "bookkeeping"]
    word: str = ""
    level: str = ""


class Compaction(Row, tag="compaction", frozen=True):
    """Conversation items whose appearance means the provider compacted the context."""

    item_types: tuple[str, ...]
    word: str


class KeyOrder(Row, tag="key-order", frozen=True):
    """On these surfaces the raw top-level key order reaches the cache: `last` must be
    serialised after every key of `before`."""

    before: tuple[str, ...]
    last: str


AnyRow = Caching | Minimum | Breakpoints | Lookback | Ttl | Levels | Setting | Compaction | KeyOrder
R = TypeVar("R", bound=Row)


class RulesFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A rules file: the shipped pack's, or a project's (which may also set which rules fail and
    their severities)."""

    kind: str
    format: int
    rows: tuple[AnyRow, ...] = ()
    fail_on: tuple[str, ...] = ()
    severity: dict[str, Severity] = {}


# -- loading -------------------------------------------------------------------------------------


def _decode(data: bytes, where: str) -> RulesFile:
    try:
        value = msgspec.json.decode(data, type=RulesFile)
    except msgspec.ValidationError as error:
        raise FixtureError(where, f"is not a rules file: {error}", "see harness rules") from None
    except msgspec.DecodeError as error:
        raise FixtureError(where, f"is not valid JSON: {error}") from None
    if value.kind != KIND:
        raise FixtureError(where, f"holds {value.kind!r}, expected {KIND!r}")
    if value.format != FORMAT:
        raise FixtureError(where, f"has format version {value.format}; this harness reads {FORMAT}")
    return value


@cache
def _shipped() -> tuple[AnyRow, ...]:
    folder = files("harness.providers").joinpath("rules")
    rows: list[AnyRow] = []
    for name in PACK_FILES:
        item = folder.joinpath(name)
        rows += _decode(item.read_bytes(), f"harness/providers/rules/{name}").rows
    return tuple(rows)


def load_rules_file(path: Path) -> RulesFile:
    """A project's rules file, read strictly (a `FixtureError` naming it otherwise)."""
    from harness._shared._files import read_checked

    return _decode(read_checked(path, missing_hint="check the path"), str(path))


def parse_rows(value: Any, *, where: str) -> tuple[AnyRow, ...]:
    """Rows given as plain values (`harness_capture_config`'s `rules`): a list of row objects."""
    if isinstance(value, str | Path):
        return load_rules_file(Path(value)).rows
    if isinstance(value, RulesFile):
        return value.rows
    try:
        return msgspec.convert(list(value), tuple[AnyRow, ...])
    except (TypeError, msgspec.ValidationError) as error:
        raise UsageError(
            f"{where}: rules takes a rules file's path or a list of rows, each with"
            f" rule, providers, source and checked_on ({error})"
        ) from None


# -- the pack in force: the project's rows first, then the shipped ones ---------------------------

_lock = threading.RLock()
_overlays: list[tuple[AnyRow, ...]] = []
_generation = 0


class Pack:
    """The rows in force, in the order they are asked (the first that applies wins)."""

    def __init__(self, rows: Sequence[AnyRow], generation: int) -> None:
        self.rows = tuple(rows)
        self.generation = generation
        self._settings: dict[str, dict[str, Setting]] = {}

    def first(
        self, kind: type[R], provider: str, model: str | None = None, surface: str = ""
    ) -> R | None:
        return next(
            (
                row
                for row in self.rows
                if isinstance(row, kind) and row.applies(provider, model, surface)
            ),
            None,
        )

    def every(
        self, kind: type[R], provider: str, model: str | None = None, surface: str = ""
    ) -> list[R]:
        return [r for r in self.rows if isinstance(r, kind) and r.applies(provider, model, surface)]

    def knows(self, provider: str) -> bool:
        """Whether any row speaks of `provider` (a provider of its own is not judged by rules)."""
        return any(provider in row.providers for row in self.rows)

    def has_models(self, kind: type[Row], provider: str) -> bool:
        """Whether `provider` has model-specific rows of `kind` (so a model may be unknown)."""
        return any(isinstance(r, kind) and r.models and provider in r.providers for r in self.rows)

    def settings(self, provider: str) -> dict[str, Setting]:
        """Every setting row of `provider`, by field (the first row for a field wins)."""
        found = self._settings.get(provider)
        if found is None:
            found = {}
            for row in self.rows:
                if isinstance(row, Setting) and provider in row.providers:
                    found.setdefault(row.field, row)
            self._settings[provider] = found
        return found


_pack: Pack | None = None


def rules_pack() -> Pack:
    """The pack in force: the project's rows (latest overlay first), then the shipped rows."""
    global _pack
    with _lock:
        if _pack is None or _pack.generation != _generation:
            rows = [row for layer in reversed(_overlays) for row in layer]
            _pack = Pack([*rows, *_shipped()], _generation)
        return _pack


@contextmanager
def overlay(rows: Sequence[AnyRow]) -> Iterator[None]:
    """The project's rows in force, asked before the shipped ones, until the block ends."""
    global _generation
    layer = tuple(rows)
    with _lock:
        _overlays.append(layer)
        _generation += 1
    _redeclare()
    try:
        yield
    finally:
        with _lock:
            _overlays.remove(layer)
            _generation += 1
        _redeclare()


_listeners: list[Callable[[], None]] = []


def on_change(listener: Callable[[], None]) -> None:
    """Call `listener` whenever the rows in force change (the registry re-declares the
    providers' vocabularies)."""
    _listeners.append(listener)


def _redeclare() -> None:
    for listener in _listeners:
        listener()


def rows_of(kind: type[R]) -> list[R]:
    return [row for row in rules_pack().rows if isinstance(row, kind)]


# -- what the providers and the comparator read --------------------------------------------------


def classify(
    provider: str, body: Mapping[str, Any], prompt: frozenset[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A body's settings and its bookkeeping, by the pack's setting rows: every top-level key
    that is not prompt text is a setting unless a row calls it bookkeeping; an object whose
    members have rows of their own (`prompt_cache_options`) is flattened to dotted keys, each
    member judged alone. Both are sorted by key: top-level key order does not reach the prompt."""
    rows = rules_pack().settings(provider)
    settings: dict[str, Any] = {}
    bookkeeping: dict[str, Any] = {}
    for key in sorted(body):
        if key in prompt:
            continue
        value = body[key]
        row = rows.get(key)
        if row is not None and row.effect == "bookkeeping":
            bookkeeping[key] = value
        elif isinstance(value, dict) and _has_members(rows, key):
            for member in sorted(value):
                path = f"{key}.{member}"
                inner = rows.get(path)
                target = bookkeeping if inner and inner.effect == "bookkeeping" else settings
                target[path] = value[member]
        else:
            settings[key] = value
    return settings, bookkeeping


def _has_members(rows: Mapping[str, Setting], key: str) -> bool:
    prefix = key + "."
    return any(field.startswith(prefix) for field in rows)


def vocabulary(provider: str) -> Vocabulary:
    """The words the pack gives `provider`'s settings; a provider the pack knows reports a
    setting no row names as unknown (its cache effect unknown) rather than a certain break."""
    pack = rules_pack()
    if not pack.knows(provider):
        return Vocabulary()
    settings: dict[str, Reason] = {}
    for field, row in pack.settings(provider).items():
        if row.effect == "bookkeeping":
            continue
        effect: Effect = "retention" if row.effect == "retention" else "breaks"
        settings[field] = Reason(row.word or f"{field}_changed", row.level or None, effect)
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
