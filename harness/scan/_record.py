"""What a reader hands the scan for one request: `TraceRecord`, and the provider's counters.

A reader turns one record of its format (a span, a log line, a cassette exchange) into a
`TraceRecord`: where it came from (`source`, `file:line`), the ids the format gives it (session,
request, deploy), when it started, the request body in a provider's shape where the trace holds
one, how sure that body is (`evidence`), and the cache counters the provider reported.

Evidence (docs/scan.md):
- `exact`: the provider's body as sent, key order kept (a proxy log, a cassette, OpenInference's
  `input.value`, Bedrock's `inputBodyJson`);
- `structural`: a converted or key-sorted body (OTel GenAI parts, Langfuse's call arguments,
  LiteLLM's jsonb, pydantic-ai's sorted `parsed_body`): blocks and order right, bytes not the
  provider's;
- `counters`: no body at all (content capture off, a body moved to S3): only the counters speak.
A body with strings cut by the logger (LiteLLM keeps a head and a tail) is `truncated`: a break
found inside what is left of it is reported with evidence `digest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import msgspec

__all__ = ["EVIDENCE", "Counters", "Evidence", "TraceRecord", "joined"]

Evidence = Literal["exact", "structural", "counters"]
EVIDENCE: Final = ("exact", "structural", "digest", "counters")


class Counters(msgspec.Struct, frozen=True, omit_defaults=True):
    """The provider's token counters for one request, as the trace reported them.

    `input_tokens` is every input token (cache reads and writes included); a format that reports
    uncached input apart (Anthropic's `input_tokens`) is added up by its reader."""

    input_tokens: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    output_tokens: int | None = None

    @property
    def known(self) -> bool:
        return self.input_tokens is not None or self.cache_read is not None


class TraceRecord(msgspec.Struct):
    """One request as a reader found it (see the module doc)."""

    source: str
    format: str
    ordinal: int  # the record's place in its file, 0-based: how the bytes are found again
    session: str | None = None
    request_id: str | None = None
    time: float | None = None  # seconds since the epoch
    deploy: str | None = None
    url: str | None = None
    body: dict[str, Any] | None = None
    raw: bytes | None = None  # the body's own bytes, when the trace holds them as sent
    # the body's top-level members, each its JSON text as sent, in order (a reader that reads
    # the body no further: the digests need no more, and `harness.scan._bytes` joins them again)
    members: dict[str, msgspec.Raw] | None = None
    evidence: Evidence = "counters"
    truncated: bool = False
    provider: str | None = None
    model: str | None = None
    counters: Counters = Counters()
    response_id: str | None = None  # a Responses id a later request may continue
    previous_response_id: str | None = None
    view: Any = None  # the record as --session-key and friends see it
    note: str | None = None  # why the body is missing, when a reader knows


def joined(members: Mapping[str, msgspec.Raw]) -> bytes:
    """A JSON object made of its members' texts, in order (what the cache model decodes is the
    body as sent: the same members, values and order)."""
    encode = msgspec.json.encode
    return (
        b"{" + b",".join(encode(key) + b":" + bytes(value) for key, value in members.items()) + b"}"
    )
