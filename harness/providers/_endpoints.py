"""The providers' endpoints that cache nothing, as data: `harness/providers/non_cache.json`.

Beside their prompt endpoints, the providers answer calls that are not a conversation turn:
counting a request's tokens (Anthropic's `/v1/messages/count_tokens`, OpenAI's
`/responses/input_tokens`, Gemini's `:countTokens`, Bedrock's `/count-tokens`), listing models,
files, batches. A framework may send one before every request (CrewAI counts the
Responses input first); judged as a prompt, it is an opaque body that "changes", and the gate
and `prove_stable` would name it instead of the block that moved. A request to one of these is
recognised here, left out of the gate and of the proof's comparison, and listed as what it is.

Every row names what the endpoint does, its methods and path patterns (`*` within and across
segments, fnmatch's), its `source`, `checked_on` and the `quote` that decides it, as the rules
pack's rows do.
"""

from __future__ import annotations

import datetime
from fnmatch import fnmatchcase
from functools import cache
from importlib.resources import files
from typing import Final
from urllib.parse import urlsplit

import msgspec

from harness._shared._errors import FixtureError

__all__ = ["NonCacheRow", "non_cache_endpoint", "non_cache_rows"]

KIND: Final = "harness/non-cache-endpoints"
FORMAT: Final = 1


class NonCacheRow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An endpoint that caches nothing: what it does, where, and where that is said."""

    what: str  # "token counting", "model listing", "files", "batches"
    provider: str  # a harness provider name, or "any"
    methods: tuple[str, ...]
    paths: tuple[str, ...]
    source: str
    checked_on: datetime.date
    quote: str


class NonCacheFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    format: int
    rows: tuple[NonCacheRow, ...]


@cache
def non_cache_rows() -> tuple[NonCacheRow, ...]:
    where = "harness/providers/non_cache.json"
    data = files("harness.providers").joinpath("non_cache.json").read_bytes()
    try:
        value = msgspec.json.decode(data, type=NonCacheFile)
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise FixtureError(where, f"is not a non-cache endpoints file: {error}") from None
    if value.kind != KIND or value.format != FORMAT:
        raise FixtureError(where, f"holds {value.kind!r} format {value.format}, expected {KIND!r}")
    return value.rows


@cache
def non_cache_endpoint(method: str, url: str) -> str | None:
    """What the endpoint `method url` does when it caches nothing ("token counting"), else None."""
    path = urlsplit(url).path.rstrip("/")
    verb = method.upper()
    for row in non_cache_rows():
        if verb in row.methods and any(fnmatchcase(path, pattern) for pattern in row.paths):
            return row.what
    return None
