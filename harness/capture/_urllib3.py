"""Intercept urllib3, and with it `requests` and botocore (boto3), while a capture session is on.

`requests` sends through urllib3's `HTTPConnectionPool.urlopen`; so does botocore
(`URLLib3Session.send`, boto3's Bedrock Converse, ConverseStream and InvokeModel, the AWS
event-stream framing included: it is the answer's body, passed through untouched). Patching that
one method sees all three, sync, with their pools, proxies and retries left to the library.

A request to a captured host is turned into an `httpx` request and sent through the session's
`httpx` capture transport (`harness.capture._transport`), so it is recorded, replayed, matched
and gated exactly like httpx traffic, and `harness_upstream` (one httpx-style transport) serves
it in record mode. Without an upstream it goes where the code sent it, through the original
`urlopen`. The answer comes back as a urllib3 `HTTPResponse` whose body is read as it arrives
(a stream reaches the client while it is recorded). Every other host is not touched.

urllib3 is imported only when the project already has it installed; it is never a dependency.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._recording import Receiver

__all__ = ["Body", "body_bytes", "install", "text", "uninstall"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_originals: dict[str, Any] = {}

Current = Callable[[], "tuple[Receiver, CaptureConfig] | None"]


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def install(current: Current, httpx_module: Any) -> None:
    """Patch `HTTPConnectionPool.urlopen` if urllib3 is installed (else nothing)."""
    if "urlopen" in _originals or not _installed("urllib3"):
        return
    pool = importlib.import_module("urllib3.connectionpool").HTTPConnectionPool
    original = pool.__dict__["urlopen"]
    _originals["urlopen"] = original
    pool.urlopen = _patched(original, current, httpx_module)


def uninstall() -> None:
    original = _originals.pop("urlopen", None)
    if original is not None:
        importlib.import_module("urllib3.connectionpool").HTTPConnectionPool.urlopen = original


def _origin(pool: Any) -> tuple[str, str]:
    """The pool's scheme and its host as the capture names hosts (`host` or `host:port`)."""
    scheme = str(pool.scheme)
    host = str(pool.host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    port = pool.port
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        return scheme, host
    return scheme, f"{host}:{port}"


def body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if hasattr(body, "read"):
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(part.encode("utf-8") if isinstance(part, str) else bytes(part) for part in body)


def text(value: Any) -> str:
    """A header name or value as text (botocore sends bytes)."""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    return str(value)


def _patched(original: Any, current: Current, httpx_module: Any) -> Any:
    def urlopen(pool: Any, method: str, url: str, body: Any = None, *args: Any, **kw: Any) -> Any:
        __tracebackhide__ = True
        active = current()
        if active is None or args:
            return original(pool, method, url, body, *args, **kw)
        session, config = active
        scheme, host = _origin(pool)
        if "://" in url:  # through a plain-HTTP proxy: the pool is the proxy's, the URL whole
            parts = urlsplit(url)
            scheme, host = parts.scheme, parts.netloc.rpartition("@")[2]
        if not config.captures(host):
            return original(pool, method, url, body, *args, **kw)
        from harness.capture._transport import capture_transport

        full = url if "://" in url else f"{scheme}://{host}{url}"
        data = body_bytes(body)
        headers = [(text(k), text(v)) for k, v in dict(kw.get("headers") or {}).items()]
        request = httpx_module.Request(method, full, headers=headers, content=data)
        upstream = _upstream_class(httpx_module)(original, pool, url, kw)
        transport = capture_transport(session, httpx_module, upstream=upstream)
        response = transport.handle_request(request)
        return _urllib3_response(response, method, full, kw)

    urlopen.__doc__ = original.__doc__
    urlopen.__wrapped__ = original  # type: ignore[attr-defined]
    return urlopen


class Body(io.RawIOBase):
    """An httpx answer's body as the file urllib3 reads: chunk by chunk, as it arrives."""

    def __init__(self, response: Any, head: bytes = b"") -> None:
        self._response = response
        # a replayed answer is read already (built on its bytes); a forwarded one streams
        read = response.is_stream_consumed and hasattr(response, "_content")
        self._chunks: Iterator[bytes] = iter([response.content] if read else response.iter_raw())
        self._left = head

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        """What one chunk holds (up to `size`): a stream's event as soon as it arrives."""
        return self.read(size if size and size > 0 else 2**16) or b""

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size

    def close(self) -> None:
        if not self.closed:
            try:
                self._response.close()
            finally:
                super().close()


def _urllib3_response(response: Any, method: str, url: str, kw: dict[str, Any]) -> Any:
    from urllib3 import HTTPHeaderDict
    from urllib3.response import HTTPResponse

    headers = HTTPHeaderDict()
    for name, value in response.headers.multi_items():
        headers.add(name, value)
    return _streaming_class(HTTPResponse)(
        body=Body(response),
        headers=headers,
        status=response.status_code,
        reason=response.reason_phrase,
        preload_content=kw.get("preload_content", True),
        decode_content=kw.get("decode_content", True),
        request_method=method,
        request_url=url,
        enforce_content_length=False,
    )


@functools.cache
def _streaming_class(base: type[Any]) -> type[Any]:
    """urllib3's response whose `stream()` (requests' `iter_content`, `iter_lines`) yields each
    chunk as it arrives, as it does for a chunked answer off the wire, instead of waiting to fill
    `amt` bytes: the capture's answer has no chunked framing to read it by."""

    def stream(self: Any, amt: int | None = 2**16, decode_content: bool | None = None) -> Any:
        if amt == 0:
            return
        while True:
            data = self.read1(amt=amt, decode_content=decode_content)
            if data:
                yield data
            elif self._fp is None or self._fp.closed or not self._decoded_buffer:
                return

    return type("CapturedResponse", (base,), {"stream": stream})


_UPSTREAMS: dict[str, type[Any]] = {}


def _upstream_class(httpx_module: Any) -> type[Any]:
    """An httpx transport that sends through the original `urlopen` of the pool the code chose
    (the network, a proxy, or a mock the code set up)."""
    name = httpx_module.__name__
    if name in _UPSTREAMS:
        return _UPSTREAMS[name]

    class _Original(httpx_module.BaseTransport):  # type: ignore[misc]
        def __init__(self, original: Any, pool: Any, url: str, kw: dict[str, Any]) -> None:
            self._send = original
            self._pool = pool
            self._url = url
            self._kw = kw

        def handle_request(self, request: Any) -> Any:
            kw = dict(self._kw)
            kw.update(preload_content=False, decode_content=False)
            kw["headers"] = dict(request.headers.items())
            answer = self._send(self._pool, request.method, self._url, request.content, **kw)
            return httpx_module.Response(
                answer.status,
                headers=list(answer.headers.items()),
                stream=_Raw(answer, httpx_module),
            )

    _UPSTREAMS[name] = _Original
    return _Original


def _Raw(answer: Any, httpx_module: Any) -> Any:
    class _Stream(httpx_module.SyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Iterator[bytes]:
            yield from answer.stream(64 * 1024, decode_content=False)

        def close(self) -> None:
            answer.release_conn()

    return _Stream()
