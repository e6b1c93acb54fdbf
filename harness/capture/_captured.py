"""One request a capture transport saw: its exact bytes, and its provider's cache split."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from harness._shared._views import CacheView, RequestSplit
from harness.providers import split_request
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
    """The cache split of a POST as sent (None for another method or no body): its provider's,
    or, when no provider claims it, the whole body as opaque bytes (`_opaque`), still gated."""
    if method.upper() != "POST" or not body:
        return None
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return opaque_split(body) if prompt_like(headers) else None
    split = split_request(decoded, url=url, headers=headers) if isinstance(decoded, dict) else None
    if split is None and prompt_like(headers):
        return opaque_split(body)
    return split
