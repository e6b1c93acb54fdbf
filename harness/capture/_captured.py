"""One request a capture transport saw: its exact bytes, and its provider's cache split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from harness._shared._views import CacheView, RequestSplit
from harness.providers import split_request
from harness.providers._endpoints import non_cache_endpoint
from harness.providers._opaque import opaque_split, prompt_like


@dataclass
class Captured:
    """One request the transport saw, with its exact body bytes and its cache split."""

    number: int
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    split: RequestSplit | None
    status: int | None = None
    source: str = ""  # "cassette", "upstream" or "proof"
    sent_ns: int = 0  # when it reached the transport (the session's monotonic clock)

    @property
    def view(self) -> CacheView | None:
        return None if self.split is None else self.split.view

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def non_cache(self) -> str | None:
        """What this request's endpoint does when it caches nothing ("token counting"): such a
        request is no turn of a conversation (`harness.providers._endpoints`)."""
        return non_cache_endpoint(self.method, self.url)

    @property
    def provider(self) -> str | None:
        return None if self.split is None else self.split.provider

    def json(self) -> Any:
        try:
            return msgspec.json.decode(self.body)
        except msgspec.DecodeError:
            return None

    def continues_stored(self) -> bool:
        """Whether the provider's server holds its earlier turns (OpenAI's stored response or
        conversation, Anthropic's message thread: `RequestSplit.held`)."""
        return self.split is not None and bool(self.split.held)


def split_exchange(
    method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
) -> RequestSplit | None:
    """The cache split of a POST as sent (None for another method, no body, or an endpoint that
    caches nothing: token counting, files...): its provider's, or, when no provider claims it,
    the whole body as opaque bytes (`_opaque`), still gated."""
    if method.upper() != "POST" or not body or non_cache_endpoint(method, url) is not None:
        return None
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return opaque_split(body) if prompt_like(headers) else None
    split = split_request(decoded, url=url, headers=headers) if isinstance(decoded, dict) else None
    if split is None and prompt_like(headers):
        return opaque_split(body)
    return split
