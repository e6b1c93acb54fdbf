"""OpenTelemetry GenAI spans (the `gen_ai.*` semantic conventions), in OTLP JSON or one span a
record: one request per inference span (`gen_ai.operation.name` `chat`, `text_completion` or
`generate_content`, or any span with `gen_ai.request.model`); other spans are skipped.

Content is opt-in and off by default. Where it was captured, the request is rebuilt from the
conventions' parts form: `gen_ai.system_instructions`, `gen_ai.tool.definitions` and
`gen_ai.input.messages` (span attributes, or the `gen_ai.client.inference.operation.details`
event's), or the older per-message events (`gen_ai.system.message`, `gen_ai.user.message`,
...). That is a converted body, not the provider's: evidence `structural` (blocks and order
right; key order and the provider's exact bytes unknown). Without content the span is
counters-only: `gen_ai.usage.input_tokens` (cache reads and writes included, as the conventions
say), `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens` (and
the older `gen_ai.usage.prompt_tokens`, `..._input_tokens.cached`).

The session is `gen_ai.conversation.id`, else `session.id`, else the trace; the deploy is the
resource's `service.version` (or a commit: `vcs.ref.head.revision`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

import msgspec

from harness.scan._keys import id_of
from harness.scan._readers._base import Reader, Unit, counters, provider_url
from harness.scan._readers._otlp import Span, spans
from harness.scan._record import TraceRecord

__all__ = ["DEPLOY_KEYS", "OtelReader", "deploy_of"]

_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content", "completion"})
DEPLOY_KEYS: Final = ("service.version", "vcs.ref.head.revision", "vcs.revision", "git.commit.sha")
_DETAILS: Final = "gen_ai.client.inference.operation.details"
_ROLES: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def deploy_of(span: Span) -> str | None:
    for key in DEPLOY_KEYS:
        found = id_of(span.resource.get(key)) or id_of(span.attributes.get(key))
        if found:
            return found
    return None


def _json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    return value


class OtelReader(Reader):
    name: ClassVar[str] = "otel"
    describe: ClassVar[str] = "OpenTelemetry GenAI spans (gen_ai.*), OTLP JSON or a span a line"

    def claims(self, value: Any) -> bool:
        return any(_inference(span) for span in spans(value))

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        for number, span in enumerate(spans(unit.value), start=1):
            if _inference(span):
                yield self._one(span, unit, number)

    def _one(self, span: Span, unit: Unit, number: int) -> TraceRecord:
        a = span.attributes
        model = id_of(a.get("gen_ai.request.model")) or id_of(a.get("gen_ai.response.model"))
        provider = id_of(a.get("gen_ai.provider.name")) or id_of(a.get("gen_ai.system"))
        body = _body(span, provider, model)
        return TraceRecord(
            source=unit.where if unit.offset >= 0 and number == 1 else f"{unit.where}#{number}",
            format=self.name,
            ordinal=0,
            session=id_of(a.get("gen_ai.conversation.id"))
            or id_of(a.get("session.id"))
            or span.trace_id,
            request_id=id_of(a.get("gen_ai.response.id")) or span.span_id,
            time=span.start,
            deploy=deploy_of(span),
            url=provider_url(provider, body, model),
            body=body,
            evidence="structural" if body is not None else "counters",
            provider=provider,
            model=model,
            counters=counters(
                total=a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens")),
                read=a.get(
                    "gen_ai.usage.cache_read.input_tokens",
                    a.get(
                        "gen_ai.usage.input_tokens.cached",
                        a.get("gen_ai.usage.cache_read_input_tokens"),
                    ),
                ),
                write=a.get(
                    "gen_ai.usage.cache_creation.input_tokens",
                    a.get("gen_ai.usage.input_tokens.cache_write"),
                ),
                output=a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens")),
            ),
            view=span.view,
        )


def _inference(span: Span) -> bool:
    operation = span.attributes.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return operation in _OPERATIONS
    return "gen_ai.request.model" in span.attributes


def _body(span: Span, provider: str | None, model: str | None) -> dict[str, Any] | None:
    """The request rebuilt from the span's captured content (see the module doc); None when
    content capture was off."""
    found = dict(span.attributes)
    for name, attributes, _ in span.events:
        if name == _DETAILS:
            found.update(attributes)
    messages = _json(found.get("gen_ai.input.messages"))
    system = _json(found.get("gen_ai.system_instructions"))
    tools = _json(found.get("gen_ai.tool.definitions"))
    if not isinstance(messages, list):
        messages = _legacy(span)
        if messages and messages[0].get("role") == "system" and system is None:
            system = messages.pop(0).get("content")
    if not isinstance(messages, list):
        return None
    turns = [_turn(m) for m in messages if isinstance(m, Mapping)]
    anthropic = (provider or "").lower() in ("anthropic", "aws.bedrock", "claude")
    body: dict[str, Any] = {"model": model}
    if isinstance(tools, list) and tools:
        body["tools"] = tools
    if system is not None:
        if anthropic:
            body["system"] = system
        else:
            turns.insert(0, {"role": "system", "content": system})
    body["messages"] = turns
    return body


def _turn(message: Mapping[str, Any]) -> dict[str, Any]:
    parts = message.get("parts", message.get("content"))
    return {"role": message.get("role"), "content": parts}


def _legacy(span: Span) -> list[dict[str, Any]] | None:
    """Messages from the older per-message events (their `content` attribute or body)."""
    found: list[dict[str, Any]] = []
    for name, attributes, body in span.events:
        role = _ROLES.get(name)
        if role is None:
            continue
        content = attributes.get("content")
        if content is None and isinstance(body, Mapping):
            content = body.get("content")
        found.append({"role": role, "content": _json(content) if content is not None else ""})
    return found or None
