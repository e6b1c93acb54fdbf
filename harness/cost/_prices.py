"""What a request costs per million tokens, and where each price came from.

Three layers, asked in order for each request (its provider, model, start and size):

1. the project's rows: `harness-prices.json` at its root, `--prices FILE` on `harness cost` and
   `harness report`, or `harness_capture_config`'s `prices` (a file or a list of rows) for the
   budget marker; a negotiated rate;
2. the price pack, `harness/providers/prices/*.json`: only what genai-prices lacks (a TTL's write
   price it does not carry, DeepSeek's all-day weekend price), each row with its `source`,
   `checked_on` and the `quote` of the page that decides it;
3. genai-prices (`harness.cost._registry`): input, output, cache read and write per TTL, tiers,
   start dates, time-of-day windows and the provider's own model aliases.

A row (kind `harness/prices`, USD per million tokens) names its `providers`, `models` (globs on
the lower-cased model id), the date it is `effective_from`, optionally the UTC `weekdays` it is
for, and either a price (`input`, `output`, `cache_read`, `cache_write` per TTL, optional `tiers`
above a number of input tokens) or a supplement (`cache_write` for a TTL, or `cache_write_as`: a
TTL's write as `times` the price of `of`, an input price or another TTL's write). A price is
complete: nothing below it is asked (an empty `cache_write` means no write fee: a write is billed
as input). A supplement adds the TTLs it names to what is below it. The first applicable row wins
for each price, so a newer row sits above the row it replaces.

Every price must be a finite number, not negative: a NaN makes every comparison false, so a
budget priced with it could never fail; such a row is refused in one line, in a project's file
and in the shipped pack alike.
"""

from __future__ import annotations

import datetime
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec

from harness._shared._errors import FixtureError, UsageError
from harness.cost import _registry

__all__ = [
    "PRICE_FILES",
    "PROJECT_PRICES",
    "Price",
    "PriceSource",
    "PricesFile",
    "Quote",
    "load_prices_file",
    "overlay_prices",
    "parse_price_rows",
    "price_for",
    "price_rows",
    "project_prices",
]

KIND: Final = "harness/prices"
FORMAT: Final = 1
PRICE_FILES: Final = ("openai.json", "deepseek.json")
PROJECT_PRICES: Final = "harness-prices.json"
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_DAYS: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_NEEDS: Final = (
    "each row needs providers, effective_from, source and checked_on, and either input, output"
    " and cache_read (a price) or cache_write / cache_write_as (a TTL's write price)"
)


def _checked(name: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise ValueError(
            f"{name} is {value!r}: a price must be a finite number, not negative (a budget"
            " priced with it could not fail)"
        )


class Conflict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    claim: str
    source: str


class Derived(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A write price as `times` the price of `of` (`input`, or a TTL's write: `30m`)."""

    of: str
    times: float

    def __post_init__(self) -> None:
        _checked("times", self.times)


class Tier(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The prices of a request whose input tokens exceed `above` (all its tokens)."""

    above: Annotated[int, msgspec.Meta(ge=0)]  # input tokens
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: dict[str, float] = {}

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read"):
            _checked(f"tiers: {name}", getattr(self, name))
        for ttl, price in self.cache_write.items():
            _checked(f"tiers: cache_write {ttl}", price)


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One row (see the module doc); prices in USD per million tokens."""

    providers: tuple[str, ...]
    source: str
    checked_on: datetime.date
    effective_from: datetime.date
    models: tuple[str, ...] = ()
    weekdays: tuple[Weekday, ...] = ()
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: dict[str, float] = {}
    cache_write_as: dict[str, Derived] = {}
    tiers: tuple[Tier, ...] = ()
    quote: str = ""
    conflicts: tuple[Conflict, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read"):
            _checked(name, getattr(self, name))
        for ttl, price in self.cache_write.items():
            _checked(f"cache_write {ttl}", price)
        given = [getattr(self, name) is not None for name in ("input", "output", "cache_read")]
        if any(given) and not all(given):
            raise ValueError("a price needs input, output and cache_read together")
        if not any(given) and not (self.cache_write or self.cache_write_as):
            raise ValueError("the row names no price")
        if self.tiers and not all(given):
            raise ValueError("tiers belong to a row with input, output and cache_read")

    @property
    def complete(self) -> bool:
        return self.input is not None

    def applies(self, provider: str, model: str | None, on: datetime.date) -> bool:
        if provider not in self.providers or self.effective_from > on:
            return False
        if self.weekdays and _DAYS[on.weekday()] not in self.weekdays:
            return False
        if not self.models:
            return True
        name = (model or "").lower()
        return bool(name) and any(fnmatchcase(name, pattern) for pattern in self.models)

    def tier(self, input_tokens: int) -> Tier | None:
        reached = [t for t in self.tiers if input_tokens > t.above]
        return max(reached, key=lambda t: t.above) if reached else None


class PricesFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    format: int
    rows: tuple[Price, ...] = ()
    unit: str = "USD per million tokens"


class PriceSource(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where some of a request's prices came from: `genai-prices` (its `version`, and the
    `provider` and `model` ids of its entry), a page of the price pack or a project's file (its
    `checked_on` and `quote`)."""

    source: str
    gave: tuple[str, ...]
    version: str | None = None
    provider: str | None = None
    model: str | None = None
    checked_on: str | None = None
    quote: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Quote:
    """One request's prices (USD per million tokens), their sources and what was applied."""

    input: float
    output: float
    cache_read: float
    cache_write: Mapping[str, float]
    sources: tuple[PriceSource, ...]
    applied: tuple[str, ...] = ()

    def write(self, ttl: str) -> float | None:
        """A write at `ttl`; a TTL with no price of its own at the highest write price known
        (never below what it may cost); None when the provider charges no write fee."""
        if not self.cache_write:
            return None
        found = self.cache_write.get(ttl)
        return found if found is not None else max(self.cache_write.values())

    @property
    def checked_on(self) -> str | None:
        dates = [s.checked_on for s in self.sources if s.checked_on]
        return max(dates) if dates else None


def _decode(data: bytes, where: str) -> PricesFile:
    try:
        value = msgspec.json.decode(data, type=PricesFile)
    except msgspec.ValidationError as error:
        raise FixtureError(where, f"is not a prices file: {error}", _NEEDS) from None
    except msgspec.DecodeError as error:
        raise FixtureError(where, f"is not valid JSON: {error}") from None
    if value.kind != KIND:
        raise FixtureError(where, f"holds {value.kind!r}, expected {KIND!r}")
    if value.format != FORMAT:
        raise FixtureError(where, f"has format version {value.format}; this harness reads {FORMAT}")
    return value


@cache
def _shipped() -> tuple[Price, ...]:
    folder = files("harness.providers").joinpath("prices")
    rows: list[Price] = []
    for name in PRICE_FILES:
        rows += _decode(folder.joinpath(name).read_bytes(), f"harness/providers/prices/{name}").rows
    return tuple(rows)


def load_prices_file(path: Path) -> PricesFile:
    from harness._shared._files import read_checked

    return _decode(read_checked(path, missing_hint="check the path"), str(path))


def parse_price_rows(value: Any, *, where: str) -> tuple[Price, ...]:
    """Rows given as plain values (`harness_capture_config`'s `prices`): a file's path or rows."""
    if isinstance(value, str | Path):
        return load_prices_file(Path(value)).rows
    try:
        return msgspec.convert(list(value), tuple[Price, ...])
    except (TypeError, msgspec.ValidationError) as error:
        raise UsageError(
            f"{where}: prices takes a prices file's path or a list of rows: {error} ({_NEEDS})"
        ) from None


def project_prices(root: Path, paths: Sequence[str | Path] = ()) -> list[Price]:
    """The project's price rows: the files named, else `harness-prices.json` at `root`."""
    named = [Path(path) for path in paths if str(path)]
    named = [path if path.is_absolute() else root / path for path in named]
    if not named and (root / PROJECT_PRICES).is_file():
        named = [root / PROJECT_PRICES]
    return [row for path in named for row in load_prices_file(path).rows]


_lock = threading.RLock()
_overlays: list[tuple[Price, ...]] = []


@contextmanager
def overlay_prices(rows: Sequence[Price]) -> Iterator[None]:
    """The project's rows in force, asked before the shipped ones, until the block ends."""
    layer = tuple(rows)
    with _lock:
        _overlays.append(layer)
    try:
        yield
    finally:
        with _lock:
            _overlays.remove(layer)


def price_rows() -> list[Price]:
    """Every row in force: the project's (latest overlay first), then the shipped ones."""
    with _lock:
        own = [row for layer in reversed(_overlays) for row in layer]
    return [*own, *_shipped()]


class _Draft:
    """A request's prices as the layers fill them in."""

    def __init__(self) -> None:
        self.base: dict[str, float] = {}
        self.writes: dict[str, float] = {}
        self.derived: dict[str, Derived] = {}
        self.sources: list[PriceSource] = []
        self.applied: list[str] = []

    def take(self, row: Price, input_tokens: int) -> None:
        gave: list[str] = []
        if row.complete and not self.base:
            tier = row.tier(input_tokens)
            for name in ("input", "output", "cache_read"):
                value = getattr(tier, name, None) if tier is not None else None
                self.base[name] = value if value is not None else getattr(row, name)
            gave += ["input", "output", "cache_read"]
            if tier is not None:
                self.applied.append(f"the price over {tier.above:,} input tokens")
            if row.weekdays:
                self.applied.append(f"the {'/'.join(row.weekdays)} price")
        tiered = row.tier(input_tokens)
        writes = {**row.cache_write, **(tiered.cache_write if tiered is not None else {})}
        for ttl, price in writes.items():
            if ttl not in self.writes and ttl not in self.derived:
                self.writes[ttl] = price
                gave.append(f"cache_write {ttl}")
        for ttl, rule in row.cache_write_as.items():
            if ttl not in self.writes and ttl not in self.derived:
                self.derived[ttl] = rule
                gave.append(f"cache_write {ttl}")
        if gave:
            self.sources.append(
                PriceSource(
                    source=row.source,
                    gave=tuple(gave),
                    checked_on=row.checked_on.isoformat(),
                    quote=row.quote or None,
                    note=row.note or None,
                )
            )

    def take_registry(
        self, found: _registry.Found, rates: Mapping[str, float], reached: int | None
    ) -> None:
        gave: list[str] = []
        for name in ("input", "output", "cache_read"):
            self.base[name] = rates.get(name, 0.0)
            gave.append(name)
        for ttl, price in rates.items():
            if ttl in ("input", "output", "cache_read", *self.writes, *self.derived):
                continue
            self.writes[ttl] = price
            gave.append(f"cache_write {ttl}")
        if reached is not None:
            self.applied.append(f"the price over {reached:,} input tokens")
        self.sources.append(
            PriceSource(
                source=_registry.REGISTRY,
                gave=tuple(gave),
                version=_registry.version(),
                provider=found.provider,
                model=found.model_id,
                checked_on=_registry.checked_on().isoformat(),
            )
        )

    def quote(self) -> Quote:
        for ttl, rule in self.derived.items():
            base = self.base.get("input") if rule.of == "input" else self.writes.get(rule.of)
            if base is not None:
                self.writes[ttl] = base * rule.times
        return Quote(
            input=self.base["input"],
            output=self.base["output"],
            cache_read=self.base["cache_read"],
            cache_write=dict(self.writes),
            sources=tuple(self.sources),
            applied=tuple(self.applied),
        )


def price_for(
    provider: str,
    model: str | None,
    on: datetime.date | None = None,
    *,
    at: datetime.datetime | None = None,
    input_tokens: int = 0,
) -> Quote | None:
    """The prices of one request to `provider`'s `model` started `at` (else on the day `on` at
    an unknown time, else today) with `input_tokens` in all; None when nothing prices it."""
    day = at.astimezone(datetime.UTC).date() if at is not None else on
    day = day or datetime.datetime.now(datetime.UTC).date()
    draft = _Draft()
    for row in price_rows():
        if row.applies(provider, model, day):
            draft.take(row, input_tokens)
            if draft.base:
                return draft.quote()
    found = _registry.find(provider, model)
    if found is None:
        return None
    if at is not None:
        rates = _registry.rates_at(found, at, input_tokens)
        window = _registry.window_at(found, at) if found.by_time_of_day else None
        if window is not None:
            draft.applied.append(f"the {window} price")
    else:
        rates = _registry.day_rates(found, day, input_tokens)
        if found.by_time_of_day:
            draft.applied.append("the day's highest price (the time of day is not recorded)")
    if "input" not in rates:
        return None
    moment = at or datetime.datetime.combine(day, datetime.time(12), datetime.UTC)
    draft.take_registry(found, rates, _registry.tier_reached(found, moment, input_tokens))
    return draft.quote()
