"""A captured aiohttp request's connection: aiohttp writes the request to it, the capture answers.

The capture stands where aiohttp's connector would open a socket (`harness.capture._aiohttp`
patches `BaseConnector.connect`). So aiohttp itself does everything above the socket, as it does
without capture: it turns `data=` into a payload (bytes, text, forms, `FormData` with files,
`json=`, file objects, async generators, `Payload` objects, `MultipartWriter`, `StreamReader`),
runs the session's middlewares and trace configs, adds its cookies and auth, follows redirects,
writes the request as HTTP/1.1, and reads the answer with its own response parser.

This connection's transport parses the bytes aiohttp writes with aiohttp's own request parser
(the body de-chunked, left compressed as sent), reads the body once, and sends the request through
the session's capture transport as an httpx request (recorded, replayed, matched and gated like
httpx traffic). The answer is written back to aiohttp's response parser as HTTP/1.1: a replayed
body whole, with its `Content-Length`; a forwarded one chunked, each chunk as it arrives, held
while aiohttp's reader is full (its flow control pauses this transport) and stopped when the
client releases the response. Nothing here opens a socket; the connection is never pooled.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Final

from harness.capture._cassette import FRAMING

if TYPE_CHECKING:
    from harness.capture._recording import Receiver

__all__ = ["connection"]

# The request head is aiohttp's own, whatever its size: the parser's limits are not the client's.
_LIMIT: Final = 2**20
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


def connection(connector: Any, request: Any, session: Receiver, httpx_module: Any) -> Any:
    """An `aiohttp` `Connection` for `request` whose far end is the capture `session`."""
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.connector import Connection

    loop = asyncio.get_running_loop()
    protocol = ResponseHandler(loop)
    wire = _Wire(loop, protocol, request, session, httpx_module)
    protocol.connection_made(wire)
    return Connection(_Owner(connector), request.connection_key, protocol, loop)  # type: ignore[arg-type]


class _Owner:
    """The connection's connector as aiohttp asks it: its `force_close` setting (the session's
    connector's), and a release that closes the connection rather than pooling it."""

    def __init__(self, connector: Any) -> None:
        self.force_close = bool(getattr(connector, "force_close", False))

    def _release(self, key: Any, protocol: Any, *, should_close: bool = False) -> None:
        protocol.close()


class _Sink:
    """What the request parser's body reader asks of its protocol: nothing to pause (the whole
    body is in memory already, written by aiohttp)."""

    _reading_paused = False

    def pause_reading(self, *args: Any, **kwargs: Any) -> None:
        return None

    def resume_reading(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Wire(asyncio.Transport):
    """The transport aiohttp writes the request to and its response parser reads from."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        protocol: Any,
        request: Any,
        session: Receiver,
        httpx_module: Any,
    ) -> None:
        from aiohttp.http_parser import HttpRequestParser

        super().__init__()
        self._loop = loop
        self._protocol = protocol
        self._request = request
        self._session = session
        self._httpx = httpx_module
        self._parser = HttpRequestParser(
            _Sink(),  # type: ignore[arg-type]
            loop,
            _LIMIT,
            max_line_size=_LIMIT,
            max_field_size=_LIMIT,
            max_headers=_LIMIT,
            auto_decompress=False,  # the capture judges a compressed body decoded (0029)
        )
        self._message: Any = None
        self._payload: Any = None
        self._exchange: asyncio.Task[None] | None = None
        self._closed = False
        self.flowing = asyncio.Event()
        self.flowing.set()

    # -- what aiohttp writes: the request -----------------------------------------------------

    def write(self, data: Any) -> None:
        if self._closed or self._exchange is not None:
            return
        try:
            messages, _, _ = self._parser.feed_data(bytes(data))
        except Exception as error:  # not HTTP/1.1 aiohttp would write: fail the request
            self._protocol.set_exception(error)
            return
        for message, payload in messages:
            self._message, self._payload = message, payload
            if message.headers.get("expect", "").lower() == "100-continue":
                self._protocol.data_received(_CONTINUE)  # aiohttp then writes the body
        if self._payload is not None and self._payload.is_eof():
            body = self._payload.read_nowait(-1)
            self._exchange = self._loop.create_task(self._exchanged(self._message, body))

    def is_closing(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._exchange is not None and not self._exchange.done():
            self._exchange.cancel()
        with contextlib.suppress(RuntimeError):  # its loop closed already (a late `__del__`)
            self._loop.call_soon(self._protocol.connection_lost, None)

    abort = close

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def get_write_buffer_size(self) -> int:
        return 0

    def can_write_eof(self) -> bool:
        return False

    # -- what aiohttp reads: the answer -------------------------------------------------------

    def pause_reading(self) -> None:
        self.flowing.clear()

    def resume_reading(self) -> None:
        self.flowing.set()

    def is_reading(self) -> bool:
        return self.flowing.is_set()

    async def _exchanged(self, message: Any, body: bytes) -> None:
        from harness.capture._transport import capture_transport

        path = str(message.path)
        url = path if "://" in path else f"{self._request.url.origin()}{path}"
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in message.raw_headers
            if name.lower() != b"transfer-encoding"  # the body is whole: sent with its length
        ]
        request = self._httpx.Request(message.method, url, headers=headers, content=body)
        transport = capture_transport(self._session, self._httpx, upstream=None)
        try:
            answer = await transport.handle_async_request(request)
        except Exception as error:  # a capture error, or the upstream's: the caller gets it
            self._protocol.set_exception(error)
            return
        try:
            await self._answered(str(message.method), answer)
        except Exception as error:  # the upstream failed mid-answer: a broken connection
            self._protocol.connection_lost(error)
        finally:
            await answer.aclose()

    async def _answered(self, method: str, answer: Any) -> None:
        status = int(answer.status_code)
        head = [f"HTTP/1.1 {status} {answer.reason_phrase}".rstrip()]
        head += [f"{k}: {v}" for k, v in answer.headers.multi_items() if k.lower() not in FRAMING]
        if method == "HEAD" or status in (204, 304) or status < 200:
            self._feed("\r\n".join(head).encode("latin-1") + b"\r\n\r\n")
            return
        if answer.is_stream_consumed and hasattr(answer, "_content"):  # replayed: whole already
            content = bytes(answer.content)
            head.append(f"Content-Length: {len(content)}")
            self._feed("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + content)
            return
        head.append("Transfer-Encoding: chunked")
        self._feed("\r\n".join(head).encode("latin-1") + b"\r\n\r\n")
        async for chunk in answer.aiter_raw():
            if chunk:
                await self.flowing.wait()
                self._feed(b"%x\r\n%b\r\n" % (len(chunk), chunk))
        await self.flowing.wait()
        self._feed(b"0\r\n\r\n")

    def _feed(self, data: bytes) -> None:
        if not self._closed:
            self._protocol.data_received(data)
