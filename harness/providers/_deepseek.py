"""DeepSeek: an OpenAI-compatible `/chat/completions` whose disk cache reads system, then tools.

DeepSeek caches complete prefix units (end of user input, end of output, common prefixes); a
request hits only a whole unit, and the whole request is the prefix the next one must extend. It
is recognised by a deepseek host only: its body is indistinguishable from OpenAI Chat's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from harness._shared._views import RequestSplit
from harness.providers._base import CacheUsage, Provider, integer, member, optional
from harness.providers._openai import chat_path, split_chat

DEEPSEEK: Final = "deepseek"


class DeepSeek(Provider):
    name = DEEPSEEK

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is None or not chat_path(url):
            return False
        return "deepseek" in (urlsplit(url).hostname or "").lower()

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return split_chat(body, DEEPSEEK, system_first=True)

    def usage(self, response: Any) -> CacheUsage | None:
        usage = member(response, "usage")
        if not isinstance(usage, dict):
            return None
        return CacheUsage(
            DEEPSEEK,
            read_tokens=integer(usage.get("prompt_cache_hit_tokens")),
            uncached_tokens=integer(usage.get("prompt_cache_miss_tokens")),
            output_tokens=optional(usage.get("completion_tokens")),
        )
