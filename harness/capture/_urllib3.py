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

Status retries run as urllib3 runs them, since the patch replaces the method that does them: a
`Retry` with a `status_forcelist` (requests' `HTTPAdapter(max_retries=Retry(...))`), or a
`Retry-After` answer urllib3 honours, is asked of each captured answer with urllib3's own
`Retry.is_retry`, `increment` (a `MaxRetryError` when they are spent and `raise_on_status`) and
`sleep`, and the request is sent again. Every attempt is its own captured exchange, recorded
with the answer it got (a 503, then the 200), as the SDKs' own retries over httpx are: replay
answers the attempts in the order they were recorded, so the client retries in replay exactly as
it did when recording, and a change to its retry policy shows as a request with no recorded
answer. Without an upstream the original `urlopen` sends each attempt with the status retries
taken out of its `Retry` (its connection retries stay), so they are not done twice. Redirects a
pool's own `urlopen` would follow (`redirect=True` on a pool called directly) are not: `requests`
and `PoolManager` follow them above `urlopen`, and botocore does not follow them.

botocore wraps whatever `urlopen` raises in an `HTTPClientError`, which its retry handler takes
for a connection error and retries (three times, then raises it): a capture error (a replay
mismatch, a request with no recorded answer, a refused late request) is not one, so while the
capture is on, botocore's `URLLib3Session.send` raises it as it is, once, and botocore gives it
to the caller without a retry.

urllib3 is imported only when the project already has it installed, botocore likewise; neither
is a dependency.
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

Current = Callable[[str], "tuple[Receiver, CaptureConfig] | None"]  # given the request's host


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def install(current: Current, httpx_module: Any) -> None:
    """Patch `HTTPConnectionPool.urlopen` if urllib3 is installed (else nothing), and botocore's
    `URLLib3Session.send` if botocore is."""
    if "urlopen" in _originals or not _installed("urllib3"):
        return
    pool = importlib.import_module("urllib3.connectionpool").HTTPConnectionPool
    original = pool.__dict__["urlopen"]
    _originals["urlopen"] = original
    pool.urlopen = _patched(original, current, httpx_module)
    if _installed("botocore"):
        session = importlib.import_module("botocore.httpsession").URLLib3Session
        _originals["send"] = session.__dict__["send"]
        session.send = _unwrapping(_originals["send"])


def uninstall() -> None:
    original = _originals.pop("urlopen", None)
    if original is not None:
        importlib.import_module("urllib3.connectionpool").HTTPConnectionPool.urlopen = original
    send = _originals.pop("send", None)
    if send is not None:
        importlib.import_module("botocore.httpsession").URLLib3Session.send = send


def _unwrapping(original: Any) -> Any:
    """botocore's `send`, raising a capture error as it is rather than as the `HTTPClientError`
    botocore wraps it in (and would retry)."""
    from harness._shared._errors import CaptureError

    @functools.wraps(original)
    def send(self: Any, request: Any) -> Any:
        __tracebackhide__ = True
        try:
            return original(self, request)
        except Exception as error:
            wrapped = getattr(error, "kwargs", None)
            inner = wrapped.get("error") if isinstance(wrapped, dict) else None
            if isinstance(inner, CaptureError):
                raise inner from None
            raise

    return send


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
        if args:
            return original(pool, method, url, body, *args, **kw)
        scheme, host = _origin(pool)
        if "://" in url:  # through a plain-HTTP proxy: the pool is the proxy's, the URL whole
            parts = urlsplit(url)
            scheme, host = parts.scheme, parts.netloc.rpartition("@")[2]
        active = current(host)
        if active is None:
            return original(pool, method, url, body, *args, **kw)
        session, config = active
        if not config.captures(host):
            return original(pool, method, url, body, *args, **kw)
        from harness.capture._transport import capture_transport

        full = url if "://" in url else f"{scheme}://{host}{url}"
        data = body_bytes(body)  # read once: every attempt sends these bytes
        headers = [(text(k), text(v)) for k, v in dict(kw.get("headers") or {}).items()]
        kw = {**kw, "retries": _retry_of(pool, kw)}
        while True:
            request = httpx_module.Request(method, full, headers=headers, content=data)
            upstream = _upstream_class(httpx_module)(original, pool, url, kw)
            transport = capture_transport(session, httpx_module, upstream=upstream)
            answer = _urllib3_response(transport.handle_request(request), method, full, kw)
            retries = _status_retry(pool, method, url, kw["retries"], answer)
            if retries is None:
                return answer
            kw["retries"] = retries

    urlopen.__doc__ = original.__doc__
    urlopen.__wrapped__ = original  # type: ignore[attr-defined]
    return urlopen


def _retry_of(pool: Any, kw: dict[str, Any]) -> Any:
    """The call's `Retry`, as urllib3's `urlopen` makes it of what it was given."""
    from urllib3.util.retry import Retry

    retries = kw.get("retries")
    if isinstance(retries, Retry):
        return retries
    return Retry.from_int(retries, redirect=kw.get("redirect", True), default=pool.retries)


def _status_retry(pool: Any, method: str, url: str, retries: Any, answer: Any) -> Any:
    """What urllib3's `urlopen` does with an answer's status: the `Retry` of the next attempt
    (after its back-off or `Retry-After` wait), or None to hand `answer` to the caller; raises
    urllib3's `MaxRetryError` when the retries are spent and `raise_on_status` says so."""
    from urllib3.exceptions import MaxRetryError

    if not retries.is_retry(method, answer.status, bool(answer.headers.get("Retry-After"))):
        return None
    try:
        following = retries.increment(method, url, response=answer, _pool=pool)
    except MaxRetryError:
        if retries.raise_on_status:
            answer.drain_conn()
            raise
        return None
    answer.drain_conn()  # read to its end: its exchange is recorded whole
    following.sleep(answer)
    return following


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
            retries = kw.get("retries")
            if retries is not None:  # the status retries are the capture's, each attempt seen
                kw["retries"] = retries.new(status_forcelist=None, respect_retry_after_header=False)
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
