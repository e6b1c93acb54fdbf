"""Intercept the standard library's HTTP (`http.client`, and `urllib.request` above it).

`urllib.request.urlopen` (DSPy's default engine, scripts, small SDKs) sends through
`http.client.HTTPConnection.request` and reads `getresponse()`. Those two methods are patched
while a capture session is on: a request to a captured host is not sent on the connection but
through the session's `httpx` capture transport (recorded, replayed, matched and gated like httpx
traffic; `harness_upstream` serves it in record mode, or, without one, the original methods send
it on the connection as the code asked); `getresponse()` then hands back a real
`http.client.HTTPResponse` read, chunk by chunk, from the capture's answer. Every other host, and
urllib3's connections (which subclass `HTTPConnection` but have their own `request`, and are
intercepted above, in `harness.capture._urllib3`), are not touched.
"""

from __future__ import annotations

import http.client
import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from harness.capture._urllib3 import Body, body_bytes, text

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._recording import Receiver

__all__ = ["install", "uninstall"]

Current = Callable[[str], "tuple[Receiver, CaptureConfig] | None"]  # given the request's host

_PENDING: Final = "_harness_capture_answer"
_originals: dict[str, Any] = {}


def install(current: Current, httpx_module: Any) -> None:
    """Patch `HTTPConnection.request` and `getresponse` (once)."""
    if _originals:
        return
    kind = http.client.HTTPConnection
    _originals["request"] = kind.__dict__["request"]
    _originals["getresponse"] = kind.__dict__["getresponse"]
    kind.request = _request(_originals["request"], current, httpx_module)  # type: ignore[method-assign]
    kind.getresponse = _getresponse(_originals["getresponse"])  # type: ignore[method-assign]


def uninstall() -> None:
    for name, original in _originals.items():
        setattr(http.client.HTTPConnection, name, original)
    _originals.clear()


def _host(connection: Any) -> str:
    """The host the request is for: the tunnel's end through an HTTPS proxy, else the peer."""
    host, port = connection.host, connection.port
    if getattr(connection, "_tunnel_host", None):
        host, port = connection._tunnel_host, connection._tunnel_port
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    default = getattr(connection, "default_port", None)
    return host if port in (None, default) else f"{host}:{port}"


def _request(original: Any, current: Current, httpx_module: Any) -> Any:
    def request(
        connection: Any,
        method: str,
        url: str,
        body: Any = None,
        headers: Any = None,
        **kwargs: Any,
    ) -> Any:
        __tracebackhide__ = True
        host = _host(connection)
        if "://" in url:  # through a plain-HTTP proxy: the connection is the proxy's
            host = urlsplit(url).netloc.rpartition("@")[2]
        active = current(host)
        if active is None:
            return original(connection, method, url, body, headers or {}, **kwargs)
        session, config = active
        if not config.captures(host):
            return original(connection, method, url, body, headers or {}, **kwargs)
        from harness.capture._transport import capture_transport

        secure = isinstance(connection, http.client.HTTPSConnection)
        scheme = "https" if secure or getattr(connection, "_tunnel_host", None) else "http"
        full = url if "://" in url else f"{scheme}://{host}{url}"
        pairs = [(text(k), text(v)) for k, v in dict(headers or {}).items()]
        outgoing = httpx_module.Request(method, full, headers=pairs, content=body_bytes(body))
        upstream = _upstream_class(httpx_module)(original, connection, url, kwargs)
        transport = capture_transport(session, httpx_module, upstream=upstream)
        setattr(connection, _PENDING, (method, transport.handle_request(outgoing)))
        return None

    request.__doc__ = original.__doc__
    request.__wrapped__ = original  # type: ignore[attr-defined]
    return request


class _Socket:
    """What `http.client.HTTPResponse` reads from: the capture's answer as HTTP/1.1 bytes."""

    def __init__(self, response: Any) -> None:
        lines = [f"HTTP/1.1 {response.status_code} {response.reason_phrase or 'OK'}"]
        lines += [f"{k}: {v}" for k, v in response.headers.multi_items() if k != "connection"]
        lines += ["connection: close", "", ""]
        self._file = io.BufferedReader(Body(response, "\r\n".join(lines).encode("latin-1")))

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> Any:
        return self._file


def _getresponse(original: Any) -> Any:
    def getresponse(connection: Any) -> Any:
        pending = connection.__dict__.pop(_PENDING, None)
        if pending is None:
            return original(connection)
        method, answer = pending
        response = http.client.HTTPResponse(_Socket(answer), method=method)  # type: ignore[arg-type]
        response.begin()
        return response

    getresponse.__doc__ = original.__doc__
    getresponse.__wrapped__ = original  # type: ignore[attr-defined]
    return getresponse


_UPSTREAMS: dict[str, type[Any]] = {}


def _upstream_class(httpx_module: Any) -> type[Any]:
    """An httpx transport that sends on the connection the code opened, with the original
    methods (the network, or a mock the code set up)."""
    name = httpx_module.__name__
    if name in _UPSTREAMS:
        return _UPSTREAMS[name]

    class _Original(httpx_module.BaseTransport):  # type: ignore[misc]
        def __init__(self, original: Any, connection: Any, url: str, kw: dict[str, Any]) -> None:
            self._send = original
            self._connection = connection
            self._url = url
            self._kw = kw

        def handle_request(self, request: Any) -> Any:
            headers = dict(request.headers.items())
            self._send(self._connection, request.method, self._url, request.content, headers)
            answer = _originals["getresponse"](self._connection)
            return httpx_module.Response(
                answer.status, headers=answer.getheaders(), stream=_stream(answer, httpx_module)
            )

    _UPSTREAMS[name] = _Original
    return _Original


def _stream(answer: Any, httpx_module: Any) -> Any:
    class _Stream(httpx_module.SyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Iterator[bytes]:
            while chunk := answer.read(64 * 1024):
                yield chunk

        def close(self) -> None:
            answer.close()

    return _Stream()
