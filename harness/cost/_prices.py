"""The price pack: list prices per provider and model, as dated rows with their sources.

Prices are data, never constants in code: each row of `harness/providers/prices/*.json` (kind
`harness/prices`, USD per million tokens) names its `providers` and `models` (glob patterns on
the lower-cased model id, as the rules pack's), the date it is `effective_from`, the prices of
`input`, `output`, `cache_read` and `cache_write` per time to live (`{"5m": 6.25, "1h": 10}`;
empty: the provider charges no write fee, so a write is billed as input), and its `source`,
`checked_on` and `conflicts`.

A conversation is priced at the first row that applies to its provider and model and is in
effect on its date (the recording's wall-clock date when known, else today): rows are asked in
order, so a newer row sits above the row it replaces. A project's rows (a negotiated rate) are
asked before the shipped ones: `harness-prices.json` at its root, `--prices FILE` on
`harness cost` and `harness report`, or `harness_capture_config`'s `prices` key (a file or a list
of rows) for the budget marker.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fnmatch import fnmatchcase
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, Final

import msgspec

from harness._shared._errors import FixtureError, UsageError

__all__ = [
    "PRICE_FILES",
    "PROJECT_PRICES",
    "Price",
    "PricesFile",
    "load_prices_file",
    "overlay_prices",
    "parse_price_rows",
    "price_for",
    "price_rows",
    "project_prices",
]

KIND: Final = "harness/prices"
FORMAT: Final = 1
PRICE_FILES: Final = ("anthropic.json", "openai.json", "gemini.json", "deepseek.json")
PROJECT_PRICES: Final = "harness-prices.json"


class Conflict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    claim: str
    source: str


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One price row (see the module doc); prices in USD per million tokens."""

    providers: tuple[str, ...]
    input: float
    output: float
    cache_read: float
    source: str
    checked_on: datetime.date
    effective_from: datetime.date
    models: tuple[str, ...] = ()
    cache_write: dict[str, float] = {}
    conflicts: tuple[Conflict, ...] = ()
    note: str = ""

    def applies(self, provider: str, model: str | None, on: datetime.date) -> bool:
        if provider not in self.providers or self.effective_from > on:
            return False
        if not self.models:
            return True
        name = (model or "").lower()
        return bool(name) and any(fnmatchcase(name, pattern) for pattern in self.models)

    def write(self, ttl: str) -> float | None:
        """The price of a write at `ttl` (its first TTL's price for one it does not name); None
        when the provider charges no write fee (a write is billed as input)."""
        if not self.cache_write:
            return None
        return self.cache_write.get(ttl, next(iter(self.cache_write.values())))


class PricesFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    format: int
    rows: tuple[Price, ...] = ()
    unit: str = "USD per million tokens"


def _decode(data: bytes, where: str) -> PricesFile:
    try:
        value = msgspec.json.decode(data, type=PricesFile)
    except msgspec.ValidationError as error:
        raise FixtureError(
            where,
            f"is not a prices file: {error}",
            "each row needs providers, input, output, cache_read, effective_from, source and"
            " checked_on",
        ) from None
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
            f"{where}: prices takes a prices file's path or a list of rows, each with providers,"
            f" input, output, cache_read, effective_from, source and checked_on ({error})"
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


def price_for(provider: str, model: str | None, on: datetime.date | None = None) -> Price | None:
    """The first row in force for `provider`'s `model` on the date `on` (today by default)."""
    day = on or datetime.datetime.now(datetime.UTC).date()
    return next((row for row in price_rows() if row.applies(provider, model, day)), None)
