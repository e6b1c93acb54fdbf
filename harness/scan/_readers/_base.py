"""What a trace reader is, and what every reader shares.

A `Reader` is a registered part, one module per format (as vcrpy's serializers are): a `name`
(what `--from` takes), `claims(value)` (whether a decoded unit of a file looks like its format:
the first readable unit of a file decides the file's reader when `--from` is not given), and
`read(unit)`, which yields a `TraceRecord` per request the unit holds (a line may hold one, an
OTLP document many, a span none: a span that is no model call is not a request).

A `Unit` is what the file layer (`harness.scan._sources`) hands a reader: one decoded value (a
JSONL line, a JSON document or one element of a JSON array, a YAML document, a Parquet row),
where it is (`file:line`), and, for a line, its byte span in the decompressed stream (how its
bytes are found again when the judge needs them). A value a reader cannot read raises
`BadRecord`: the scan counts it, names it in the summary, and goes on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

import msgspec

from harness.providers import provider_for
from harness.providers._registry import usage_of
from harness.scan._record import Counters, TraceRecord

__all__ = [
    "BadRecord",
    "Reader",
    "Unit",
    "body_of",
    "counters",
    "integer",
    "provider_url",
    "response_counters",
]


class Unit:
    """One value of a file and where it is (see the module doc). A line is decoded when its
    `value` is first asked for (a reader with a faster way to its fields reads `raw`); a line
    that is not JSON raises `BadRecord` then."""

    __slots__ = ("_value", "length", "offset", "raw", "where")

    def __init__(
        self, value: Any, where: str, offset: int = -1, length: int = 0, raw: bytes | None = None
    ) -> None:
        self._value = value
        self.where = where
        self.offset = offset  # the line's first byte in the decompressed stream; -1: not a line
        self.length = length
        self.raw = raw  # the line's bytes, for a line

    @classmethod
    def line(cls, raw: bytes, where: str, offset: int) -> Unit:
        return cls(_UNDECODED, where, offset, len(raw), raw)

    @property
    def value(self) -> Any:
        if self._value is _UNDECODED:
            try:
                self._value = _decode(self.raw or b"")
            except (msgspec.DecodeError, RecursionError) as error:
                raise BadRecord(f"not JSON ({error})") from None
        return self._value


_UNDECODED: Final = object()
_decode = msgspec.json.Decoder().decode


class BadRecord(Exception):
    """A unit its reader cannot read: counted and named, never fatal."""


class Reader(ABC):
    """A trace format (see the module doc). Subclass it and register an instance with
    `harness.scan._readers.register_reader`."""

    name: ClassVar[str]
    describe: ClassVar[str] = ""

    @abstractmethod
    def claims(self, value: Any) -> bool:
        """Whether a decoded unit looks like this format."""

    @abstractmethod
    def read(self, unit: Unit) -> Iterator[TraceRecord]:
        """A record per request the unit holds; `BadRecord` when it cannot be read."""

    def begin(self) -> None:  # noqa: B027 - an optional part: most readers keep nothing
        """A file is about to be read: forget what was learnt from another (a reader may keep
        what it learns within a file, such as which provider a URL belongs to)."""


def integer(value: Any) -> int | None:
    """A token count: an int (or an integral float or numeric string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def counters(
    *,
    total: Any = None,
    uncached: Any = None,
    read: Any = None,
    write: Any = None,
    output: Any = None,
) -> Counters:
    """Counters from what a format reports: `total` input tokens (reads and writes included), or
    `uncached` input (Anthropic's `input_tokens`: reads and writes apart) to add them to."""
    read_n, write_n = integer(read), integer(write)
    total_n = integer(total)
    if total_n is None and integer(uncached) is not None:
        total_n = (integer(uncached) or 0) + (read_n or 0) + (write_n or 0)
    return Counters(total_n, read_n, write_n, integer(output))


def body_of(value: Any) -> tuple[dict[str, Any] | None, bytes | None]:
    """A request body given as an object or as JSON text: the object, and its bytes as sent
    when they are (text); (None, None) when it is neither."""
    if isinstance(value, Mapping):
        return dict(value), None
    if isinstance(value, str | bytes) and value[:1] in ("{", b"{"):
        raw = value.encode("utf-8") if isinstance(value, str) else value
        try:
            decoded = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return None, None
        return (decoded, raw) if isinstance(decoded, dict) else (None, None)
    return None, None


# Where a provider's messages endpoint is: a body a trace holds without its URL is judged as if
# sent there (the provider registry tells a body's provider by its URL first).
_URLS: Final = {
    "anthropic": "https://api.anthropic.com/v1/messages",
    "openai": "https://api.openai.com/v1/chat/completions",
    "openai-responses": "https://api.openai.com/v1/responses",
    "deepseek": "https://api.deepseek.com/chat/completions",
    "groq": "https://api.groq.com/openai/v1/chat/completions",
    "mistral": "https://api.mistral.ai/v1/chat/completions",
    "xai": "https://api.x.ai/v1/chat/completions",
}
_ALIASES: Final = {
    "claude": "anthropic",
    "anthropic.messages": "anthropic",
    "azure": "openai",
    "azure_openai": "openai",
    "openai-chat": "openai",
    "x_ai": "xai",
    "grok": "xai",
}


def provider_url(
    provider: str | None, body: Mapping[str, Any] | None, model: str | None = None
) -> str | None:
    """The URL a body of `provider` is sent to (None when the scan cannot say: the body's shape
    then decides)."""
    name = (provider or "").lower().strip()
    name = _ALIASES.get(name, name)
    if name in ("aws.bedrock", "bedrock", "aws_bedrock"):
        return f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model or 'model'}/converse"
    if name in ("gemini", "gcp.gemini", "google", "vertex_ai", "gcp.vertex_ai"):
        return (
            "https://generativelanguage.googleapis.com/v1beta/models/"
            f"{model or 'gemini'}:generateContent"
        )
    if name == "openai" and body is not None and "input" in body and "messages" not in body:
        name = "openai-responses"
    return _URLS.get(name)


def response_counters(
    body: Mapping[str, Any] | None, url: str | None, response: Any
) -> tuple[str | None, Counters]:
    """The provider that claims `body` and the counters it reads in `response` (its usage and
    cache fields, in its own words: the registry's `usage`)."""
    if body is None:
        return None, Counters()
    provider = provider_for(body, url)
    if provider is None:
        return None, Counters()
    if isinstance(response, list):  # a stream's events: the last that reports usage
        found = None
        for event in response:
            found = usage_of(provider, event) or found
        usage = found
    else:
        usage = usage_of(provider, response) if response is not None else None
    if usage is None:
        return provider.name, Counters()
    return provider.name, Counters(
        usage.input_tokens, usage.read_tokens, usage.written_tokens, usage.output_tokens
    )
