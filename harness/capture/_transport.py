"""The capture transports: `httpx2` and plain `httpx`, sync and async, over one adapter.

The SDKs send JSON through `httpx2` (anthropic 2, openai 3) or plain `httpx` (older majors,
many frameworks). One adapter class serves both libraries; the concrete class for a library is
made on first use, so the harness needs whichever of the two the project has, not both. A request
forwarded to an upstream of the other library is rebuilt in that library's types.

A forwarded answer reaches the client as it arrives, chunk by chunk, while it is recorded
(`harness.capture._recording`): an endless event stream does not hang the test, and a provider's
stream is read by the client while the model writes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING, Any, Final

from harness._shared._distribution import install_command
from harness._shared._errors import CaptureError, UsageError
from harness.capture._cassette import FRAMING, HttpResponse
from harness.capture._encodings import decoded_request

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from harness.capture._proof import Ticket
    from harness.capture._recording import Receiver, Recording

__all__ = [
    "capture_transport",
    "client_for",
    "installed_libraries",
    "library",
    "missing_library",
    "surfaced",
    "transport_class",
    "transport_for",
]

LIBRARIES: Final = ("httpx2", "httpx")


def library(name: str) -> Any:
    """The `httpx2` or `httpx` module; one line naming what to install when it is missing."""
    if name not in LIBRARIES:
        raise UsageError(f"unknown HTTP library {name!r}; expected one of {', '.join(LIBRARIES)}")
    try:
        return importlib.import_module(name)
    except ImportError:
        raise UsageError(missing_library(name)) from None


def installed_libraries() -> list[str]:
    """The names in LIBRARIES that this environment can import, without importing them."""
    found = []
    for name in LIBRARIES:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):  # a broken or half-removed install counts as absent
            continue
    return found


def missing_library(name: str | None = None) -> str:
    """What to install when `name` (or, with None, either library) is missing: one line."""
    extra = install_command("capture")  # brings httpx2
    if name is None:
        return (
            "capture needs httpx2 or httpx, and neither is installed: "
            f"{extra} (or install the SDK you test: anthropic and openai bring one)"
        )
    wanted = extra if name == "httpx2" else f"pip install {name}"
    other = [library for library in installed_libraries() if library != name]
    if other:
        return (
            f"capturing through {name} needs the {name} package, which is not installed; this "
            f"environment has {other[0]}: use its clients (header_capture.{other[0]}_client()) "
            f"or {wanted}"
        )
    return f"capturing through {name} needs the {name} package, which is not installed: {wanted}"


def transport_for(session: Receiver, name: str) -> Any:
    """A transport of library `name` (sync and async alike) that sends through `session`."""
    return transport_class(library(name))(session)


def capture_transport(session: Receiver, module: Any, *, upstream: object) -> Any:
    """A transport of `module` sending through `session`, forwarding to `upstream` (a client's
    own transport) when the session has no upstream of its own."""
    return transport_class(module)(session, upstream=upstream)


def client_for(session: Receiver, name: str, *, asynchronous: bool, **kwargs: Any) -> Any:
    """A client of library `name` whose transport sends through `session`."""
    module = library(name)
    kind = module.AsyncClient if asynchronous else module.Client
    return kind(transport=transport_class(module)(session), **kwargs)


class _Adapter:
    """The transport logic shared by the `httpx2` and `httpx` flavours."""

    _module: Any = None

    def __init__(self, session: Receiver, *, upstream: object | None = None) -> None:
        self.session = session
        self.upstream = upstream  # the intercepted client's own transport, if any

    @property
    def capture_session(self) -> Receiver:
        return self.session

    def _upstream(self, asynchronous: bool) -> Any:
        if self.upstream is not None and self.session.upstream is None:
            return self.upstream
        return self.session.upstream_for(self._module, asynchronous=asynchronous)

    def _ticket(self, request: Any, body: bytes) -> Ticket:
        """The session's decision on `request`, judged on its body as the provider reads it
        (decompressed: `_encodings`); the upstream still gets the bytes sent."""
        __tracebackhide__ = True
        headers = [(str(k).lower(), str(v)) for k, v in request.headers.multi_items()]
        body, headers, note = decoded_request(body, headers)
        if note is not None:
            notes = getattr(self.session, "notes", None)
            if isinstance(notes, list) and note not in notes:
                notes.append(note)
        try:
            return self.session.receive(str(request.method), str(request.url), headers, body)
        except CaptureError as error:
            raise surfaced(error) from None

    def _reply(self, request: Any, response: HttpResponse) -> Any:
        headers = [(k, v) for k, v in response.headers if k.lower() not in FRAMING]
        return self._module.Response(
            response.status, headers=headers, content=response.body, request=request
        )

    def _outgoing(self, request: Any, upstream: object) -> Any:
        module = _module_of(upstream)
        if module is None or _same_module(module, self._module):
            return request
        return module.Request(
            request.method, str(request.url), headers=request.headers.raw, content=request.content
        )

    def _streamed(self, request: Any, response: Any, stream: Any) -> Any:
        """The upstream's answer for the client: its status and headers now (less the framing:
        the body is handed over decoded), its body as it arrives, recorded beside."""
        headers = [
            (k.lower(), v) for k, v in response.headers.multi_items() if k.lower() not in FRAMING
        ]
        return self._module.Response(
            response.status_code, headers=headers, stream=stream, request=request
        )

    def handle_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        body = bytes(request.read())
        ticket = self._ticket(request, body)
        if ticket.reply is not None:
            return self._reply(request, ticket.reply)
        upstream = self._upstream(asynchronous=False)
        response = upstream.handle_request(self._outgoing(request, upstream))
        recording = self.session.recording(
            ticket, response.status_code, response.headers.multi_items()
        )
        stream = stream_classes(self._module)[0](response, recording)
        return self._streamed(request, response, stream)

    async def handle_async_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        body = bytes(await request.aread())
        ticket = self._ticket(request, body)
        if ticket.reply is not None:
            return self._reply(request, ticket.reply)
        upstream = self._upstream(asynchronous=True)
        response = await upstream.handle_async_request(self._outgoing(request, upstream))
        recording = self.session.recording(
            ticket, response.status_code, response.headers.multi_items()
        )
        stream = stream_classes(self._module)[1](response, recording)
        return self._streamed(request, response, stream)

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class _SyncRecorded:
    """A forwarded answer's body for a sync client: each chunk handed over as it arrives, and
    fed to its recording; closing it (the client read enough) ends the recording there."""

    def __init__(self, response: Any, recording: Recording) -> None:
        self._response = response
        self._recording = recording

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._response.iter_bytes())
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except BaseException:
                self._recording.abandon()  # the upstream failed: nothing is stored
                raise
            self._recording.feed(chunk)
            yield chunk
        self._recording.end()

    def close(self) -> None:
        try:
            self._response.close()
        finally:
            self._recording.end()


class _AsyncRecorded:
    """The same for an async client. A stand-in that answers with a sync stream (a generator:
    the one `harness_upstream` serves every client, aiohttp's too) is read in a worker thread,
    chunk by chunk, so the loop keeps running while the stand-in waits."""

    def __init__(self, response: Any, recording: Recording) -> None:
        self._response = response
        self._recording = recording

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if hasattr(self._response.stream, "__aiter__"):
            chunks: Any = self._response.aiter_bytes()
            step: Any = chunks.__anext__
        else:
            step = _threaded(iter(self._response.iter_bytes()))
        while True:
            try:
                chunk = await step()
            except StopAsyncIteration:
                break
            except (asyncio.CancelledError, GeneratorExit):  # the client stopped reading
                self._recording.end()
                raise
            except BaseException:
                self._recording.abandon()
                raise
            self._recording.feed(chunk)
            yield chunk
        self._recording.end()

    async def aclose(self) -> None:
        try:
            if hasattr(self._response.stream, "aclose"):
                await self._response.aclose()
            else:
                with contextlib.suppress(ValueError):  # its generator busy in the worker thread
                    self._response.close()
        finally:
            self._recording.end()


def _threaded(chunks: Iterator[bytes]) -> Any:
    """An async `__anext__` over a sync iterator, each step in a worker thread under asyncio (in
    the loop's thread under another event loop)."""
    end = object()

    def step() -> Any:
        return next(chunks, end)

    async def anext() -> bytes:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            chunk = step()
        else:
            chunk = await loop.run_in_executor(None, step)
        if chunk is end:
            raise StopAsyncIteration
        return bytes(chunk)

    return anext


_STREAMS: dict[str, tuple[type[Any], type[Any]]] = {}


def stream_classes(module: Any) -> tuple[type[Any], type[Any]]:
    """The recorded-body stream classes (sync, async) of an `httpx`-like module."""
    name = module.__name__
    if name not in _STREAMS:
        _STREAMS[name] = (
            type("RecordedStream", (_SyncRecorded, module.SyncByteStream), {}),
            type("AsyncRecordedStream", (_AsyncRecorded, module.AsyncByteStream), {}),
        )
    return _STREAMS[name]


_CLASSES: dict[str, type[Any]] = {}


def transport_class(module: Any) -> type[Any]:
    """The capture transport class for an `httpx`-like module (plain `httpx`, or `httpx2`)."""
    name = module.__name__
    if name not in _CLASSES:
        _CLASSES[name] = type(
            "CaptureTransport" if name == "httpx2" else "HttpxCaptureTransport",
            (_Adapter, module.BaseTransport, module.AsyncBaseTransport),
            {
                "_module": module,
                "__module__": __name__,
                "__doc__": f"The `{name}` transport of a CaptureSession (sync and async clients).",
            },
        )
    return _CLASSES[name]


def _module_of(transport: object) -> Any:
    for cls in type(transport).__mro__:
        top = getattr(cls, "__module__", "").partition(".")[0]
        if top in LIBRARIES and top in sys.modules:
            return sys.modules[top]
    return None


def _same_module(a: Any, b: Any) -> bool:
    return a is b or (a is not None and b is not None and a.Request is b.Request)


_SDK_ERRORS: Final = (("anthropic", "AnthropicError"), ("openai", "OpenAIError"))
_SURFACED: dict[tuple[type[Any], ...], type[Any]] = {}


def surfaced(error: CaptureError) -> CaptureError:
    """`error` as an instance that also derives from the loaded SDKs' base errors.

    The SDKs wrap any other transport exception in a connection error and retry it with
    back-off; their own errors they raise as they are. So a cassette error reaches the test
    directly, once, still an instance of its harness class.
    """
    bases: list[type[Any]] = []
    for module_name, class_name in _SDK_ERRORS:
        module = sys.modules.get(module_name)
        base = getattr(module, class_name, None) if module is not None else None
        if isinstance(base, type) and issubclass(base, Exception):
            bases.append(base)
    if not bases:
        return error
    key = (type(error), *bases)
    if key not in _SURFACED:
        cls = type(error)
        _SURFACED[key] = type(cls.__name__, (cls, *bases), {"__module__": cls.__module__})
    made: Any = _SURFACED[key]
    surfaced: CaptureError = made.__new__(made)
    surfaced.__dict__.update(error.__dict__)
    surfaced.args = error.args
    return surfaced
