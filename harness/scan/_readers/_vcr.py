"""vcrpy and pytest-recording cassettes (YAML, or vcrpy's JSON serializer): `interactions`, each
a `request` (`method`, `uri`, `headers`, `body` as sent) and its `response` (`body.string`).

A cassette is one session (a test), its interactions in recorded order (vcrpy keeps no times).
Evidence `exact`: vcrpy stores the request body's bytes. Interactions that are not a model call
(a token fetch, a GET) are no requests to judge and are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import msgspec

from harness.scan._readers._base import BadRecord, Reader, Unit, body_of, response_counters
from harness.scan._record import Evidence, TraceRecord

__all__ = ["VcrReader", "interactions", "response_json"]


def interactions(value: Any) -> list[Any]:
    found = value.get("interactions") if isinstance(value, Mapping) else None
    if not isinstance(found, list):
        raise BadRecord("holds no `interactions` list")
    return found


def response_json(response: Any) -> Any:
    """A recorded response's body as JSON (vcrpy's `body.string`), or None."""
    if not isinstance(response, Mapping):
        return None
    body = response.get("body")
    text = body.get("string") if isinstance(body, Mapping) else body
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        events = []
        for line in lines:
            try:
                events.append(msgspec.json.decode(line))
            except msgspec.DecodeError:
                continue
        return events or None


class VcrReader(Reader):
    name: ClassVar[str] = "vcr"
    describe: ClassVar[str] = "vcrpy / pytest-recording cassettes (YAML)"

    def claims(self, value: Any) -> bool:
        return (
            isinstance(value, Mapping)
            and isinstance(value.get("interactions"), list)
            and not parsed_bodies(value)
        )

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        for number, interaction in enumerate(interactions(unit.value), start=1):
            request = interaction.get("request") if isinstance(interaction, Mapping) else None
            if not isinstance(request, Mapping):
                raise BadRecord(f"interaction {number} has no request")
            text = request.get("body")
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            body, raw = body_of(text)
            if body is None:
                continue  # no JSON body: not a model call
            answer = response_json(interaction["response"])
            yield interaction_record(self.name, unit, number, request, body, answer, "exact", raw)


def interaction_record(
    reader: str,
    unit: Unit,
    number: int,
    request: Mapping[str, Any],
    body: dict[str, Any],
    answer: Any,
    evidence: Evidence,
    raw: bytes | None = None,
) -> TraceRecord:
    """Interaction `number` of a recording (vcrpy's or pydantic-ai's) as a trace record: its
    body, the counters the provider's own parser reads in `answer`, and its URL."""
    url = request.get("uri") if isinstance(request.get("uri"), str) else None
    provider, found = response_counters(body, url, answer)
    return TraceRecord(
        source=f"{unit.where}#{number}",
        format=reader,
        ordinal=0,
        session=unit.where,
        url=url,
        body=body,
        raw=raw,
        evidence=evidence,
        provider=provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        counters=found,
        view=request,
    )


def parsed_bodies(value: Mapping[str, Any]) -> bool:
    """Whether a recording's first interactions hold parsed bodies (pydantic-ai's cassettes)."""
    found = value.get("interactions")
    return isinstance(found, list) and any(
        isinstance(i, Mapping)
        and isinstance(i.get("request"), Mapping)
        and "parsed_body" in i["request"]
        for i in found[:3]
    )
