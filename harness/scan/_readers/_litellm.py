"""LiteLLM proxy spend logs (`LiteLLM_SpendLogs` rows: the UI's export, `/spend/logs`, a
database dump): one request a row.

The request is `proxy_server_request` (the body the proxy received), stored only with
`store_prompts_in_spend_logs`; without it the row is counters-only. LiteLLM keeps it as jsonb
(key order lost: evidence `structural`) and cuts long strings to a head (35%) and a tail (65%)
around a `litellm_truncated` note: such a body is `truncated`, and a break seen only in what is
left of a cut string has evidence `digest`. The counters are `prompt_tokens` and
`completion_tokens`, with the provider's cache fields from `metadata.usage_object` (LiteLLM's own
`cache_hit` is its response cache, not the provider's prompt cache, and is ignored). The
session is `session_id` (else `metadata.spend_logs_metadata.session_id`), the request id
`request_id`; `metadata.spend_logs_metadata` holds a project's own keys (a deploy).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

import msgspec

from harness.scan._keys import dig, id_of, seconds
from harness.scan._readers._base import BadRecord, Reader, Unit, body_of, counters, provider_url
from harness.scan._record import TraceRecord

__all__ = ["LiteLLMReader"]

_CUT: Final = "litellm_truncated"


def _object(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    return value


class LiteLLMReader(Reader):
    name: ClassVar[str] = "litellm"
    describe: ClassVar[str] = "LiteLLM proxy spend logs (LiteLLM_SpendLogs rows)"

    def claims(self, value: Any) -> bool:
        return (
            isinstance(value, Mapping)
            and "request_id" in value
            and "call_type" in value
            and ("spend" in value or "proxy_server_request" in value)
        )

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        value = unit.value
        if not isinstance(value, Mapping):
            raise BadRecord("not a LiteLLM spend log row")
        body, _ = body_of(_object(value.get("proxy_server_request")))
        if body is not None:
            body.pop("metadata", None)  # the proxy's own field, not sent upstream
        metadata = _object(value.get("metadata"))
        metadata = metadata if isinstance(metadata, Mapping) else {}
        usage = metadata.get("usage_object")
        usage = usage if isinstance(usage, Mapping) else {}
        model = value.get("model") if isinstance(value.get("model"), str) else None
        provider = value.get("custom_llm_provider")
        provider = provider if isinstance(provider, str) else None
        read = usage.get("cache_read_input_tokens") or dig(
            usage, "prompt_tokens_details.cached_tokens"
        )
        session = id_of(value.get("session_id")) or id_of(
            dig(metadata, "spend_logs_metadata.session_id")
        )
        yield TraceRecord(
            source=unit.where,
            format=self.name,
            ordinal=0,
            session=session,
            request_id=id_of(value.get("request_id")),
            time=seconds(value.get("startTime")),
            url=provider_url(provider, body, model),
            body=body,
            evidence="structural" if body is not None else "counters",
            truncated=body is not None and _CUT in msgspec.json.encode(body).decode(),
            provider=provider,
            model=model,
            counters=counters(
                total=value.get("prompt_tokens"),
                read=read,
                write=usage.get("cache_creation_input_tokens"),
                output=value.get("completion_tokens"),
            ),
            view={**value, "metadata": metadata},
        )
