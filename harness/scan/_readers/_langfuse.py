"""Langfuse generations: the observations API (`GET /api/public/v2/observations`, camelCase,
or its `{"data": [...]}` page), the UI's JSON / JSONL export, and the blob-storage export
(`observations_v2/`, snake_case); one request per observation of type `GENERATION`.

The request is the generation's `input`: what the integration logged of the call's arguments
(the messages, often the tools and settings too, or only the messages): evidence
`structural`, since it is a converted copy and not the provider's body. Settings come from
`modelParameters`, the model from `model`. The counters are `usageDetails`: `input` (the
input not read from or written to the cache: Langfuse's integrations take the cached tokens out
of it) plus `cache_read_input_tokens` / `input_cached_tokens` and
`cache_creation_input_tokens`. The session
is `sessionId` (`session_id`), else the trace (`traceId`); the deploy, when the trace carries
one, is `release` or `version`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

from harness.scan._keys import id_of, seconds
from harness.scan._readers._base import BadRecord, Reader, Unit, counters, provider_url
from harness.scan._record import TraceRecord

__all__ = ["LangfuseReader"]

_READ: Final = ("cache_read_input_tokens", "input_cached_tokens", "cached_tokens", "cache_read")
_WRITE: Final = ("cache_creation_input_tokens", "cache_write_input_tokens", "cache_creation")


def _get(value: Mapping[str, Any], *names: str) -> Any:
    return next((value[n] for n in names if value.get(n) is not None), None)


def _observations(value: Any) -> list[Any]:
    for key in ("data", "observations"):  # an API page; a trace downloaded as JSON
        found = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(found, list):
            return found
    return [value]


class LangfuseReader(Reader):
    name: ClassVar[str] = "langfuse"
    describe: ClassVar[str] = "Langfuse generations (API, UI or blob-storage export)"

    def claims(self, value: Any) -> bool:
        found = _observations(value)
        first = found[0] if found else None
        return (
            isinstance(first, Mapping)
            and str(first.get("type", "")).upper()
            in (
                "GENERATION",
                "SPAN",
                "EVENT",
            )
            and ("traceId" in first or "trace_id" in first)
        )

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        for number, value in enumerate(_observations(unit.value), start=1):
            if not isinstance(value, Mapping):
                raise BadRecord("not a Langfuse observation")
            if str(value.get("type", "")).upper() != "GENERATION":
                continue
            yield self._one(value, unit, number)

    def _one(self, value: Mapping[str, Any], unit: Unit, number: int) -> TraceRecord:
        model = _get(value, "model", "providedModelName", "provided_model_name")
        model = model if isinstance(model, str) else None
        given = value.get("input")
        parameters = _get(value, "modelParameters", "model_parameters")
        body: dict[str, Any] | None = None
        if isinstance(given, list):
            body = {"model": model, "messages": given}
        elif isinstance(given, Mapping) and any(k in given for k in ("messages", "input")):
            body = {"model": model, **given}
        if body is not None and isinstance(parameters, Mapping):
            body = {**body, **{k: v for k, v in parameters.items() if k not in body}}
        usage = _get(value, "usageDetails", "usage_details") or {}
        usage = usage if isinstance(usage, Mapping) else {}
        given_metadata = value.get("metadata")
        metadata: Mapping[str, Any] = given_metadata if isinstance(given_metadata, Mapping) else {}
        provider = metadata.get("ls_provider") or metadata.get("provider")
        trace = id_of(_get(value, "traceId", "trace_id"))
        where = unit.where if number == 1 and unit.offset >= 0 else f"{unit.where}#{number}"
        return TraceRecord(
            source=where,
            format=self.name,
            ordinal=0,
            session=id_of(_get(value, "sessionId", "session_id")) or trace,
            request_id=id_of(value.get("id")),
            time=seconds(_get(value, "startTime", "start_time")),
            deploy=id_of(_get(value, "release", "version")),
            url=provider_url(provider if isinstance(provider, str) else None, body, model),
            body=body,
            evidence="structural" if body is not None else "counters",
            provider=provider if isinstance(provider, str) else None,
            model=model,
            counters=counters(
                uncached=_get(usage, "input", "input_tokens", "promptTokens"),
                read=_get(usage, *_READ),
                write=_get(usage, *_WRITE),
                output=_get(usage, "output", "output_tokens"),
            ),
            view=value,
        )
