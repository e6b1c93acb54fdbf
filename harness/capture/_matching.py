"""Request matching: which recorded exchange answers a live request, and why one does not.

A matcher is a swappable part (like vcrpy's `match_on`): `CaptureSession(matcher=...)` or the
`harness_capture_config` fixture. Candidates are always the unused recorded exchanges with the
same method and path, in recorded order; the matcher decides whether one is the same request.

- `CacheViewMatcher` (the default): the same URL once secrets are redacted, and the same cache
  view (what the provider's cache sees; key order inside prompt blocks counts, per-request
  bookkeeping such as `stream` or `max_tokens` does not). A body no provider recognises must be
  byte-identical.
- `ExactBodyMatcher`: the same URL and the same body bytes.

Matchers are registered by name (`cache_view`, `exact_body`; `register_matcher` adds one), so a
project's `harness_capture_config` can name one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Protocol, runtime_checkable
from urllib.parse import urlsplit

from harness._shared._errors import CassetteMismatch, UsageError
from harness._shared._secrets import Redaction
from harness._shared._views import canonical_bytes
from harness.capture._captured import Captured, split_exchange
from harness.capture._cassette import Exchange, HttpRequest
from harness.drift._compare import compare
from harness.drift._locate import first_byte_difference

__all__ = [
    "CacheViewMatcher",
    "ExactBodyMatcher",
    "Matcher",
    "describe_mismatch",
    "matcher_named",
    "name_of_matcher",
    "positions",
    "register_matcher",
    "strict_match",
    "unregister_matcher",
]


@runtime_checkable
class Matcher(Protocol):
    def matches(self, recorded: HttpRequest, live: Captured, redaction: Redaction) -> bool:
        """Whether the recorded request and the live one are the same request."""
        ...


class CacheViewMatcher:
    """The same redacted URL and the same cache view (see the module doc)."""

    def matches(self, recorded: HttpRequest, live: Captured, redaction: Redaction) -> bool:
        if redaction.url(recorded.url) != redaction.url(live.url):
            return False
        old = split_exchange(recorded.method, recorded.url, recorded.headers, recorded.body)
        if old is not None and live.split is not None:
            return canonical_bytes(old.view) == canonical_bytes(live.split.view)
        return recorded.body == live.body


class ExactBodyMatcher:
    """The same redacted URL and exactly the same body bytes."""

    def matches(self, recorded: HttpRequest, live: Captured, redaction: Redaction) -> bool:
        return redaction.url(recorded.url) == redaction.url(live.url) and (
            recorded.body == live.body
        )


_MATCHERS: dict[str, Callable[[], Matcher]] = {
    "cache_view": CacheViewMatcher,
    "exact_body": ExactBodyMatcher,
}


_BUILT_IN: Final = dict(_MATCHERS)


def register_matcher(name: str, factory: Callable[[], Matcher]) -> None:
    """Make a matcher available by name (replaces one of the same name)."""
    _MATCHERS[name] = factory


def unregister_matcher(name: str) -> None:
    """Remove a registered matcher (a built-in one comes back)."""
    _MATCHERS.pop(name, None)
    if name in _BUILT_IN:
        _MATCHERS[name] = _BUILT_IN[name]


def matcher_named(name: str) -> Matcher:
    """A new instance of the matcher registered as `name`; a UsageError listing the names."""
    factory = _MATCHERS.get(name)
    if factory is None:
        raise UsageError(f"unknown matcher {name!r}; expected one of {', '.join(_MATCHERS)}")
    return factory()


def name_of_matcher(matcher: Matcher | None) -> str | None:
    """The name `matcher`'s class is registered under (None for an unregistered object): what a
    hash-seed child needs to make the same matcher."""
    if matcher is None:
        return None
    return next((name for name, made in _MATCHERS.items() if made is type(matcher)), None)


def same_route(request: HttpRequest, live: Captured) -> bool:
    return (request.method, urlsplit(request.url).path) == (live.method, live.path)


def positions(recorded: Sequence[Exchange], live: Captured, start: int) -> int | None:
    """The first recorded exchange at or after `start` with the live request's method and path."""
    for index in range(start, len(recorded)):
        if same_route(recorded[index].request, live):
            return index
    return None


def describe_mismatch(
    index: int, request: HttpRequest, live: Captured, cassette: str, *, entry: str = ""
) -> CassetteMismatch:
    """The error for a live request that differs from recorded exchange `index` (of the
    cassette's own exchanges, or of the entry named by `entry`: "prove_stable call 1")."""
    old = split_exchange(request.method, request.url, request.headers, request.body)
    where = f"{entry}'s exchange" if entry else "exchange"
    head = (
        f"request {live.number} ({live.method} {live.path}) does not match"
        f" {where} {index + 1} of cassette {cassette}"
    )
    hint = "if the change is deliberate, run in update mode to rewrite the recorded requests"
    if old is None or live.split is None:
        offset = first_byte_difference(request.body, live.body)
        error = CassetteMismatch(f"{head}: the bodies differ from byte {offset}; {hint}")
        error.live = live
        return error
    report = compare(old.view, live.split.view, label_a="recorded", label_b="live")
    severity = ""
    if canonical_bytes(old.prefix) == canonical_bytes(live.split.prefix):
        severity = " (after the cacheable prefix: the cache is not affected)"
    error = CassetteMismatch(f"{head}{severity}: {report.block} block first; {hint}", report)
    error.live = live
    return error


def strict_match(
    recorded: Sequence[Exchange],
    live: Captured,
    used: set[int],
    matcher: Matcher,
    redaction: Redaction,
    cassette: str,
) -> int | None:
    """The first recorded exchange not in `used` on the live request's route that `matcher`
    accepts (added to `used`); None when the route has no unused exchange, a CassetteMismatch
    when it has some and none matches."""
    candidates = [
        index
        for index in range(len(recorded))
        if index not in used and same_route(recorded[index].request, live)
    ]
    for index in candidates:
        if matcher.matches(recorded[index].request, live, redaction):
            used.add(index)
            return index
    if not candidates:
        return None
    first = candidates[0]
    raise describe_mismatch(first, recorded[first].request, live, cassette)
