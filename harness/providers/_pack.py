"""The rules pack: what each provider's prompt cache does, as dated rows with their sources.

Facts about providers are data, never constants in code: the minimum cacheable tokens per model
family, how many breakpoints a request may carry and what counts toward them, how far a
breakpoint looks back, the cache's times to live and their order, which request fields key the
cache (and at which level), which values of a field equal its absence, and which are bookkeeping.
Each fact is a row of a JSON file shipped inside the package (`harness/providers/rules/*.json`,
kind `harness/rules`), and every row carries `source` (a URL), `checked_on` (the day the row was
compared with that page), `quote` (the sentence of the page that decides it) and, where sources
disagree, `conflicts` (each a claim and its source). A row no page decides says
`source: "assumption"` and why, in `note`. A row that cites a web page must quote it; a project's
own row whose source is not a page (`"our measurement"`) needs no quote (decision 0017).
`harness rules` prints them; `harness rules --stale DAYS` lists the rows not checked for DAYS.

A project adds or overrides rows: its own rows are read before the shipped ones, and the first
row that matches wins (`overlay`: a rules file, `harness-rules.json` or the `harness_rules` ini
value, or `harness_capture_config`'s `rules` key). A model no `minimum` row names is unknown:
rules that need it abstain (`harness.rules` says so once, as `unknown-model`).

A row applies to a provider, optionally to some surfaces (`claude-api`, `vertex`, `bedrock`: a
request whose surface is unknown is on its provider's own platform, so a Bedrock Converse request
is on `bedrock`) and to some models (glob patterns). Settings are looked up per model
(`Pack.setting`); the providers read their settings through `harness.providers._classify`.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

import msgspec

from harness._shared._errors import FixtureError, UsageError
from harness.providers._model_names import model_matches

__all__ = [
    "ASSUMPTION",
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
    "load_rules_file",
    "on_change",
    "overlay",
    "parse_rows",
    "rows_of",
    "rules_pack",
    "same_value",
    "stale_rows",
]

KIND: Final = "harness/rules"
# The source of a row no provider page decides; its `note` says why the harness holds it.
ASSUMPTION: Final = "assumption"
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
# A count a row states (tokens, breakpoints): never negative, or a rule could not fire (a
# negative minimum caches everything, a negative limit counts markers from the wrong end).
Count = Annotated[int, msgspec.Meta(ge=0)]
# A time to live as the cost model reads it (`harness.cache._replay.ttl_seconds`): a positive
# whole number of seconds, minutes, hours or days; anything else would never expire.
Duration = Annotated[str, msgspec.Meta(pattern=r"^0*[1-9][0-9]*[smhd]$")]


class Conflict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What another source claims, where it disagrees with the row's own source."""

    claim: str
    source: str


class Row(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="rule"):
    """One fact: for `providers` (harness provider names), on `surfaces` (empty: all of them:
    `claude-api`, `vertex`, `bedrock`...; a request whose surface is unknown is on its
    provider's own platform) and `models` (glob patterns on the lower-cased model id; empty:
    every model), with its source, the day it was compared with that source, and `quote`, the
    sentence of the source that decides it. A row citing a web page must quote it; a row no
    page decides has `source: "assumption"` and says why in `note`."""

    providers: tuple[str, ...]
    source: str
    checked_on: datetime.date
    quote: str = ""
    surfaces: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.source.startswith(("https://", "http://")) and not self.quote.strip():
            raise ValueError(
                f"a row citing {self.source} must quote the sentence that decides it (`quote`)"
            )
        if self.source == ASSUMPTION and not self.note.strip():
            raise ValueError('a row with source "assumption" must say why in `note`')

    def applies(self, provider: str, model: str | None, surface: str) -> bool:
        if provider not in self.providers:
            return False
        if self.surfaces and (surface or provider) not in self.surfaces:
            return False
        if not self.models:
            return True
        name = (model or "").lower()
        return bool(name) and any(model_matches(name, pattern) for pattern in self.models)


class Caching(Row, tag="caching", frozen=True):
    """How the provider caches: `breakpoints` (only what a marker or the top-level automatic
    marker asks for), `automatic` (every request, implicitly), `implicit` (automatic with no
    guarantee), `units` (whole prefix units, no minimum) or `none` (no provider caching: the
    prefix chain still judges stability byte for byte). `marker` is the key that marks a
    breakpoint; `automatic_marker` the top-level key that asks for automatic caching (empty:
    the API refuses it, or has none). Rows may be per model (`Pack.first(Caching, provider,
    model, surface)`): Claude on Bedrock caches implicitly as well as at its markers."""

    mode: Literal["breakpoints", "automatic", "implicit", "units", "none"]
    marker: str = ""
    automatic_marker: str = ""
    # `automatic` mode: whether the implicit caching also runs beside explicit markers (OpenAI:
    # one implicit breakpoint and the latest explicit ones) or only for a request that marks
    # nothing (Claude on Bedrock: a marked request follows its checkpoints' rules)
    implicit_when_marked: bool = True


class Minimum(Row, tag="minimum", frozen=True):
    """Below `tokens`, nothing is written, silently."""

    tokens: Count


class Breakpoints(Row, tag="breakpoints", frozen=True):
    """At most `limit` markers per request; `over_limit` says what the API does with more
    (`refused`: an error; `ignored`: only the latest `limit` are written). `automatic_counts`: a
    top-level automatic marker takes a slot. `mode` is the request's cache mode the row is for
    (OpenAI `prompt_cache_options.mode`; empty: any); `implicit` the breakpoints the provider adds
    itself in that mode."""

    limit: Count
    over_limit: Literal["refused", "ignored"]
    counts: str
    automatic_counts: bool = False
    mode: str = ""
    implicit: Count = 0


class Lookback(Row, tag="lookback", frozen=True):
    """A breakpoint finds an earlier entry at most `reach` `unit`s back; a run of consecutive
    blocks of a type in `runs` counts as one (`tool_use`, `tool_result` on the Claude API)."""

    unit: Literal["blocks", "breakpoints"]
    reach: Annotated[int, msgspec.Meta(ge=1)]  # the breakpoint itself is the first position
    runs: tuple[str, ...] = ()


class Ttl(Row, tag="ttl", frozen=True):
    """The times to live a marker may ask for on these models, longest first (a value not
    listed is one the API refuses, or the model lacks); `order`: whether entries with a longer
    TTL must come before shorter ones (`longer-first`), and what the API does otherwise."""

    values: tuple[Duration, ...]
    default: Duration
    order: Literal["longer-first", "any"] = "any"
    out_of_order: Literal["refused", "ignored", ""] = ""


class Levels(Row, tag="levels", frozen=True):
    """The cache key levels in order: a change invalidates its level and every later one."""

    order: tuple[str, ...]


class Setting(Row, tag="setting", frozen=True):
    """A request field (a dotted path: `prompt_cache_options.ttl`) and what changing it does:
    `keys-cache` (the verdict `word`; `level`: the first block it certainly invalidates, empty
    for the whole cache key; `may_reach`: an earlier level it also invalidates on some models,
    where the provider says "model-specific" without naming them), `retention` (a time to live
    changed: its own word), or `bookkeeping` (it never reaches the cache; a report names it and
    moves on).

    `absent`: values that are the same cache key as the field left out (the provider's default,
    `{"type": "disabled"}` where thinking is off by default); the view drops them, so a request
    that spells the default never differs from one that omits it. `prewarm`: values that make
    the request a pre-warm (it writes the cache and generates nothing; the real request that
    follows reads it). Rows may be per model: `Pack.setting(provider, field, model, surface)`."""

    field: str
    effect: Literal["keys-cache", "retention", "bookkeeping"]
    word: str = ""
    level: str = ""
    may_reach: str = ""
    absent: tuple[Any, ...] = ()
    prewarm: tuple[Any, ...] = ()
    # `warning`: the provider loses the level by design of a feature a request uses on purpose
    # (an image added to the conversation): the gate reports it, and never fails a test on it
    gate: Literal["error", "warning"] = "error"


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
        where = f"harness/providers/rules/{name}"
        found = _decode(folder.joinpath(name).read_bytes(), where).rows
        for index, row in enumerate(found):
            if row.source != ASSUMPTION and not row.source.startswith("https://"):
                raise FixtureError(
                    where,
                    f"row {index} ({row.providers}) cites {row.source!r}",
                    "a shipped row cites a provider page (https://) and quotes it, or says"
                    ' source "assumption" and why',
                )
        rows += found
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
        self._scoped: dict[tuple[str, str | None, str], dict[str, Setting]] = {}
        # every lookup asked of these rows (they never change: a new pack holds new rows), by
        # kind, provider, lower-cased model and surface: a file's requests ask the same few
        self._every: dict[tuple[type[Row], str, str, str], tuple[Row, ...]] = {}

    def first(
        self, kind: type[R], provider: str, model: str | None = None, surface: str = ""
    ) -> R | None:
        found = self._applying(kind, provider, model, surface)
        return found[0] if found else None

    def every(
        self, kind: type[R], provider: str, model: str | None = None, surface: str = ""
    ) -> list[R]:
        return list(self._applying(kind, provider, model, surface))

    def _applying(
        self, kind: type[R], provider: str, model: str | None, surface: str
    ) -> tuple[R, ...]:
        """The rows of `kind` that apply, in order (`Row.applies` reads the model lower-cased,
        so the lower-cased model is the key)."""
        key = (kind, provider, (model or "").lower(), surface)
        found = self._every.get(key)
        if found is None:
            found = tuple(
                r for r in self.rows if isinstance(r, kind) and r.applies(provider, model, surface)
            )
            if len(self._every) > 4096:  # a bounded memory (a scan of many models)
                self._every.clear()
            self._every[key] = found
        return found  # type: ignore[return-value]

    def knows(self, provider: str) -> bool:
        """Whether any row speaks of `provider` (a provider of its own is not judged by rules)."""
        return any(provider in row.providers for row in self.rows)

    def has_models(self, kind: type[Row], provider: str) -> bool:
        """Whether `provider` has model-specific rows of `kind` (so a model may be unknown)."""
        return any(isinstance(r, kind) and r.models and provider in r.providers for r in self.rows)

    def settings(self, provider: str) -> dict[str, Setting]:
        """Every field `provider` has a setting row for, each with its model-independent row
        (the first row for the field with no `models` and no `surfaces`; a field with only
        per-model rows gives its first one): the vocabulary a report uses when no model is
        known. For one model's rows, `settings_for`."""
        found = self._settings.get(provider)
        if found is None:
            found = {}
            for row in self.rows:
                if isinstance(row, Setting) and provider in row.providers:
                    current = found.get(row.field)
                    if current is None or (_scoped(current) and not _scoped(row)):
                        found[row.field] = row
            self._settings[provider] = found
        return found

    def settings_for(
        self, provider: str, model: str | None = None, surface: str = ""
    ) -> dict[str, Setting]:
        """The setting rows in force for one model on one surface, by field: the first row for
        a field that applies to them (a per-model row before the model-independent one)."""
        key = (provider, (model or "").lower() or None, surface)
        found = self._scoped.get(key)
        if found is None:
            found = {}
            for row in self.rows:
                if isinstance(row, Setting) and row.applies(provider, model, surface):
                    found.setdefault(row.field, row)
            self._scoped[key] = found
        return found

    def setting(
        self, provider: str, field: str, model: str | None = None, surface: str = ""
    ) -> Setting | None:
        """What changing `field` does for this model on this surface (None: no row names it,
        its effect unknown). `Setting.level` is the first level certainly lost, `may_reach` an
        earlier one some models lose too, `absent` the values equal to leaving it out."""
        return self.settings_for(provider, model, surface).get(field)


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


def _scoped(row: Row) -> bool:
    return bool(row.models or row.surfaces)


def stale_rows(rows: Sequence[AnyRow], days: int, today: datetime.date) -> list[AnyRow]:
    """The rows last compared with their source more than `days` days before `today`."""
    oldest = today - datetime.timedelta(days=days)
    return [row for row in rows if row.checked_on < oldest]


def same_value(left: Any, right: Any) -> bool:
    """Whether two JSON values are the same value: objects compare without key order, and a
    boolean is never a number (`True` is not `1`, `0` is not `False`)."""
    encode = msgspec.json.Encoder(order="sorted").encode
    try:
        return encode(left) == encode(right)
    except (TypeError, msgspec.EncodeError):
        return bool(left == right)
