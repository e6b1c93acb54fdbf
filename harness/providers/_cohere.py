"""Cohere v2 chat (`POST /v2/chat`): tools, the system messages, documents, then the messages.

Cohere documents no prompt caching for its chat API (the rules pack's `caching` row says
`none`): no marker, no cache counter. The harness still judges the prefix chain byte for byte in
this order, so a tool moved between turns is a break of the prefix the next turn repeats, and the
rules say "no provider caching" rather than a cost the provider does not bill. Tools are
OpenAI-shaped (`{"type": "function", "function": {"name", "description", "parameters"}}`), so the
tool diff reads their `function.name`. Which fields are settings (`model`, `tool_choice`,
`response_format`...) and which are bookkeeping (`stream`, sampling, `max_tokens`) is the rules
pack's (`_classify.classify`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from harness._shared._views import CacheView, RequestSplit
from harness.providers._base import CacheUsage, Provider, integer, member, role
from harness.providers._classify import classify

COHERE: Final = "cohere"

_PROMPT: Final = frozenset({"tools", "messages", "documents"})


class CohereChat(Provider):
    name = COHERE

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is None:
            return False  # the body alone is OpenAI Chat's shape
        return urlsplit(url).path.rstrip("/").endswith("/v2/chat") and isinstance(
            body.get("messages"), list
        )

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        settings, bookkeeping = classify(COHERE, body, _PROMPT)
        messages = body.get("messages")
        leading: list[Any] = []
        rest: Any = messages
        if isinstance(messages, list):
            count = 0
            while count < len(messages) and role(messages[count]) == "system":
                count += 1
            leading, rest = messages[:count], messages[count:]
        blocks: dict[str, Any] = {}
        if "tools" in body:
            blocks["tools"] = body["tools"]
        if leading:
            blocks["system"] = leading
        if "documents" in body:
            blocks["documents"] = body["documents"]
        if messages is not None:
            blocks["messages"] = rest
        view = CacheView(settings=dict(sorted(settings.items())), blocks=blocks, provider=COHERE)
        return RequestSplit(COHERE, view, view, "exact-prefix", bookkeeping=bookkeeping)

    def usage(self, response: Any) -> CacheUsage | None:
        usage = member(response, "usage")
        if not isinstance(usage, dict):
            return None
        tokens = member(usage, "tokens", "input_tokens")
        billed = member(usage, "billed_units", "input_tokens")
        read = integer(usage.get("cached_tokens"))
        return CacheUsage(
            COHERE, read_tokens=read, uncached_tokens=integer(tokens or billed) - read
        )
