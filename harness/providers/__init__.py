"""Provider cache views: a request body split into the order its provider's prompt cache reads.

One module per provider (`anthropic`, `openai` for Chat Completions and Responses, `deepseek`,
`gemini`, `bedrock` for Converse), each a registered part (`registry`); `base` says what a
provider is. This package needs no HTTP
library: `harness.capture` adds the transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness._shared._views import CacheView, RequestSplit
from harness.providers._anthropic import ANTHROPIC
from harness.providers._base import CacheUsage, Headers, Provider, header_pairs, host_matches
from harness.providers._bedrock import BEDROCK
from harness.providers._deepseek import DEEPSEEK
from harness.providers._gemini import GEMINI
from harness.providers._openai import OPENAI_CHAT, OPENAI_RESPONSES, PerRunCacheKeyWarning
from harness.providers._registry import (
    ENTRY_POINT_GROUP,
    ProviderWarning,
    provider_for,
    provider_hosts,
    provider_named,
    recognised_host,
    register_provider,
    registered_providers,
    split_by_provider,
    unregister_provider,
    usage_of,
)

__all__ = [
    "ANTHROPIC",
    "BEDROCK",
    "DEEPSEEK",
    "ENTRY_POINT_GROUP",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "CacheUsage",
    "PerRunCacheKeyWarning",
    "Provider",
    "ProviderWarning",
    "cache_usage",
    "detect_provider",
    "host_matches",
    "provider_for",
    "provider_hosts",
    "provider_named",
    "recognised_host",
    "register_provider",
    "registered_providers",
    "split_request",
    "unregister_provider",
    "view_of_body",
]


def detect_provider(body: Mapping[str, Any], url: str | None = None) -> str | None:
    """Which provider's request `body` is: by URL path and host when given, else by shape."""
    provider = provider_for(body, url)
    return None if provider is None else provider.name


def split_request(
    body: Mapping[str, Any], *, url: str | None = None, headers: Headers | None = None
) -> RequestSplit | None:
    """The request in its provider's cache order, or None when no provider recognises it."""
    return split_by_provider(body, header_pairs(headers), url)


def view_of_body(
    body: Mapping[str, Any], *, url: str | None = None, headers: Headers | None = None
) -> CacheView | None:
    """The cache view of a provider request body; None when no provider recognises it."""
    split = split_request(body, url=url, headers=headers)
    return None if split is None else split.view


def cache_usage(provider: str, response: Any) -> CacheUsage | None:
    """The cache hit signal of a decoded response to a request of `provider`."""
    found = provider_named(provider)
    return None if found is None else usage_of(found, response)
