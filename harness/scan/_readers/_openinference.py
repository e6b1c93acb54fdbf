"""OpenInference spans (Arize Phoenix and the OpenInference instrumentations), in OTLP JSON or
one span a record: one request per `LLM` span (`openinference.span.kind`).

`input.value` holds the call's input: with `input.mime_type` `application/json` and the shape of
a provider request (the OpenAI and Anthropic instrumentations log the request's body), it is the
request, evidence `exact`. Otherwise the request is rebuilt from `llm.input_messages.N.message.*`
and `llm.tools.N.tool.json_schema`: evidence `structural`. The model is `llm.model_name`, the
provider `llm.provider` (`llm.system`); the counters are `llm.token_count.prompt` (every input
token), `llm.token_count.prompt_details.cache_read` and `...cache_write`,
`llm.token_count.completion`. The session is `session.id`, else the trace; the deploy the
resource's `service.version`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Final

import msgspec

from harness.scan._keys import id_of
from harness.scan._readers._base import Reader, Unit, body_of, counters, provider_url
from harness.scan._readers._otel import deploy_of
from harness.scan._readers._otlp import Span, spans
from harness.scan._record import TraceRecord

__all__ = ["OpenInferenceReader"]

_PROMPT: Final = ("messages", "input", "contents", "system", "tools")


class OpenInferenceReader(Reader):
    name: ClassVar[str] = "openinference"
    describe: ClassVar[str] = "OpenInference spans (input.value, llm.*)"

    def claims(self, value: Any) -> bool:
        return any("openinference.span.kind" in span.attributes for span in spans(value))

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        for number, span in enumerate(spans(unit.value), start=1):
            if str(span.attributes.get("openinference.span.kind", "")).upper() == "LLM":
                yield self._one(span, unit, number)

    def _one(self, span: Span, unit: Unit, number: int) -> TraceRecord:
        a = span.attributes
        model = id_of(a.get("llm.model_name"))
        provider = id_of(a.get("llm.provider")) or id_of(a.get("llm.system"))
        body, raw = body_of(a.get("input.value"))
        exact = body is not None and any(key in body for key in _PROMPT)
        if not exact:
            body, raw = _rebuilt(a, model), None
        return TraceRecord(
            source=unit.where if unit.offset >= 0 and number == 1 else f"{unit.where}#{number}",
            format=self.name,
            ordinal=0,
            session=id_of(a.get("session.id")) or span.trace_id,
            request_id=span.span_id,
            time=span.start,
            deploy=deploy_of(span),
            url=provider_url(provider, body, model),
            body=body,
            raw=raw if exact else None,
            evidence="exact" if exact else ("structural" if body is not None else "counters"),
            provider=provider,
            model=model,
            counters=counters(
                total=a.get("llm.token_count.prompt"),
                read=a.get("llm.token_count.prompt_details.cache_read"),
                write=a.get("llm.token_count.prompt_details.cache_write"),
                output=a.get("llm.token_count.completion"),
            ),
            view=span.view,
        )


def _listed(a: dict[str, Any], name: str, inner: str) -> list[dict[str, Any]]:
    """`llm.input_messages` (or `llm.tools`) given as a list of objects (nested JSON exports)
    rather than flattened to `llm.input_messages.0.message.role`."""
    found = a.get(name)
    if not isinstance(found, list):
        return []
    return [item.get(inner, item) for item in found if isinstance(item, dict)]


def _rebuilt(a: dict[str, Any], model: str | None) -> dict[str, Any] | None:
    messages: list[dict[str, Any]] = [
        {"role": m.get("role"), "content": m.get("content", "")}
        for m in _listed(a, "llm.input_messages", "message")
    ]
    index = 0
    while f"llm.input_messages.{index}.message.role" in a:
        prefix = f"llm.input_messages.{index}.message."
        messages.append({"role": a[prefix + "role"], "content": a.get(prefix + "content", "")})
        index += 1
    if not messages:
        return None
    tools: list[Any] = [t.get("json_schema", t) for t in _listed(a, "llm.tools", "tool")]
    index = 0
    while f"llm.tools.{index}.tool.json_schema" in a:
        schema = a[f"llm.tools.{index}.tool.json_schema"]
        try:
            tools.append(msgspec.json.decode(schema) if isinstance(schema, str) else schema)
        except msgspec.DecodeError:
            tools.append(schema)
        index += 1
    body: dict[str, Any] = {"model": model}
    if tools:
        body["tools"] = tools
    body["messages"] = messages
    return body
