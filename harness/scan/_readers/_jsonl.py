"""Proxy JSONL: `{url, body, time, response, headers}` lines, the shape `harness lint` reads.

A line is one request: `body` (an object, or JSON text: its bytes as sent), and optionally the
`url` it went to, its `headers`, the `time` it started (epoch seconds or ISO 8601), the provider's
`response` (the usage counters are read from it by the provider's own rules) and a `session`,
`session_id` or `x-session-id` header. A wrapped line is read without decoding its body into
objects (the body's bytes are only digested; the judge reads them again for a pair it must
compare), and the provider whose usage rules read the response is found once per URL. A bare
request body a line is read too (no URL: the body's shape says its provider). Evidence `exact`:
a proxy logs the body it forwarded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

import msgspec

from harness.providers import provider_named
from harness.providers._registry import usage_of
from harness.scan._keys import id_of, seconds
from harness.scan._readers._base import BadRecord, Reader, Unit, body_of, response_counters
from harness.scan._record import Counters, TraceRecord, joined

__all__ = ["JsonlReader"]

_WRAPPED: Final = frozenset({"url", "body", "time", "response", "headers", "method"})
_PROMPT: Final = ("messages", "input", "contents", "system", "tools")
_SESSION_HEADERS: Final = ("x-session-id", "session-id", "x-conversation-id")


class _Line(msgspec.Struct):
    """A wrapped line, its body an object whose members are left as JSON text (the fast path:
    the body is never decoded into objects, only digested)."""

    body: dict[str, msgspec.Raw]
    url: str | None = None
    time: Any = None
    headers: Any = None
    response: Any = None
    method: Any = None
    session: Any = None
    session_id: Any = None
    id: Any = None


_LINE: Final = msgspec.json.Decoder(_Line)
# The provider whose usage rules read a URL's responses, found once per URL in a file (a URL is
# one provider's endpoint); a line without a URL is asked about its body each time.
_PROVIDERS: dict[str, Any] = {}  # URL -> Provider, or None
_UNSEEN: Final = object()


def _headers(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k).lower(): str(v) for k, v in value.items()}
    if isinstance(value, list):
        return {str(p[0]).lower(): str(p[1]) for p in value if isinstance(p, list) and len(p) == 2}
    return {}


class JsonlReader(Reader):
    name: ClassVar[str] = "jsonl"
    describe: ClassVar[str] = "{url, body, time, response, headers} lines, or bare request bodies"

    def claims(self, value: Any) -> bool:
        if not isinstance(value, Mapping):
            return False
        if "body" in value and set(value) - {"session", "session_id", "id"} <= _WRAPPED:
            return True
        return any(key in value for key in _PROMPT) and "model" in value

    def begin(self) -> None:
        _PROVIDERS.clear()  # the providers registered may have changed since the last file

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        if unit.raw is not None:
            fast = _fast(unit, self.name)
            if fast is not None:
                yield fast
                return
        value = unit.value
        if not isinstance(value, Mapping):
            raise BadRecord(f"a JSON {type(value).__name__}, not an object")
        wrapped = "body" in value
        body, raw = body_of(value["body"]) if wrapped else (dict(value), None)
        if body is None:
            raise BadRecord("its body is not a JSON object")
        url = value.get("url") if wrapped and isinstance(value.get("url"), str) else None
        headers = _headers(value.get("headers"))
        provider, found = response_counters(body, url, value.get("response"))
        session = id_of(value.get("session_id")) or id_of(value.get("session"))
        session = session or next((headers[h] for h in _SESSION_HEADERS if h in headers), None)
        time = value.get("time")
        if isinstance(time, Mapping):
            time = time.get("start")
        yield TraceRecord(
            source=unit.where,
            format=self.name,
            ordinal=0,
            session=session,
            request_id=id_of(value.get("id")) or headers.get("x-request-id"),
            time=seconds(time),
            url=url,
            body=body,
            raw=raw,
            evidence="exact",
            provider=provider,
            model=body.get("model") if isinstance(body.get("model"), str) else None,
            counters=found,
            previous_response_id=id_of(body.get("previous_response_id")),
            response_id=_response_id(value.get("response")),
            view=value,
        )


def _response_id(response: Any) -> str | None:
    return id_of(response.get("id")) if isinstance(response, Mapping) else None


def _fast(unit: Unit, name: str) -> TraceRecord | None:
    """A wrapped line read without decoding its body into objects; None when the line is not
    that shape (the general path reads it)."""
    try:
        line = _LINE.decode(unit.raw or b"")
    except (msgspec.DecodeError, RecursionError):
        return None  # a body as text (or none), or not a line of this shape: the general path
    if line.url is None:
        return None  # no URL: the general path (the body's shape says its provider)
    provider, found = _counters(line.body, line.url, line.response)
    headers = _headers(line.headers)
    session = id_of(line.session_id) or id_of(line.session)
    session = session or next((headers[h] for h in _SESSION_HEADERS if h in headers), None)
    time = line.time.get("start") if isinstance(line.time, Mapping) else line.time
    return TraceRecord(
        source=unit.where,
        format=name,
        ordinal=0,
        session=session,
        request_id=id_of(line.id) or headers.get("x-request-id"),
        time=seconds(time),
        url=line.url,
        members=line.body,
        evidence="exact",
        provider=provider,
        counters=found,
        response_id=_response_id(line.response),
    )


def _counters(
    members: dict[str, msgspec.Raw], url: str, response: Any
) -> tuple[str | None, Counters]:
    provider = _PROVIDERS.get(url, _UNSEEN)
    if provider is _UNSEEN:
        body, _ = body_of(joined(members))
        name = response_counters(body, url, None)[0]
        provider = _PROVIDERS[url] = provider_named(name) if name else None
    if provider is None:
        return None, Counters()
    usage = usage_of(provider, response) if response is not None else None
    if usage is None:
        return provider.name, Counters()
    return provider.name, Counters(
        usage.input_tokens, usage.read_tokens, usage.written_tokens, usage.output_tokens
    )
