"""A project's capture settings, set once in a conftest: `harness_capture_config`.

Like pytest-recording's `vcr_config`, the fixture returns a dict (or a `CaptureConfig`), and a
`@pytest.mark.header_capture(...)` marker may override its keys for one test:

    @pytest.fixture
    def harness_capture_config():
        return {
            "redact_headers": ["x-tenant-token"],   # also written as [redacted]
            "redact_query": ["session"],            # query parameters, the same
            "secret_patterns": [r"acme_live_[0-9a-f]{32}"],  # fail a recording that holds one
            "allow": ["sk-test-not-a-key"],         # known fake values the scan accepts
            "matcher": "exact_body",                # or "cache_view" (default), or a Matcher
            "hosts": ["llm.internal:8080"],         # capture these hosts too ("*": every host)
            "local_hosts": ["localhost:11434"],     # local OpenAI-compatible servers ([]: none)
            "ignore_hosts": ["api.openai.com"],     # and let these through untouched
            "prefix_chain": True,                   # the prefix-chain gate (on by default)
            "rules": "harness-rules.json",          # rules rows (a file, or a list of rows)
            "prices": "harness-prices.json",        # price rows (a negotiated rate)
            "block_network": "auto",                # "providers", "all" or "none" (below)
            "allowed_hosts": ["search.internal"],   # hosts a client may reach uncaptured
            "no_requests": "auto",                  # "warn", "fail" or "ignore" (below)
            "volatile_in_prefix": "fail",           # while recording ("warn": record anyway)
            "known_moves": [                        # the frameworks' moves, waived everywhere
                {"reason": "AutoGen's reflection call drops the tools", "only": "tools"},
            ],
        }

The providers' hosts are captured without a word (`harness/providers/hosts.json`: OpenAI, Azure
OpenAI, Anthropic, Gemini, Vertex, Bedrock, DeepSeek, Groq, Mistral, Cohere, OpenRouter, xAI,
Together, Fireworks); `local_hosts` replaces the default list of local OpenAI-compatible servers
(Ollama's `localhost:11434`, vLLM's `localhost:8000`, and the same on `127.0.0.1`).

`rules` adds rows to the rules pack for the test (asked before the shipped rows: a row for a
model the pack does not know, a setting the project knows to be bookkeeping); a rules file's path
or a list of row objects (`harness rules --format json` shows the shape). `prices` adds price
rows the same way (`harness.cost._prices`: a negotiated rate, asked before the list prices), for
the cache budget (`@pytest.mark.cache_budget`).

No silent pass (`harness.capture._guard`): under `@pytest.mark.header_capture`, a client the
capture does not see (a raw socket, a library not intercepted) that reaches a provider's host
fails the test, in one line naming the host and the library; `block_network="all"` blocks every
host but loopback and `allowed_hosts` (names, wildcards, addresses or networks such as
`10.0.0.0/8`), and `"auto"` (the default) is `"providers"` locally and `"all"` in CI. A marked
test that captured no request is warned about in record modes and fails in check mode
(`no_requests="auto"`).

A timestamp, date, UUID or generated id in the cached prefix (the rule `volatile-in-prefix`)
fails a test that records (`volatile_in_prefix="fail"`, the default), so no cassette is written
from a run whose prefix changes every run; replaying, it stays a warning.

`known_moves` lists moves of the project's frameworks that the gate waives in every test, each
with its reason and what it waives (`only`: a block, a verdict, a JSON pointer or a predicate;
`harness.capture._waivers`); one that waived nothing in a run is reported as stale.

Redaction adds to the defaults, never replaces them: a project cannot switch off the redaction
of `authorization` by forgetting it. An unknown key, or a value of the wrong type, is a
`UsageError` that lists the valid keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from harness._shared._errors import UsageError
from harness._shared._secret_shapes import SECRET_PATTERNS, SecretPattern
from harness._shared._secrets import DEFAULT_SECRET_HEADERS, DEFAULT_SECRET_QUERY, Redaction
from harness.capture._matching import Matcher, matcher_named, name_of_matcher
from harness.capture._waivers import Waiver, known_moves
from harness.cost._prices import parse_price_rows
from harness.providers._base import host_matches
from harness.providers._hosts import local_hosts
from harness.providers._pack import parse_rows
from harness.providers._registry import recognised_host

__all__ = ["CaptureConfig"]


@dataclass(frozen=True)
class CaptureConfig:
    """Extra redaction, the matcher, the hosts to capture, and the prefix-chain gate."""

    redact_headers: frozenset[str] = frozenset()
    redact_query: frozenset[str] = frozenset()
    secret_patterns: tuple[re.Pattern[str], ...] = ()
    allow: frozenset[str] = frozenset()
    matcher: Matcher | None = None
    hosts: tuple[str, ...] = ()
    ignore_hosts: tuple[str, ...] = ()
    local_hosts: tuple[str, ...] = field(default_factory=local_hosts)
    prefix_chain: bool = True
    rules: tuple[Any, ...] = ()
    prices: tuple[Any, ...] = ()
    block_network: str = "auto"
    allowed_hosts: tuple[str, ...] = ()
    no_requests: str = "auto"
    known_moves: tuple[Waiver, ...] = ()
    volatile_in_prefix: str = "fail"

    @classmethod
    def of(cls, value: object, *, where: str = "harness_capture_config") -> CaptureConfig:
        """A config from what the fixture returned: None, a `CaptureConfig` or a dict."""
        if value is None:
            return cls()
        if isinstance(value, CaptureConfig):
            return value
        if not isinstance(value, Mapping):
            raise UsageError(
                f"{where} must return a dict (or a harness.capture.CaptureConfig),"
                f" not {type(value).__name__}"
            )
        return cls().updated(value, where=where)

    def updated(self, options: Mapping[str, Any], *, where: str) -> CaptureConfig:
        """This config with the keys of `options` replaced (a marker's overrides)."""
        valid = [f.name for f in fields(self)]
        changes: dict[str, Any] = {}
        for key, value in options.items():
            if key not in valid:
                raise UsageError(
                    f"{where}: unknown key {key!r}; the valid keys are {', '.join(valid)}"
                )
            changes[key] = _parsed(key, value, where)
        return replace(self, **changes)

    def portable(self) -> dict[str, Any]:
        """The keys another process needs to capture as this config does (a hash-seed child):
        `CaptureConfig.of(config.portable())` redacts, captures and guards the same hosts. A
        matcher object no name is registered for becomes the default; rules and prices rows,
        which judge and price what was captured, stay with the parent."""
        value: dict[str, Any] = {
            "redact_headers": sorted(self.redact_headers),
            "redact_query": sorted(self.redact_query),
            "secret_patterns": [pattern.pattern for pattern in self.secret_patterns],
            "allow": sorted(self.allow),
            "hosts": list(self.hosts),
            "ignore_hosts": list(self.ignore_hosts),
            "local_hosts": list(self.local_hosts),
            "block_network": self.block_network,
            "allowed_hosts": list(self.allowed_hosts),
        }
        name = name_of_matcher(self.matcher)
        if name is not None:
            value["matcher"] = name
        return value

    def redaction(self) -> Redaction:
        """The default redaction plus this config's additions."""
        extra = tuple(
            SecretPattern(
                kind=f"a match of the pattern {pattern.pattern!r} (harness_capture_config)",
                regex=pattern,
            )
            for pattern in self.secret_patterns
        )
        return Redaction(
            headers=DEFAULT_SECRET_HEADERS | self.redact_headers,
            query=DEFAULT_SECRET_QUERY | self.redact_query,
            patterns=(*SECRET_PATTERNS, *extra),
            allow=self.allow,
        )

    def ephemeral_port(self, host: str, port: int) -> bool:
        """Whether `host:port` is a project's own stand-in on a port chosen at run time: a
        loopback host no `hosts` or `local_hosts` entry names with its port (the port is then
        left out of the route, `harness.capture._matching`)."""
        if not _loopback(host):
            return False
        named = f"{host}:{port}"
        return not any(
            ":" in pattern.strip("[]") and host_matches(pattern, named)
            for pattern in (*self.hosts, *self.local_hosts)
        )

    def captures(self, host: str) -> bool:
        """Whether requests to `host` go through the capture session when intercepting."""
        if any(host_matches(pattern, host) for pattern in self.ignore_hosts):
            return False
        return recognised_host(host) or any(
            host_matches(pattern, host) for pattern in (*self.hosts, *self.local_hosts)
        )


def _loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    return host in ("localhost", "::1") or host.endswith(".localhost") or host.startswith("127.")


def _strings(key: str, value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UsageError(f"{where}: {key} takes a list of strings, not {value!r}")
    items = tuple(value)
    if not all(isinstance(item, str) and item for item in items):
        raise UsageError(f"{where}: {key} takes a list of non-empty strings, not {value!r}")
    return items


_CHOICES: Final = {
    "block_network": ("auto", "providers", "all", "none"),
    "no_requests": ("auto", "warn", "fail", "ignore"),
    "volatile_in_prefix": ("fail", "warn"),
}


def _parsed(key: str, value: Any, where: str) -> Any:
    if key in _CHOICES:
        if value not in _CHOICES[key]:
            raise UsageError(
                f"{where}: {key} takes one of {', '.join(map(repr, _CHOICES[key]))}, not {value!r}"
            )
        return value
    if key in ("redact_headers", "redact_query"):
        return frozenset(item.lower() for item in _strings(key, value, where))
    if key == "allow":
        return frozenset(_strings(key, value, where))
    if key in ("hosts", "ignore_hosts", "allowed_hosts", "local_hosts"):
        return tuple(item.lower() for item in _strings(key, value, where))
    if key == "secret_patterns":
        if isinstance(value, str | re.Pattern) or not isinstance(value, Iterable):
            raise UsageError(f"{where}: secret_patterns takes a list of regular expressions")
        patterns = []
        for item in value:
            try:
                patterns.append(item if isinstance(item, re.Pattern) else re.compile(item))
            except (re.error, TypeError) as error:
                raise UsageError(
                    f"{where}: secret_patterns: {item!r} is not a pattern ({error})"
                ) from None
        return tuple(patterns)
    if key == "rules":
        return parse_rows(value, where=where)
    if key == "prices":
        return parse_price_rows(value, where=where)
    if key == "known_moves":
        return known_moves(value, where=where)
    if key == "matcher":
        if value is None or isinstance(value, Matcher):
            return value
        if isinstance(value, str):
            return matcher_named(value)
        raise UsageError(
            f"{where}: matcher takes a matcher name or an object with"
            f" matches(recorded, live, redaction), not {value!r}"
        )
    if not isinstance(value, bool):
        raise UsageError(f"{where}: {key} takes True or False, not {value!r}")
    return value
