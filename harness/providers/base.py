"""What a provider is to the harness: the `Provider` protocol and the parts providers share.

A provider answers four questions about a request body (and the URL and headers it was sent
with, when known):
- `claims(body, url)`: is this request mine? By URL path and host when there is a URL, by the
  body's shape when there is none (a build that returns a body);
- `split(body, headers)`: the request in my cache order (a `CacheView`: settings, then prompt
  blocks), and the cacheable prefix with its breakpoints (a `RequestSplit`);
- `usage(response)`: the cache hit signal in a decoded response body, in my own words;
- `name`: the name reports and cassettes use.

Settings that key the cache without being prompt text (model, thinking, reasoning effort, beta
headers, service tier, `prompt_cache_key`, tool choice...) are the view's `settings`; per-request
bookkeeping (`stream`, `max_tokens`, sampling parameters, `metadata`) is left out. The decision
note `docs/decisions/0005-capture.md` lists every key and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec

from harness.views import RequestSplit

__all__ = ["CacheUsage", "Headers", "Provider", "header_pairs", "role", "settings_of"]

Headers = Mapping[str, str] | Sequence[tuple[str, str]]


class CacheUsage(msgspec.Struct, frozen=True, omit_defaults=True):
    """A response's cache signal: tokens read from and written to the cache, and why it missed.

    `miss_reason` is the provider's own word where it has one (Anthropic's
    `diagnostics.cache_miss_reason.type`: `tools_changed`, `system_changed`...).
    """

    provider: str
    read_tokens: int = 0
    written_tokens: int = 0
    uncached_tokens: int | None = None
    miss_reason: str | None = None


@runtime_checkable
class Provider(Protocol):
    """A provider's request format and cache rules. Register one with `register_provider`."""

    name: str

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        """Whether `body` (sent to `url`, if known) is a request of this provider."""
        ...

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        """The request in this provider's cache order, and its cacheable prefix."""
        ...

    def usage(self, response: Any) -> CacheUsage | None:
        """The cache hit signal in a decoded response body; None when it holds none."""
        ...


def header_pairs(headers: Headers | None) -> list[tuple[str, str]]:
    """Headers as lower-cased (name, value) pairs, in the order sent."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return [(str(key).lower(), str(value)) for key, value in headers.items()]
    return [(str(key).lower(), str(value)) for key, value in headers]


def settings_of(body: Mapping[str, Any], skip: frozenset[str]) -> dict[str, Any]:
    """Every key of `body` that is neither prompt nor bookkeeping, sorted: top-level key order
    does not reach a provider's prompt."""
    return {key: body[key] for key in sorted(body) if key not in skip}


def role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def integer(value: Any) -> int:
    """A token count from a response, 0 when absent or not a number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def member(value: Any, *path: str) -> Any:
    """`value[path[0]][path[1]]...`, None where a step is missing or not an object."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
