"""OpenAI-compatible hosts: Groq, Mistral, OpenRouter, xAI, Together, Fireworks.

Each serves OpenAI's Chat Completions body on its own host (`/openai/v1/chat/completions` on
Groq, `/api/v1/...` on OpenRouter, `/inference/v1/...` on Fireworks, `/v1/...` elsewhere), so the
request is split as OpenAI Chat's (tools, the leading system messages, the rest) under the
provider's own name: its cache rules are its own rows in the rules pack (a provider with no
`caching` row is not judged on what it caches, and the prefix chain still judges every turn byte
for byte). Which host is whose is data (`harness/providers/hosts.json`). A Responses request to
one of these hosts (xAI and Groq serve `/v1/responses`) is OpenAI Responses'. The hit signal,
where the host gives one, is OpenAI's `usage.prompt_tokens_details.cached_tokens`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from harness._shared._views import RequestSplit
from harness.providers._base import CacheUsage, Provider, host_matches
from harness.providers._hosts import known_hosts
from harness.providers._openai import cached_usage, chat_path, split_chat

GROQ: Final = "groq"
MISTRAL: Final = "mistral"
OPENROUTER: Final = "openrouter"
XAI: Final = "xai"
TOGETHER: Final = "together"
FIREWORKS: Final = "fireworks"
COMPATIBLE: Final = (GROQ, MISTRAL, OPENROUTER, XAI, TOGETHER, FIREWORKS)


class OpenAICompatible(Provider):
    """An OpenAI-compatible Chat Completions host, known by its host name only (the body is
    OpenAI Chat's)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is None or not chat_path(url):
            return False
        host = urlsplit(url).netloc
        return any(host_matches(pattern, host) for pattern in known_hosts(self.name))

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return split_chat(body, self.name, system_first=False)

    def usage(self, response: Any) -> CacheUsage | None:
        return cached_usage(self.name, response, "prompt_tokens", "prompt_tokens_details")

    def __repr__(self) -> str:
        return f"OpenAICompatible({self.name!r})"


def compatible_providers() -> tuple[OpenAICompatible, ...]:
    return tuple(OpenAICompatible(name) for name in COMPATIBLE)
