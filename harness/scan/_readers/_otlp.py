"""OpenTelemetry spans as the readers see them, whatever file they came in.

`spans(value)` yields one flat `Span` per span of:
- an OTLP JSON document (`{"resourceSpans": [{"resource", "scopeSpans": [{"spans": [...]}]}]}`,
  what the collector's file exporter writes, one document a line, and what OTLP/HTTP carries),
  attributes decoded from their typed form (`{"key", "value": {"stringValue": ...}}`);
- one span a record with its attributes as an object (Phoenix's and most exporters' JSON):
  nested attribute objects are flattened to dotted names (`{"llm": {"model_name": ...}}` is
  `llm.model_name`).
A span's `attributes` are the span's own; `resource` the resource's (`service.version`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from harness.scan._keys import id_of, seconds

__all__ = ["Span", "spans"]


class Span(NamedTuple):
    trace_id: str | None
    span_id: str | None
    name: str
    start: float | None
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any], Any]]  # name, attributes, body
    resource: dict[str, Any]
    view: dict[str, Any]  # what --session-key and friends look into


def spans(value: Any) -> Iterator[Span]:
    if isinstance(value, Mapping) and isinstance(value.get("resourceSpans"), list):
        for resource_spans in value["resourceSpans"]:
            if not isinstance(resource_spans, Mapping):
                continue
            resource = resource_spans.get("resource")
            found = _typed(resource.get("attributes")) if isinstance(resource, Mapping) else {}
            scopes = resource_spans.get("scopeSpans") or resource_spans.get("scope_spans") or []
            for scope in scopes:
                inner = scope.get("spans") if isinstance(scope, Mapping) else None
                for span in inner if isinstance(inner, list) else []:
                    if isinstance(span, Mapping):
                        yield _span(span, found)
    elif isinstance(value, Mapping):
        yield _span(value, {})


def _span(span: Mapping[str, Any], resource: dict[str, Any]) -> Span:
    given = span.get("context")
    context: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    attributes = _attributes(span.get("attributes"))
    own_resource = span.get("resource")
    if isinstance(own_resource, Mapping):
        resource = {**resource, **_attributes(own_resource.get("attributes", own_resource))}
    events = []
    for event in span.get("events") or []:
        if isinstance(event, Mapping):
            events.append(
                (
                    str(event.get("name", "")),
                    _attributes(event.get("attributes")),
                    event.get("body"),
                )
            )
    start = (
        span.get("startTimeUnixNano")
        or span.get("start_time_unix_nano")
        or span.get("start_time")
        or span.get("startTime")
    )
    view = {**dict(span), "attributes": attributes, "resource": resource}
    return Span(
        id_of(span.get("traceId") or span.get("trace_id") or context.get("trace_id")),
        id_of(span.get("spanId") or span.get("span_id") or context.get("span_id")),
        str(span.get("name", "")),
        seconds(start),
        attributes,
        events,
        resource,
        view,
    )


def _attributes(value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return _typed(value)
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        _flatten(value, "", flat)
        return flat
    return {}


def _flatten(value: Mapping[str, Any], prefix: str, into: dict[str, Any]) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            _flatten(item, name + ".", into)
        else:
            into[name] = item


def _typed(value: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in value if isinstance(value, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            found[item["key"]] = _value(item.get("value"))
    return found


def _value(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "arrayValue" in value:
        array = value["arrayValue"]
        items = array.get("values", []) if isinstance(array, Mapping) else []
        return [_value(item) for item in items]
    if "kvlistValue" in value:
        kv = value["kvlistValue"]
        return _typed(kv.get("values", [])) if isinstance(kv, Mapping) else {}
    return None
