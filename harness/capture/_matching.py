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

The route of a request is its method, scheme, host, port and path (`Route`): a recorded exchange
answers only a request on its route, and a request with none says what differs (the scheme,
host, port or path of the nearest recorded one). One exception, for a project's own stand-in
servers: a loopback host captured through a `hosts` entry that names no port (`"127.0.0.1"`,
`"localhost"`) is on an ephemeral port, a new one every run, so its port is left out of the
route and out of what the matcher compares; write the port (`"localhost:8080"`) to keep it in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, NamedTuple, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import msgspec

from harness._shared._errors import CassetteMismatch, CassetteMissing, UsageError
from harness._shared._secrets import Redaction
from harness._shared._views import canonical_bytes
from harness.capture._captured import Captured, split_exchange
from harness.capture._cassette import Exchange, HttpRequest
from harness.drift._compare import compare
from harness.drift._locate import first_byte_difference

__all__ = [
    "CacheViewMatcher",
    "Ephemeral",
    "ExactBodyMatcher",
    "Matcher",
    "Route",
    "aligned",
    "describe_mismatch",
    "matcher_named",
    "name_of_matcher",
    "nearest_route",
    "no_answer",
    "positions",
    "register_matcher",
    "route_of",
    "same_route",
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


Ephemeral = Callable[[str, int], bool]  # (host, port): is the port left out of the route?
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class Route(NamedTuple):
    """Where a request goes: what a recorded exchange must share with a live request."""

    method: str
    scheme: str
    host: str
    port: int | None  # None: an ephemeral port, not part of the route
    path: str

    def differences(self, other: Route) -> list[str]:
        """What differs from `other`, in words: "the port (54321 recorded, 54999 live)"."""
        found = []
        for name in ("method", "scheme", "host", "port", "path"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                found.append(f"the {name} ({mine} recorded, {theirs} live)")
        return found


def route_of(method: str, url: str, ephemeral: Ephemeral | None = None) -> Route:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: keep the URL's own words
        port = None
    if port is not None and ephemeral is not None and ephemeral(host, port):
        port = None
    return Route(method.upper(), scheme, host, port, parts.path)


def same_route(request: HttpRequest, live: Captured, ephemeral: Ephemeral | None = None) -> bool:
    return route_of(request.method, request.url, ephemeral) == route_of(
        live.method, live.url, ephemeral
    )


def aligned(request: HttpRequest, live: Captured, ephemeral: Ephemeral | None) -> HttpRequest:
    """`request` as the matcher compares it with `live`: on `live`'s ephemeral port, so a stand-in
    server started on a new port each run is the same request (see the module doc)."""
    if ephemeral is None or route_of(live.method, live.url, ephemeral).port is not None:
        return request
    parts, theirs = urlsplit(request.url), urlsplit(live.url)
    if parts.netloc == theirs.netloc or (parts.hostname or "") != (theirs.hostname or ""):
        return request
    url = urlunsplit((parts.scheme, theirs.netloc, parts.path, parts.query, parts.fragment))
    return msgspec.structs.replace(request, url=url)


def nearest_route(
    recorded: Sequence[Exchange], live: Captured, ephemeral: Ephemeral | None = None
) -> str:
    """When no recorded exchange is on `live`'s route: what differs from the nearest one that
    shares its path (else its method), in words; "" when none is near."""
    want = route_of(live.method, live.url, ephemeral)
    near = [route_of(e.request.method, e.request.url, ephemeral) for e in recorded]
    for same in ("path", "method"):
        for route in near:
            if getattr(route, same) == getattr(want, same) and route != want:
                return "; ".join(route.differences(want))
    return ""


def no_answer(
    recorded: Sequence[Exchange] | None,
    live: Captured,
    cassette: str,
    hint: str,
    ephemeral: Ephemeral | None = None,
) -> CassetteMissing:
    """The error for a live request no recorded exchange answers (`recorded` None: the cassette
    does not exist), naming what differs from the nearest recorded route."""
    if recorded is None:
        where = f"the cassette {cassette} does not exist"
    else:
        near = nearest_route(recorded, live, ephemeral)
        where = (
            f"the cassette {cassette} holds no further {live.method} {live.path} exchange"
            f" ({len(recorded)} recorded)"
            + (f"; the nearest recorded route differs in {near}" if near else "")
        )
    return CassetteMissing(
        f"request {live.number} ({live.method} {live.path}) has no recorded answer: {where}; {hint}"
    )


def positions(
    recorded: Sequence[Exchange], live: Captured, start: int, ephemeral: Ephemeral | None = None
) -> int | None:
    """The first recorded exchange at or after `start` on the live request's route."""
    for index in range(start, len(recorded)):
        if same_route(recorded[index].request, live, ephemeral):
            return index
    return None


def describe_mismatch(
    index: int,
    request: HttpRequest,
    live: Captured,
    cassette: str,
    *,
    entry: str = "",
    redaction: Redaction | None = None,
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
    url = _url_difference(redaction.url(request.url), redaction.url(live.url)) if redaction else ""
    if url:  # the same route, yet another URL (a query): say so, not "identical"
        error = CassetteMismatch(f"{head}: the URLs differ in {url}; {hint}")
        error.live = live
        return error
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


def _url_difference(recorded: str, live: str) -> str:
    """Which part of two URLs on one route differs ("the query (a=1 recorded, a=2 live)")."""
    a, b = urlsplit(recorded), urlsplit(live)
    for name in ("scheme", "netloc", "path", "query"):
        mine, theirs = getattr(a, name), getattr(b, name)
        if mine != theirs:
            word = "host and port" if name == "netloc" else name
            return f"the {word} ({mine or '(none)'} recorded, {theirs or '(none)'} live)"
    return ""


def strict_match(
    recorded: Sequence[Exchange],
    live: Captured,
    used: set[int],
    matcher: Matcher,
    redaction: Redaction,
    cassette: str,
    ephemeral: Ephemeral | None = None,
) -> int | None:
    """The first recorded exchange not in `used` on the live request's route that `matcher`
    accepts (added to `used`); None when the route has no unused exchange, a CassetteMismatch
    when it has some and none matches."""
    candidates = [
        index
        for index in range(len(recorded))
        if index not in used and same_route(recorded[index].request, live, ephemeral)
    ]
    for index in candidates:
        if matcher.matches(aligned(recorded[index].request, live, ephemeral), live, redaction):
            used.add(index)
            return index
    if not candidates:
        return None
    first = candidates[0]
    request = aligned(recorded[first].request, live, ephemeral)
    raise describe_mismatch(first, request, live, cassette, redaction=redaction)
