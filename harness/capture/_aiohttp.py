"""Intercept aiohttp (`ClientSession`: google-genai's `client.aio`, litellm's aiohttp transport).

Every request of an `aiohttp.ClientSession` goes through `ClientSession._request` (`get`, `post`,
`request`, `async with session.post(...)`). While a capture session is on, a request to a captured
host is turned into an `httpx` request (the session's base URL, default headers, `params`, and a
`json=` or `data=` body encoded as aiohttp would) and sent through the capture session's async
httpx transport: recorded, replayed, matched and gated like httpx traffic; `harness_upstream`
serves it in record mode, or, without one, httpx sends it to the network. The answer comes back
as an `aiohttp.ClientResponse` whose `content` is fed as the capture's answer arrives (a stream
reaches `readline()` and `iter_chunked()` as it is written). Every other host is not touched.

vcrpy (pytest-recording) patches the same `ClientSession._request` while a cassette is open; when
it patches after the capture did, its wrapper would see the captured request first and refuse it
(`CannotOverwriteExistingCassetteException`). So while capturing, vcrpy's aiohttp wrapper factory
(`vcr.stubs.aiohttp_stubs.vcr_request`, looked up by vcrpy each time a cassette opens) is wrapped
too: a captured request never reaches vcrpy, as with httpx, and every other one still does.

aiohttp is imported only when the project already has it installed; it is never a dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import json as json_module
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from harness.capture._urllib3 import text

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._recording import Receiver

__all__ = ["install", "uninstall"]

Current = Callable[[], "tuple[Receiver, CaptureConfig] | None"]
_originals: dict[str, Any] = {}


def install(current: Current, httpx_module: Any) -> None:
    """Patch `ClientSession._request` if aiohttp is installed (else nothing)."""
    try:
        if _originals or importlib.util.find_spec("aiohttp") is None:
            return
    except (ImportError, ValueError):
        return
    kind = importlib.import_module("aiohttp").ClientSession
    _originals["_request"] = kind.__dict__["_request"]
    kind._request = _patched(_originals["_request"], current, httpx_module)
    stubs = _vcr_stubs()
    if stubs is not None:
        factory = _originals["vcr_request"] = stubs.vcr_request

        def vcr_request(cassette: Any, real_request: Any) -> Any:
            return _patched(factory(cassette, real_request), current, httpx_module)

        stubs.vcr_request = vcr_request


def uninstall() -> None:
    original = _originals.pop("_request", None)
    if original is not None:
        importlib.import_module("aiohttp").ClientSession._request = original
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


def _patched(original: Any, current: Current, httpx_module: Any) -> Any:
    async def _request(client: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        active = current()
        if active is None:
            return await original(client, method, str_or_url, **kwargs)
        session, config = active
        url = _url(client, str_or_url, kwargs.get("params"))
        host = url.host if url.explicit_port is None else f"{url.host}:{url.port}"
        if not config.captures(str(host)):
            return await original(client, method, str_or_url, **kwargs)
        from harness.capture._transport import capture_transport

        headers, body = _headers_and_body(client, kwargs)
        request = httpx_module.Request(method, str(url), headers=headers, content=body)
        transport = capture_transport(session, httpx_module, upstream=None)
        answer = await transport.handle_async_request(request)
        return _client_response(client, method, url, request, answer, len(body))

    _request.__doc__ = original.__doc__
    _request.__wrapped__ = original  # type: ignore[attr-defined]
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


def _headers_and_body(client: Any, kwargs: dict[str, Any]) -> tuple[list[tuple[str, str]], bytes]:
    from multidict import CIMultiDict

    headers: CIMultiDict[str] = CIMultiDict(getattr(client, "_default_headers", None) or {})
    for name, value in CIMultiDict(kwargs.get("headers") or {}).items():
        headers[name] = value
    body = b""
    if kwargs.get("json") is not None:
        serialize = getattr(client, "_json_serialize", json_module.dumps)
        body = serialize(kwargs["json"]).encode("utf-8")
        headers.setdefault("Content-Type", "application/json")
    elif kwargs.get("data") is not None:
        data = kwargs["data"]
        if isinstance(data, bytes | bytearray):
            body = bytes(data)
        elif isinstance(data, str):
            body = data.encode("utf-8")
        elif isinstance(data, dict):
            body = urlencode(data).encode("ascii")
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        else:
            body = bytes(getattr(data, "_value", b"")) or str(data).encode("utf-8")
    return [(text(k), text(v)) for k, v in headers.items()], body


class _Written:
    """What aiohttp asks of the request writer of an answered request: its size."""

    def __init__(self, size: int) -> None:
        self.output_size = size


def _client_response(
    client: Any, method: str, url: Any, request: Any, answer: Any, size: int
) -> Any:
    from aiohttp import ClientResponse
    from aiohttp.base_protocol import BaseProtocol
    from aiohttp.client_reqrep import RequestInfo
    from aiohttp.helpers import TimerNoop
    from aiohttp.streams import StreamReader
    from multidict import CIMultiDict, CIMultiDictProxy

    loop = asyncio.get_running_loop()
    sent = CIMultiDictProxy(CIMultiDict(list(request.headers.items())))
    response = ClientResponse(
        method,
        url,
        writer=None,
        continue100=None,
        timer=TimerNoop(),
        request_info=RequestInfo(url, method, sent, url),
        traces=[],
        loop=loop,
        session=client,
        stream_writer=_Written(size),  # type: ignore[arg-type]
    )
    pairs = list(answer.headers.multi_items())
    response.status = answer.status_code
    response.reason = answer.reason_phrase
    response._headers = CIMultiDictProxy(CIMultiDict(pairs))
    response._raw_headers = tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs)
    protocol = _protocol(BaseProtocol)(loop)
    content = StreamReader(protocol, 2**16, loop=loop)
    response.content = content
    if answer.is_stream_consumed and hasattr(answer, "_content"):  # replayed: whole already
        content.feed_data(answer.content)
        content.feed_eof()
    else:
        feeding = loop.create_task(_feed(answer, content, protocol.flowing))
        response._harness_feed = feeding  # type: ignore[attr-defined]
        response._connection = _Fed(feeding)  # type: ignore[assignment]
    return response


class _Fed:
    """The response's "connection": releasing or closing the response (the client read enough,
    or left `async with`) stops feeding it, so an endless stream ends where the client left."""

    protocol = None

    def __init__(self, feeding: asyncio.Task[None]) -> None:
        self._feeding = feeding

    def release(self) -> None:
        if not self._feeding.done():
            with contextlib.suppress(RuntimeError):  # its loop closed already (a late `__del__`)
                self._feeding.cancel()

    close = release


_PROTOCOLS: list[type[Any]] = []


def _protocol(base: type[Any]) -> type[Any]:
    """A protocol that stays "connected" while the capture feeds the answer (no socket), and
    holds the feed while the reader's buffer is full (aiohttp's flow control)."""
    if not _PROTOCOLS:

        def __init__(self: Any, loop: asyncio.AbstractEventLoop) -> None:
            base.__init__(self, loop)
            self.flowing = asyncio.Event()
            self.flowing.set()

        def pause_reading(self: Any, *args: Any, **kwargs: Any) -> None:
            self._reading_paused = True
            self.flowing.clear()

        def resume_reading(self: Any, *args: Any, **kwargs: Any) -> None:
            self._reading_paused = False
            self.flowing.set()

        members = {
            "__init__": __init__,
            "connected": property(lambda _: True),
            "pause_reading": pause_reading,
            "resume_reading": resume_reading,
        }
        _PROTOCOLS.append(type("CaptureFeed", (base,), members))
    return _PROTOCOLS[0]


async def _feed(answer: Any, content: Any, flowing: asyncio.Event) -> None:
    try:
        async for chunk in answer.aiter_raw():
            content.feed_data(chunk)
            await flowing.wait()
    except Exception as error:  # the upstream failed mid-answer: the reader sees it
        content.set_exception(error)
        return
    finally:
        await answer.aclose()
    content.feed_eof()
