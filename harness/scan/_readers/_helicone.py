"""Helicone request exports (`npx @helicone/export --include-body`, JSON or JSONL; the REST
API's rows): one request a row.

The request is `request_body` (the body Helicone forwarded: evidence `exact`), sent to
`target_url` / `request_path` where given, by `provider` / `model`; the counters are
`prompt_tokens`, `prompt_cache_read_tokens`, `prompt_cache_write_tokens` and
`completion_tokens` (else the response body's own usage). The session is the
`Helicone-Session-Id` property (Helicone's sessions), the custom properties are under
`properties` (or `request_properties`), the request id `request_id`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

from harness.scan._keys import id_of, seconds
from harness.scan._readers._base import (
    BadRecord,
    Reader,
    Unit,
    body_of,
    counters,
    provider_url,
    response_counters,
)
from harness.scan._record import Counters, TraceRecord

__all__ = ["HeliconeReader"]

_SESSION: Final = ("Helicone-Session-Id", "helicone-session-id", "session_id", "sessionId")


def _properties(value: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("properties", "request_properties"):
        found = value.get(key)
        if isinstance(found, Mapping):
            return found
    return {}


class HeliconeReader(Reader):
    name: ClassVar[str] = "helicone"
    describe: ClassVar[str] = "Helicone request exports (request_body)"

    def claims(self, value: Any) -> bool:
        return isinstance(value, Mapping) and (
            "request_body" in value or ("request_id" in value and "response_body" in value)
        )

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        value = unit.value
        if not isinstance(value, Mapping):
            raise BadRecord("not a Helicone request row")
        body, raw = body_of(value.get("request_body"))
        model = value.get("model") or value.get("request_model")
        model = model if isinstance(model, str) else None
        url = value.get("target_url") if isinstance(value.get("target_url"), str) else None
        url = url or provider_url(value.get("provider"), body, model)
        found = counters(
            total=value.get("prompt_tokens"),
            read=value.get("prompt_cache_read_tokens"),
            write=value.get("prompt_cache_write_tokens"),
            output=value.get("completion_tokens"),
        )
        provider = value.get("provider") if isinstance(value.get("provider"), str) else None
        if not found.known and body is not None:
            answer, _ = body_of(value.get("response_body"))
            provider, found = response_counters(body, url, answer)
        properties = _properties(value)
        yield TraceRecord(
            source=unit.where,
            format=self.name,
            ordinal=0,
            session=next((id_of(properties.get(k)) for k in _SESSION if properties.get(k)), None),
            request_id=id_of(value.get("request_id")),
            time=seconds(value.get("request_created_at") or value.get("created_at")),
            url=url,
            body=body,
            raw=raw,
            evidence="exact" if body is not None else "counters",
            provider=provider,
            model=model or (body or {}).get("model"),
            counters=found if isinstance(found, Counters) else Counters(),
            view=value,
        )
