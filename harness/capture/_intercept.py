"""Intercept every httpx and httpx2 client while a capture session is active, code untouched.

Frameworks make their own HTTP clients (pydantic-ai's providers, openai-agents, LangChain's chat
models, an agent that calls `anthropic.Anthropic()` itself), so a test cannot hand each one a
capture client. Like vcrpy and pytest-recording, the capture patches the HTTP layer for the
duration of a test instead; unlike vcrpy, which replaces each transport class's
`handle_request`, it patches the one method every client asks for each request's transport:
`Client._transport_for_url` and `AsyncClient._transport_for_url`, of `httpx2` and of plain
`httpx` (whichever are installed). That reaches clients made before or during the test, sync and
async, with their own transports, mounts and proxies, subclasses included (the SDKs' wrappers).

For a URL whose host some provider answers on (`harness.providers`), or that the session's
config adds (`hosts`), the patched method returns a capture transport bound to the active
session; what it forwards goes to the session's upstream (`harness_upstream`) or else to the
client's own transport (the network, a proxy, or a mock the code set up). Every other host gets
the client's own transport untouched. A client already built on a capture transport is left
alone, so a request is never captured twice.

Clients on other stacks are reached at their own lowest shared layer, and sent through the same
capture transport (decision 0019): urllib3's `HTTPConnectionPool.urlopen` for urllib3, `requests`
and botocore (boto3) (`harness.capture._urllib3`); `http.client.HTTPConnection` for the standard
library and `urllib.request` (`harness.capture._stdlib`); `aiohttp.ClientSession._request` for
aiohttp (`harness.capture._aiohttp`).

The patches are installed when the first session starts intercepting and removed, originals
restored, when the last one stops, also when the test fails. Sessions nest (the innermost one
captures); the active sessions are process-wide, not per thread, because frameworks send from
worker threads that would not see a context variable.

A request is captured by the session whose test started the work that sends it
(`harness.capture._owner`: tasks by their context, threads by the thread that started them,
pool jobs by the code that submitted them), not by the test running when it is sent: work that
outlives its test (a thread never joined) and sends after it ended is refused, with a
`LateRequestWarning` naming that test, and never lands in another test's cassette; what such
work sends to a host the capture does not capture goes out untouched. Work no test started (a
thread started at import or by a session-scoped fixture) is captured by the innermost session.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from harness._shared import _actions
from harness._shared._errors import CaptureError, UsageError
from harness.capture import _aiohttp, _owner, _stdlib, _urllib3
from harness.capture._transport import (
    capture_transport,
    installed_libraries,
    missing_library,
    surfaced,
)

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._recording import Receiver

__all__ = ["active_session", "intercepting", "intercepts"]

_PATCHED: Final = "_transport_for_url"

_lock = threading.RLock()
_active: list[tuple[Receiver, CaptureConfig]] = []
_originals: dict[type[Any], Any] = {}


def active_session() -> Receiver | None:
    """The session that captures intercepted requests now (the innermost), if any."""
    with _lock:
        return _active[-1][0] if _active else None


def intercepts(session: Receiver) -> bool:
    """Whether `session` captures intercepted requests now (a hash-seed child does the same)."""
    with _lock:
        return any(active is session for active, _ in _active)


@contextmanager
def intercepting(session: Receiver, config: CaptureConfig) -> Iterator[Receiver]:
    """While inside, every httpx/httpx2 client sends the hosts `config` captures via `session`."""
    with _lock:
        if not _active:
            _install()
        _active.append((session, config))
    token = _owner.OWNER.set(session)  # the work started from here on is this session's
    try:
        yield session
    finally:
        try:
            _owner.OWNER.reset(token)
        except ValueError:  # left in another context than it was entered in
            _owner.OWNER.set(None)
        with _lock:
            for index in range(len(_active) - 1, -1, -1):
                if _active[index][0] is session:
                    del _active[index]
                    break
            if not _active:
                _uninstall()


def _libraries() -> list[Any]:
    """The installed HTTP libraries; with neither, nothing could be captured: one line on what
    to install, rather than a test that passes having captured nothing."""
    names = installed_libraries()
    if not names:
        raise UsageError(missing_library())
    return [importlib.import_module(name) for name in names]


def _install() -> None:
    _owner.install()
    modules = _libraries()
    _urllib3.install(_capturing, modules[-1])  # requests and botocore (boto3) send through it
    _stdlib.install(_capturing, modules[-1])  # http.client, and urllib.request above it
    _aiohttp.install(_capturing, modules[-1])  # aiohttp's ClientSession (google-genai's client.aio)
    for module in modules:
        for kind in (module.Client, module.AsyncClient):
            if kind in _originals:  # httpx aliased to httpx2: the same classes
                continue
            original = kind.__dict__[_PATCHED]
            _originals[kind] = original
            setattr(kind, _PATCHED, _patched(module, original))


def _uninstall() -> None:
    _urllib3.uninstall()
    _stdlib.uninstall()
    _aiohttp.uninstall()
    for kind, original in _originals.items():
        setattr(kind, _PATCHED, original)
    _originals.clear()
    _owner.uninstall()


def _capturing(host: str | None = None) -> tuple[Receiver, CaptureConfig] | None:
    """The session that captures a request (to `host`, when the caller knows it) sent now: the
    owner of the work sending it if that session still intercepts, else the innermost one; a
    `CaptureError` when the work's test has ended and `host` is one its test captured. A late
    request to a host the capture does not capture (a telemetry worker's) is none of its
    business: None, and it goes out untouched."""
    work = _owner.owner()
    with _lock:
        if work is None:
            return _active[-1] if _active else None
        mine = next((pair for pair in _active if pair[0] is work), None)
        if mine is not None or not _active:
            return mine
        config = getattr(work, "config", None) or _active[-1][1]
    if host is not None and not config.captures(host):
        return None
    who = getattr(work, "test", None) or f"the test of cassette {getattr(work, 'cassette', '?')}"
    message = _actions.shown(
        f"a request was sent after {who} ended, by work it started (a thread or task still"
        " running): it is not captured by the test running now; wait for the work it starts"
        " (join the thread, await the task) before the test ends, and start a worker that"
        " serves every test outside any test (at import, or in a session-scoped fixture)"
    )
    warnings.warn(_owner.LateRequestWarning(message), stacklevel=2)
    raise surfaced(CaptureError(message))


def _patched(module: Any, original: Any) -> Any:
    def _transport_for_url(client: Any, url: Any) -> Any:
        transport = original(client, url)
        if getattr(transport, "capture_session", None) is not None:
            return transport
        host = url.host if url.port is None else f"{url.host}:{url.port}"
        current = _capturing(host)
        if current is None:
            return transport
        session, config = current
        if not config.captures(host):
            session.hosts_passed.add(host)  # named if the test then captured nothing
            return transport
        return capture_transport(session, module, upstream=transport)

    _transport_for_url.__doc__ = original.__doc__
    _transport_for_url.__wrapped__ = original  # type: ignore[attr-defined]
    return _transport_for_url
