"""Intercept aiohttp (`ClientSession`: google-genai's `client.aio`, litellm's aiohttp transport).

Every aiohttp request asks its session's connector for a connection (`BaseConnector.connect`,
once per attempt: a middleware's retry and a redirect ask again). While a capture session is on,
a request to a captured host gets a connection whose far end is the capture
(`harness.capture._aiohttp_wire`) instead of a socket: aiohttp builds and writes the request as it
does without capture (its body payloads, middlewares, trace configs, cookies, auth, redirects),
the capture reads it once and sends it through the session's async httpx transport (recorded,
replayed, matched and gated like httpx traffic; `harness_upstream` serves it in record mode, or,
without one, httpx sends it to the network), and aiohttp reads the answer with its own parser as
it arrives. Every other host gets the connector's own connection, untouched. No connection is
made for a captured request, so the connection-level trace events (queued, created, reused, DNS)
do not fire for it; the request-level ones do (decision 0032).

vcrpy (pytest-recording) patches `ClientSession._request` while a cassette is open, above the
connector: its wrapper would see the captured request first and refuse it
(`CannotOverwriteExistingCassetteException`). So while capturing, vcrpy's aiohttp wrapper factory
(`vcr.stubs.aiohttp_stubs.vcr_request`, looked up by vcrpy each time a cassette opens) is wrapped
too: a request to a captured host goes past vcrpy to aiohttp's own `_request` (and so to the
capture), as with httpx, and every other one still reaches vcrpy.

aiohttp is imported only when the project already has it installed; it is never a dependency.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.capture._aiohttp_wire import connection

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._recording import Receiver

__all__ = ["install", "uninstall"]

Current = Callable[[str], "tuple[Receiver, CaptureConfig] | None"]  # given the request's host
_originals: dict[str, Any] = {}


def install(current: Current, httpx_module: Any) -> None:
    """Patch `BaseConnector.connect` if aiohttp is installed (else nothing)."""
    try:
        if _originals or importlib.util.find_spec("aiohttp") is None:
            return
    except (ImportError, ValueError):
        return
    kind = importlib.import_module("aiohttp.connector").BaseConnector
    _originals["connect"] = kind.__dict__["connect"]
    kind.connect = _connecting(_originals["connect"], current, httpx_module)
    stubs = _vcr_stubs()
    if stubs is not None:
        factory = _originals["vcr_request"] = stubs.vcr_request

        def vcr_request(cassette: Any, real_request: Any) -> Any:
            return _past_vcr(factory(cassette, real_request), real_request, current)

        stubs.vcr_request = vcr_request


def uninstall() -> None:
    original = _originals.pop("connect", None)
    if original is not None:
        importlib.import_module("aiohttp.connector").BaseConnector.connect = original
    factory = _originals.pop("vcr_request", None)
    stubs = _vcr_stubs()
    if factory is not None and stubs is not None:
        stubs.vcr_request = factory


def _vcr_stubs() -> Any:
    """vcrpy's aiohttp stubs module, when the project has imported vcrpy (else None)."""
    if "vcr" not in sys.modules:
        return None
    try:
        return importlib.import_module("vcr.stubs.aiohttp_stubs")
    except ImportError:  # a vcrpy without aiohttp stubs: nothing to keep out of
        return None


def _host(url: Any) -> str:
    """The capture's name of a URL's host: `host`, or `host:port` with a port of its own."""
    return str(url.host) if url.explicit_port is None else f"{url.host}:{url.port}"


def _connecting(original: Any, current: Current, httpx_module: Any) -> Any:
    async def connect(connector: Any, req: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        host = _host(req.url)
        active = current(host)
        if active is None:
            return await original(connector, req, *args, **kwargs)
        session, config = active
        if not config.captures(host):
            session.hosts_passed.add(host)  # named if the test then captured nothing
            return await original(connector, req, *args, **kwargs)
        return connection(connector, req, session, httpx_module)

    connect.__doc__ = original.__doc__
    connect.__wrapped__ = original  # type: ignore[attr-defined]
    return connect


def _past_vcr(handler: Any, real_request: Any, current: Current) -> Any:
    """vcrpy's `_request` for a cassette, sending a request to a captured host past it."""

    async def _request(client: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        host = _host(_url(client, str_or_url, kwargs.get("params")))
        active = current(host)
        if active is not None and active[1].captures(host):
            return await real_request(client, method, str_or_url, **kwargs)
        return await handler(client, method, str_or_url, **kwargs)

    _request.__wrapped__ = handler  # type: ignore[attr-defined]
    return _request


def _url(client: Any, str_or_url: Any, params: Any) -> Any:
    from yarl import URL

    url = URL(str(str_or_url))
    base = getattr(client, "_base_url", None)
    if base is not None and not url.is_absolute():
        url = base.join(url)
    if params:
        url = url.extend_query(params)
    return url
