"""pydantic-ai's test cassettes: vcrpy YAML written by its `json_body_serializer`, which stores a
JSON body as `parsed_body` (YAML mapping) in place of the bytes.

`yaml.dump` sorts mapping keys by default, so the body's key order is lost (the blocks and list
order are kept): evidence `structural`. A key-order-only drift (a schema whose keys move) is
invisible here; a tool reorder, an edited system prompt or a new setting is not. The cassette is
one session, its interactions in recorded order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from harness.scan._readers._base import BadRecord, Reader, Unit
from harness.scan._readers._vcr import (
    interaction_record,
    interactions,
    parsed_bodies,
    response_json,
)
from harness.scan._record import TraceRecord

__all__ = ["PydanticAIReader"]


class PydanticAIReader(Reader):
    name: ClassVar[str] = "pydantic-ai"
    describe: ClassVar[str] = "pydantic-ai's cassettes (parsed_body, key-sorted YAML)"

    def claims(self, value: Any) -> bool:
        return isinstance(value, Mapping) and parsed_bodies(value)

    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        for number, interaction in enumerate(interactions(unit.value), start=1):
            request = interaction.get("request") if isinstance(interaction, Mapping) else None
            if not isinstance(request, Mapping):
                raise BadRecord(f"interaction {number} has no request")
            body = request.get("parsed_body")
            if not isinstance(body, Mapping):
                continue  # no JSON body: not a model call
            body = dict(body)
            response = interaction.get("response")
            answer = response.get("parsed_body") if isinstance(response, Mapping) else None
            if answer is None:
                answer = response_json(response)
            yield interaction_record(self.name, unit, number, request, body, answer, "structural")
