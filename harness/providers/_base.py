"""What a provider is to the harness: the `Provider` base class and the parts providers share.

A provider answers about a request body (and the URL and headers it was sent with, when known):
- `claims(body, url)`: is this request mine? By URL path and host when there is a URL, by the
  body's shape when there is none (a build that returns a body);
- `split(body, headers)`: the request in my cache order (a `CacheView`: settings, then prompt
  blocks), and the cacheable prefix with its breakpoints (a `RequestSplit`);
- `name`: the name reports and cassettes use.
Its optional parts are members with defaults, so a provider states only what it has:
- `usage(response)`: the cache hit signal in a decoded response body (default: none);
- `split_url(body, headers, url)`: `split` for a provider whose model lives in the URL path
  (Gemini, Bedrock); by default the URL adds nothing;
- `hosts`: the host names it answers on (`*` matches within a name: `*.openai.azure.com`), added
  to the rows `harness/providers/hosts.json` gives its name (the built-in providers' hosts are
  all data there); a capture session intercepts requests to these hosts (and to the hosts its
  config adds);
- `reasons`: a `harness._shared._reasons.Vocabulary`, the words it uses for what broke its cache;
- `shorthand(value)`: the long form of a value its API documents as a shorthand of it
  (Anthropic: a string `content` is one text block), so both forms are one prefix to the cache
  model; by default there is none;
- `misplaced(body)`: the cache markers its API refuses where they stand (Bedrock: a cache point
  nested in a tool result, one with no content before it), each as (JSON pointer, why); by
  default none.

A provider written to the earlier duck-typed protocol (an object with `name`, `claims`, `split`
and `usage`, not a subclass) is still accepted by `register_provider`, through `Conforming`: the
one place that reads such an object's optional parts.

Settings that key the cache without being prompt text (model, thinking, reasoning effort, beta
headers, service tier, `prompt_cache_key`, tool choice...) are the view's `settings`; per-request
bookkeeping (`stream`, `max_tokens`, sampling parameters, `metadata`, diagnostics requests) is
the split's `bookkeeping`. Which is which is data: the rules pack's setting rows
(`harness.providers._pack`, decision 0017).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

import msgspec

from harness._shared._reasons import Vocabulary
from harness._shared._views import RequestSplit
from harness.providers._hosts import known_hosts

__all__ = [
    "CacheUsage",
    "Conforming",
    "Headers",
    "Point",
    "Provider",
    "breakpoints",
    "header_pairs",
    "host_matches",
    "hosts_of",
    "point_pointer",
    "reasons_of",
    "role",
    "truncate",
]

Headers = Mapping[str, str] | Sequence[tuple[str, str]]


class CacheUsage(msgspec.Struct, frozen=True, omit_defaults=True):
    """A response's cache signal: tokens read from and written to the cache, and why it missed.

    `miss_reason` is the provider's own word where it has one (Anthropic's
    `diagnostics.cache_miss_reason.type`: `tools_changed`, `system_changed`...; OpenAI's
    `prompt_cache_diagnostics` reason). `written_ttl` splits `written_tokens` by time to live
    where the provider says (`(("5m", 1200), ("1h", 0))`); `missed_tokens` is the provider's count
    of tokens its miss cost (Anthropic's `cache_missed_input_tokens`); `output_tokens` what the
    answer held (the cost model prices it).
    """

    provider: str
    read_tokens: int = 0
    written_tokens: int = 0
    uncached_tokens: int | None = None
    miss_reason: str | None = None
    written_ttl: tuple[tuple[str, int], ...] = ()
    missed_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def input_tokens(self) -> int:
        """Every input token the provider counted: read, written and uncached."""
        return self.read_tokens + self.written_tokens + (self.uncached_tokens or 0)


class Provider(ABC):
    """A provider's request format and cache rules. Subclass it and register an instance (or the
    class) with `harness.providers.register_provider`; `claims` and `split` are required."""

    name: str
    hosts: ClassVar[tuple[str, ...]] = ()
    reasons: ClassVar[Vocabulary] = Vocabulary()

    @abstractmethod
    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        """Whether `body` (sent to `url`, if known) is a request of this provider."""

    @abstractmethod
    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        """The request in this provider's cache order, and its cacheable prefix."""

    def split_url(
        self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]], url: str | None
    ) -> RequestSplit:
        """`split`, for a request sent to `url` (a provider whose model is in the URL reads it)."""
        return self.split(body, headers)

    def usage(self, response: Any) -> CacheUsage | None:
        """The cache hit signal in a decoded response body; None when it holds none."""
        return None

    def shorthand(self, value: Any) -> Any:
        """The long form of `value` where the API documents `value` as a shorthand of it (the
        cache keys both the same); None when it is none."""
        return None

    def misplaced(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The cache markers the API refuses where they stand, as (JSON pointer, why)."""
        return []


class Conforming(Provider):
    """A provider written to the duck-typed protocol (not a `Provider` subclass), adopted as one:
    its optional `hosts`, `reasons`, `split_url` and `usage` are read here, once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        hosts = getattr(inner, "hosts", ())
        self.own_hosts = (hosts,) if isinstance(hosts, str) else tuple(hosts or ())
        reasons = getattr(inner, "reasons", None)
        self.own_reasons = reasons if isinstance(reasons, Vocabulary) else Vocabulary()
        self._split_url = getattr(inner, "split_url", None)
        self._usage = getattr(inner, "usage", None)

    @staticmethod
    def conforms(value: Any) -> bool:
        """Whether `value` has what every provider needs: a `name` string, `claims`, `split`."""
        return (
            isinstance(getattr(value, "name", None), str)
            and callable(getattr(value, "claims", None))
            and callable(getattr(value, "split", None))
        )

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        return bool(self.inner.claims(body, url))

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        found: RequestSplit = self.inner.split(body, headers)
        return found

    def split_url(
        self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]], url: str | None
    ) -> RequestSplit:
        if callable(self._split_url):
            found = self._split_url(body, headers, url)
            if isinstance(found, RequestSplit):
                return found
        return self.split(body, headers)

    def usage(self, response: Any) -> CacheUsage | None:
        found = self._usage(response) if callable(self._usage) else None
        return found if isinstance(found, CacheUsage) else None


def hosts_of(provider: Provider) -> tuple[str, ...]:
    """The host patterns a provider answers on, lower-cased: its own, then the data's."""
    hosts = provider.own_hosts if isinstance(provider, Conforming) else provider.hosts
    found = (*(str(host).lower() for host in hosts), *known_hosts(provider.name))
    return tuple(dict.fromkeys(found))


def reasons_of(provider: Provider) -> Vocabulary:
    return provider.own_reasons if isinstance(provider, Conforming) else provider.reasons


def header_pairs(headers: Headers | None) -> list[tuple[str, str]]:
    """Headers as lower-cased (name, value) pairs, in the order sent."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return [(str(key).lower(), str(value)) for key, value in headers.items()]
    return [(str(key).lower(), str(value)) for key, value in headers]


def role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def integer(value: Any) -> int:
    """A token count from a response, 0 when absent or not a number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def optional(value: Any) -> int | None:
    """A token count from a response, None when absent or not a number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def member(value: Any, *path: str) -> Any:
    """`value[path[0]][path[1]]...`, None where a step is missing or not an object."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def host_matches(pattern: str, host: str) -> bool:
    """`host` (a name, maybe with `:port`) against a pattern such as `*.openai.azure.com`."""
    pattern, host = pattern.lower(), host.lower()
    if pattern == "*":
        return True
    if ":" not in pattern:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return fnmatchcase(host, pattern)


Point = tuple[str, int, int]  # a breakpoint: (block, index, content index or -1)


def breakpoints(blocks: Mapping[str, Any], marked: Callable[[Any], bool]) -> list[Point]:
    """Every marked item in cache order: in the tools and system lists, then in each message's
    content (Anthropic's `cache_control` keys, Bedrock's `cachePoint` blocks)."""
    found: list[Point] = []
    for name in ("tools", "system"):
        items = blocks.get(name)
        if isinstance(items, list):
            found += [(name, i, -1) for i, item in enumerate(items) if marked(item)]
    messages = blocks.get("messages")
    if isinstance(messages, list):
        for index, message in enumerate(messages):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                found += [
                    ("messages", index, inner) for inner, item in enumerate(content) if marked(item)
                ]
    return found


def point_pointer(point: Point, marker: str) -> str:
    """The JSON pointer of a breakpoint's marker: `/messages/2/content/0/cache_control`."""
    name, index, inner = point
    parts: list[str | int] = [name, index]
    if inner >= 0:
        parts += ["content", inner]
    return "/" + "/".join(str(part) for part in [*parts, marker])


def truncate(blocks: Mapping[str, Any], point: Point) -> dict[str, Any]:
    """The blocks up to and including the breakpoint: the cacheable prefix."""
    name, index, inner = point
    out: dict[str, Any] = {}
    for key, value in blocks.items():
        if key != name:
            out[key] = value
            continue
        if inner < 0:
            out[key] = value[: index + 1]
        else:
            message = dict(value[index])
            message["content"] = list(message["content"])[: inner + 1]
            out[key] = [*value[:index], message]
        break
    return out


def model_in_path(pattern: re.Pattern[str], url: str | None) -> str | None:
    """The model a provider's URL path names (`pattern`'s group `model`), if any."""
    if url is None:
        return None
    found = pattern.search(urlsplit(url).path.rstrip("/"))
    return unquote(found.group("model")) if found else None
