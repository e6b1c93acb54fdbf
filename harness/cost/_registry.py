"""List prices from genai-prices (pydantic's registry, which pydantic-ai and Logfire use): its
bundled data only, read, never copied, and never updated over the network.

`harness/providers/prices/genai-prices.json` maps each harness provider to the registry's
(`anthropic`, `aws` for Bedrock, `openai`, `google` for Gemini, ...) and names the TTL the
registry's single `cache_write_mtok` prices (Anthropic's and Bedrock's 5-minute write, OpenAI's
30-minute one); `cache_write_5m_mtok` and `cache_write_1h_mtok` are their own TTLs. The model is
found by the registry's own match rules, so a provider's aliases and dated ids price as the model
(`gpt-5.6` is GPT-5.6 Sol, `claude-sonnet-4-5@20250929` Sonnet 4.5); a `fallback` provider is
asked when the first lacks the model (a bare Claude id on Bedrock: Anthropic's list price).

`rates_at(found, at, input_tokens)` is the price of one request: the registry's price in force at
`at` (its start dates and its time-of-day windows: DeepSeek's peak hours), at the tier the
request's total input tokens reach (every token of a request over 272K on GPT-5.6 is at the long
context rate: genai-prices' `calc_unit_price` decides, as for its own users). A request whose
time of day is unknown is priced at the highest price of its day (`day_rates`): a budget priced
that way can only fail early, never pass on a price the request did not get.

No network, ever: genai-prices fetches only when its `UpdatePrices` is started, which the harness
never does; and the harness reads its own snapshot of the bundled data, not the process-wide one
an application's `UpdatePrices` (Logfire's, say) may have replaced with fetched prices.
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from functools import cache
from importlib import metadata
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec

from harness._shared._errors import FixtureError

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot

__all__ = [
    "REGISTRY",
    "Found",
    "checked_on",
    "day_rates",
    "find",
    "rates_at",
    "tier_reached",
    "version",
    "window_at",
]

REGISTRY: Final = "genai-prices"
FILE: Final = "genai-prices.json"
KIND: Final = "harness/price-registry"
_MTOK: Final = Decimal(1_000_000)
# the registry's price keys and the harness's names; the default write is the mapping's TTL
_KEYS: Final = (
    ("input_mtok", "input"),
    ("output_mtok", "output"),
    ("cache_read_mtok", "cache_read"),
    ("cache_write_5m_mtok", "5m"),
    ("cache_write_1h_mtok", "1h"),
)


class Mapping(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A harness provider's name in the registry, and the TTL of its plain write price."""

    provider: str
    registry: str
    fallback: tuple[str, ...] = ()  # the registry's providers asked when `registry` lacks a model
    write_ttl: str = ""
    source: str = ""
    quote: str = ""
    note: str = ""


class RegistryFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    format: int
    registry: str
    checked_on: datetime.date
    providers: tuple[Mapping, ...]
    note: str = ""


@cache
def _file() -> RegistryFile:
    data = files("harness.providers").joinpath("prices").joinpath(FILE).read_bytes()
    try:
        found = msgspec.json.decode(data, type=RegistryFile)
    except msgspec.DecodeError as error:  # a broken install: the file ships with the package
        raise FixtureError(f"harness/providers/prices/{FILE}", str(error)) from None
    if found.kind != KIND:
        raise FixtureError(f"harness/providers/prices/{FILE}", f"holds {found.kind!r}")
    return found


def checked_on() -> datetime.date:
    """The day the registry's rows were last compared with the providers' pages."""
    return _file().checked_on


@cache
def version() -> str:
    return metadata.version(REGISTRY)


class _Genai(NamedTuple):
    """The bundled data in a snapshot of our own, and the namespace of the types its objects are
    instances of (`TieredPrices`, `calc_unit_price`...): taken from the data itself, so the two
    agree even where genai-prices was imported again (an in-process pytester run restores
    `sys.modules`, and a second import makes classes the first one's objects are not of)."""

    snapshot: DataSnapshot
    types: dict[str, Any]


@cache
def _genai() -> _Genai:
    # never `get_snapshot()`: it returns whatever an `UpdatePrices` in this process last fetched
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    types: dict[str, Any] = type(providers[0]).find_model.__globals__
    return _Genai(DataSnapshot(providers=providers, from_auto_update=False), types)


class Found(NamedTuple):
    """A model the registry prices: its id there, its entry, the TTL of its plain write."""

    model_id: str
    info: Any  # genai_prices.types.ModelInfo
    write_ttl: str
    by_time_of_day: bool
    provider: str  # the registry's provider the entry is from


@cache
def find(provider: str, model: str | None) -> Found | None:
    """The registry's entry for `provider`'s `model` (its aliases and dated ids too); None when
    the registry does not know the provider or the model."""
    mapping = next((m for m in _file().providers if m.provider == provider), None)
    if mapping is None or not model:
        return None
    for registry in (mapping.registry, *mapping.fallback):
        try:
            _, info = _genai().snapshot.find_provider_model(model, None, registry, None)
        except LookupError:
            continue
        prices = info.prices if isinstance(info.prices, list) else []
        windowed = _genai().types["TimeOfDateConstraint"]
        by_time = any(isinstance(p.constraint, windowed) for p in prices)
        return Found(str(info.id), info, mapping.write_ttl, by_time, registry)
    return None


def rates_at(found: Found, at: datetime.datetime, input_tokens: int) -> dict[str, float]:
    """The registry's prices (USD per million tokens) for one request started `at` with
    `input_tokens` in all: `input`, `output`, `cache_read` and a write price per TTL."""
    calc_unit_price = _genai().types["calc_unit_price"]
    prices = found.info.get_prices(at)  # the standard tier: no batch, flex or priority
    keys = (*_KEYS, ("cache_write_mtok", found.write_ttl or "default"))
    rates: dict[str, float] = {}
    for key, name in keys:
        value = getattr(prices, key, None)
        if value is None:
            continue
        price = float(calc_unit_price(value, _MTOK, input_tokens, int(_MTOK)))
        if math.isfinite(price) and price >= 0:  # genai-prices validates too; never trust blindly
            rates.setdefault(name, price)
    return rates


def _windows(found: Found) -> list[datetime.time]:
    windowed = _genai().types["TimeOfDateConstraint"]
    prices = found.info.prices if isinstance(found.info.prices, list) else []
    return [p.constraint.start_time for p in prices if isinstance(p.constraint, windowed)]


def day_rates(found: Found, day: datetime.date, input_tokens: int) -> dict[str, float]:
    """A request on `day` at an unknown time: the day's highest price (by the input price)."""
    midnight = datetime.datetime.combine(day, datetime.time(0), datetime.UTC)
    moments = [midnight]
    for start in _windows(found):
        moment = datetime.datetime.combine(day, start.replace(tzinfo=None), datetime.UTC)
        if start.tzinfo is not None and start.utcoffset():
            moment -= start.utcoffset() or datetime.timedelta()
        moments.append(moment)
    options = [rates_at(found, moment, input_tokens) for moment in moments]
    return max(options, key=lambda rates: rates.get("input", 0.0))


def tier_reached(found: Found, at: datetime.datetime, input_tokens: int) -> int | None:
    """The threshold of the highest tier `input_tokens` reach on any price; None: the base."""
    tiered = _genai().types["TieredPrices"]
    prices = found.info.get_prices(at)
    starts = [
        tier.start
        for key, _ in (*_KEYS, ("cache_write_mtok", ""))
        if isinstance(value := getattr(prices, key, None), tiered)
        for tier in value.tiers
        if input_tokens > tier.start
    ]
    return max(starts) if starts else None


def window_at(found: Found, at: datetime.datetime) -> str | None:
    """The registry's time-of-day window whose price applies at `at` ("01:00-04:00 UTC"), or
    None when the price in force is not a windowed one."""
    windowed = _genai().types["TimeOfDateConstraint"]
    prices = found.info.prices if isinstance(found.info.prices, list) else []
    for price in reversed(prices):  # genai-prices: the last active price wins
        constraint = price.constraint
        if constraint is None or constraint.active(at):
            if isinstance(constraint, windowed):
                start, end = constraint.start_time, constraint.end_time
                return f"{start:%H:%M}-{end:%H:%M} UTC"
            return None
    return None
