"""What every provider shape of the stand-in shares: the answer it makes, and small readers.

A shape (`_anthropic.py`, `_openai.py`, `_gemini.py`, `_bedrock.py`) says which requests are its
own (by path), how many assistant turns a request's conversation holds, which tools it offers,
and writes the provider's answer for a turn: JSON, or the provider's stream when the request asks
for one. It answers with a `Reply`: bytes and a content type, no HTTP library's types.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from harness.upstream._script import Turn

__all__ = ["Reply", "Shape", "assistant_runs", "error", "json_reply", "sse"]


class Reply(NamedTuple):
    status: int
    content_type: str
    body: bytes


class Shape(Protocol):
    name: str

    def claims(self, path: str, body: Mapping[str, Any]) -> bool: ...

    def answered(self, body: Mapping[str, Any]) -> int: ...

    def offered(self, body: Mapping[str, Any]) -> list[str]: ...

    def answer(
        self, turn: Turn, index: int, body: Mapping[str, Any], path: str, query: str, size: int
    ) -> Reply: ...


def json_reply(value: object, status: int = 200) -> Reply:
    return Reply(status, "application/json", json.dumps(value).encode("utf-8"))


def sse(events: Iterable[tuple[str | None, object]]) -> Reply:
    """Server-sent events: `event:` lines where the provider names its events."""
    parts = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        parts.append(f"{head}data: {payload}\n\n")
    return Reply(200, "text/event-stream", "".join(parts).encode("utf-8"))


def error(message: str, status: int = 400) -> Reply:
    """An error in the shape most SDKs read (`{"error": {"message": ...}}`)."""
    return json_reply(
        {"type": "error", "error": {"type": "invalid_request_error", "message": message}}, status
    )


def assistant_runs(roles: Iterable[str | None], assistant: frozenset[str]) -> int:
    """How many assistant turns a conversation holds: runs of assistant-side entries (a message
    and the tool calls that follow it are one turn)."""
    count, inside = 0, False
    for role in roles:
        mine = role in assistant
        if mine and not inside:
            count += 1
        inside = mine
    return count
