"""Trace readers: one registered module per format, asked in a fixed order.

`--from FORMAT` names one; without it the first readable unit of each file is offered to every
reader in the order below, most specific first (a harness cassette and a Bedrock log say what they
are; a bare request body says least), and the first that claims it reads the whole file:

| name | reads | evidence |
|---|---|---|
| `cassette` | the harness's own cassettes (`kind: harness/capture`) | exact |
| `pydantic-ai` | pydantic-ai's VCR cassettes (`parsed_body`, key-sorted YAML) | structural |
| `vcr` | vcrpy / pytest-recording YAML (`interactions`, the body as sent) | exact |
| `bedrock` | Bedrock model invocation logs (`schemaType: ModelInvocationLog`) | exact |
| `openinference` | OpenInference spans (`input.value`, `llm.*`) | exact |
| `otel` | OpenTelemetry GenAI spans (`gen_ai.*`; OTLP JSON or one span a line) | structural |
| `langfuse` | Langfuse generations (API or blob-storage export) | structural |
| `litellm` | LiteLLM proxy spend logs | structural |
| `helicone` | Helicone request exports (`request_body`) | exact |
| `jsonl` | `{url, body, time, response, headers}` lines (`harness lint`'s), bare bodies | exact |

`register_reader(reader)` adds one (asked before the built-ins; a name registered again is
replaced); `reader_named(name)` and `readers()` are what the scan asks.
"""

from __future__ import annotations

from typing import Final

from harness.scan._readers._base import BadRecord, Reader, Unit
from harness.scan._readers._bedrock import BedrockReader
from harness.scan._readers._cassette import CassetteReader
from harness.scan._readers._helicone import HeliconeReader
from harness.scan._readers._jsonl import JsonlReader
from harness.scan._readers._langfuse import LangfuseReader
from harness.scan._readers._litellm import LiteLLMReader
from harness.scan._readers._openinference import OpenInferenceReader
from harness.scan._readers._otel import OtelReader
from harness.scan._readers._pydantic_ai import PydanticAIReader
from harness.scan._readers._vcr import VcrReader

__all__ = [
    "BadRecord",
    "Reader",
    "Unit",
    "reader_named",
    "readers",
    "register_reader",
    "unregister_reader",
]

_BUILT_IN: Final[tuple[Reader, ...]] = (
    CassetteReader(),
    PydanticAIReader(),
    VcrReader(),
    BedrockReader(),
    OpenInferenceReader(),
    OtelReader(),
    LangfuseReader(),
    LiteLLMReader(),
    HeliconeReader(),
    JsonlReader(),
)
_registered: dict[str, Reader] = {}


def register_reader(reader: Reader) -> Reader:
    """Add a reader (asked before the built-ins); one of the same name is replaced."""
    _registered.pop(reader.name, None)
    _registered[reader.name] = reader
    return reader


def unregister_reader(name: str) -> None:
    _registered.pop(name, None)


def readers() -> tuple[Reader, ...]:
    """Every reader, in the order a file's first unit is offered to them."""
    names = set(_registered)
    return (*_registered.values(), *(r for r in _BUILT_IN if r.name not in names))


def reader_named(name: str) -> Reader | None:
    return next((reader for reader in readers() if reader.name == name), None)
