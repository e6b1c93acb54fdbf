"""One request a capture transport saw: its exact bytes, and its provider's cache split.

A conversation's requests repeat everything before them. So that a session of thousands of turns
holds each message once, not once per request, `Bodies` decodes each body once and rebuilds it
from the previous request to the same endpoint plus what it adds (`harness.capture._edits`),
sharing every unchanged part; a `Captured` whose value encodes to exactly the bytes sent holds
that value instead of the bytes, and gives the bytes back on demand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from harness._shared._views import CacheView, RequestSplit
from harness.capture._cassette import HttpRequest, request_record
from harness.capture._edits import apply_edits, edits_between
from harness.providers import split_request
from harness.providers._endpoints import non_cache_endpoint
from harness.providers._opaque import opaque_split, prompt_like

_encode = msgspec.json.Encoder().encode
_NOT_HELD: Final[Any] = object()


class Captured:
    """One request the transport saw, with its exact body bytes and its cache split."""

    def __init__(
        self,
        number: int,
        method: str,
        url: str,
        headers: tuple[tuple[str, str], ...],
        body: bytes,
        split: RequestSplit | None,
        status: int | None = None,
        source: str = "",  # "cassette", "upstream" or "proof"
        sent_ns: int = 0,  # when it reached the transport (the session's monotonic clock)
    ) -> None:
        self.number = number
        self.method = method
        self.url = url
        self.headers = headers
        self.split = split
        self.status = status
        self.source = source
        self.sent_ns = sent_ns
        self._body: bytes | None = body
        self._value: Any = _NOT_HELD

    def __repr__(self) -> str:
        return f"Captured({self.number}, {self.method} {self.url}, {self.status}, {self.source!r})"

    @property
    def body(self) -> bytes:
        """The exact bytes sent."""
        return _encode(self._value) if self._body is None else self._body

    def hold(self, value: Any) -> None:
        """Keep the body as `value`, which encodes to exactly the bytes sent (and shares what
        it has in common with the requests before it), rather than as bytes."""
        self._value, self._body = value, None

    @property
    def held(self) -> Any:
        """The value held for the body (`hold`), or `msgspec.UNSET` when the bytes are kept."""
        return msgspec.UNSET if self._body is not None else self._value

    def stored(self) -> HttpRequest:
        """The request as a cassette stores it (not yet redacted)."""
        held = self.held
        body = self.body if held is msgspec.UNSET else b""
        return request_record(self.method, self.url, self.headers, body, held)

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
        """The body decoded (shared with other requests when held: read it, never change it)."""
        if self._body is None:
            return self._value
        try:
            return msgspec.json.decode(self._body)
        except msgspec.DecodeError:
            return None

    def continues_stored(self) -> bool:
        """Whether the provider's server holds its earlier turns (OpenAI's stored response or
        conversation, Anthropic's message thread: `RequestSplit.held`)."""
        return self.split is not None and bool(self.split.held)


class Bodies:
    """A session's request bodies decoded once each, every one rebuilt from the latest body
    sent to the same endpoint so that they share what they have in common (see the module
    doc)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, str], Any] = {}

    def captured(
        self, number: int, method: str, url: str, headers: tuple[tuple[str, str], ...], body: bytes
    ) -> Captured:
        """The request as captured: split once, holding its decoded body when that encodes to
        exactly the bytes sent (after the split, which must change nothing)."""
        decoded, exact = self.decoded(method, url, body)
        captured = Captured(
            number, method, url, headers, body, split_exchange(method, url, headers, body, decoded)
        )
        if exact and _encode(decoded) == body:
            captured.hold(decoded)
        return captured

    def decoded(self, method: str, url: str, body: bytes) -> tuple[Any, bool]:
        """`body` as a JSON value (None when it is not JSON) and whether that value encodes to
        exactly `body` (then it may stand for the bytes)."""
        if not body:
            return None, False
        try:
            value = msgspec.json.decode(body)
        except (msgspec.DecodeError, RecursionError):
            return None, False
        key = (method.upper(), url)
        previous = self._latest.get(key)
        if isinstance(previous, dict) and isinstance(value, dict):
            shared = apply_edits(previous, edits_between(previous, value))
            if _encode(shared) == body:
                self._latest[key] = shared
                return shared, True
        self._latest[key] = value
        return value, _encode(value) == body


def split_exchange(
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    decoded: Any = _NOT_HELD,
    *,
    presplit: Any = _NOT_HELD,
) -> RequestSplit | None:
    """The cache split of a POST as sent (None for another method, no body, or an endpoint that
    caches nothing: token counting, files...): its provider's, or, when no provider claims it,
    the whole body as opaque bytes (`_opaque`), still gated. `decoded` is the body already
    decoded, when the caller has it (None: it is not JSON); then `body` may be left empty when
    `decoded` encodes to exactly the bytes. `presplit` is `split_request(decoded, url=url,
    headers=headers)` when the caller made it already (`harness check` splits each recorded
    request once for the audit and the rules)."""
    if method.upper() != "POST" or non_cache_endpoint(method, url) is not None:
        return None
    if decoded is _NOT_HELD:
        if not body:
            return None
        try:
            decoded = msgspec.json.decode(body)
        except msgspec.DecodeError:
            decoded = None
    elif not body and decoded is None:
        return None  # no body at all
    if decoded is None:
        return opaque_split(body) if prompt_like(headers) else None
    split = None
    if isinstance(decoded, dict):
        made = presplit is not _NOT_HELD
        split = presplit if made else split_request(decoded, url=url, headers=headers)
    if split is None and prompt_like(headers):
        return opaque_split(body or _encode(decoded))  # only an opaque split reads the bytes
    return split
