"""Running a user's build once, and what it produced: the requests it sent, or the header it
returned, as cache views.

`prove_stable` runs a build many times (`harness.prove._stable`), a `PYTHONHASHSEED` child runs it
once (`harness.prove._hashseed`); both call and observe a build here.

A build is a plain function or an `async def` (or returns an awaitable); it takes the units in
an order, or nothing. An async build runs on a fresh event loop of its own (`asyncio.run`, so a
perturbed run's loop); when the caller's thread already runs an event loop (an async test), the
build runs on a worker thread instead, so it still gets a fresh loop.

What is judged is what was sent: when the build sent requests through a capture session, those
requests are compared and its return value is ignored (with a note). Only when nothing was sent
is the return value judged, and it must be a header: a harness `Header` or `Request`, a
`CacheView`, a provider request body (`dict`, JSON `str` or `bytes`), the harness's own request
or header dict, or a tool list. Anything else (an answer, a status) is an error, never a pass.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from harness._shared._errors import UsageError
from harness._shared._views import (
    CacheView,
    canonical_bytes,
    view_of_header,
    view_of_mapping,
    view_of_request,
    view_of_tools,
)
from harness.agent._header import Header
from harness.agent._llm import Request
from harness.providers import split_request

if TYPE_CHECKING:
    from harness.capture._captured import Captured

__all__ = [
    "NotAHeader",
    "Observed",
    "call_build",
    "observe",
    "observed_of",
    "resolve",
    "unit_name",
    "view_of_value",
]

# Keys of a request body that hold prompt text in some provider's format: a dict with one of
# them is a request no provider recognised (compared whole), a dict with none is not a request.
_PROMPT_KEYS: Final = frozenset(
    {"tools", "system", "messages", "input", "instructions", "contents", "systemInstruction",
     "toolConfig", "prompt"}
)  # fmt: skip
_ENCODE = msgspec.json.Encoder(enc_hook=repr).encode


class NotAHeader(UsageError, TypeError):
    """A build returned something that is not a request header, and sent no request."""


def unit_name(unit: object) -> str:
    for attribute in ("name", "__qualname__", "__name__"):
        value = getattr(unit, attribute, None)
        if isinstance(value, str) and value:
            return value
    return repr(unit) if not isinstance(unit, str) else unit


def resolve(reference: str) -> Any:
    """The object a "module:qualified.name" string names."""
    module_name, sep, qualname = reference.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"{reference!r} is not a 'module:function' reference")
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


class Observed:
    """One request a build produced. `key` is cheap: two observations with equal keys are the
    same request; the cache views are built only when the keys differ."""

    __slots__ = ("_make", "_split", "body", "key")

    def __init__(
        self,
        key: bytes,
        make: Callable[[], tuple[CacheView, CacheView | None]],
        body: bytes | None = None,
    ) -> None:
        self.key = key
        self.body = body
        self._make = make
        self._split: tuple[CacheView, CacheView | None] | None = None

    @classmethod
    def of_view(
        cls, view: CacheView, prefix: CacheView | None = None, body: bytes | None = None
    ) -> Observed:
        return cls(canonical_bytes(view), lambda: (view, prefix), body)

    @property
    def view(self) -> CacheView:
        return self._views()[0]

    @property
    def prefix(self) -> CacheView | None:
        """The cacheable prefix when a provider split the request, else None."""
        return self._views()[1]

    def _views(self) -> tuple[CacheView, CacheView | None]:
        if self._split is None:
            self._split = self._make()
        return self._split


def view_of_value(value: Any) -> CacheView:
    """The cache view of whatever a build returned (see the module docstring)."""
    return observe(value).view


def observe(value: Any) -> Observed:
    """What a build returned, as an observation (NotAHeader when it is not a header)."""
    if isinstance(value, CacheView):
        return Observed.of_view(value)
    if isinstance(value, Header):
        return Observed(_ENCODE(value), lambda: (view_of_header(value), None))
    if isinstance(value, Request):
        return Observed(_ENCODE(value), lambda: (view_of_request(value), None))
    raw: bytes | None = None
    if isinstance(value, bytes | bytearray | memoryview | str):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            raise NotAHeader(
                f"build() returned a {type(value).__name__} that is not a JSON request body"
                f" ({_clip(raw)}); return the request body, a Header or a CacheView, or send the"
                " request through header_capture's client"
            ) from None
    if isinstance(value, Mapping):
        body = dict(value)
        if not set(body) & (_PROMPT_KEYS | {"config"}):
            raise NotAHeader(
                f"build() returned a dict without tools, system or messages (keys:"
                f" {', '.join(sorted(map(str, body))[:6]) or 'none'}): it looks like an answer, not"
                " a request header; return the request body, or send it through header_capture's"
                " client"
            )
        return Observed(raw if raw is not None else _ENCODE(body), lambda: _view_of_body(body), raw)
    if isinstance(value, list | tuple) and value and all(_is_tool(item) for item in value):
        tools = [_tool_schema(item) for item in value]
        return Observed(_ENCODE(tools), lambda: (view_of_tools(tools), None))
    raise NotAHeader(
        f"build() returned {type(value).__name__}; return a Header, Request, CacheView, request"
        " body (dict, str or bytes), a tool list, or None after sending through a capture session"
    )


def _view_of_body(body: dict[str, Any]) -> tuple[CacheView, CacheView | None]:
    split = split_request(body)
    if split is not None:
        return split.view, split.prefix
    return view_of_mapping(body), None


def _is_tool(item: Any) -> bool:
    if isinstance(item, Mapping):
        return "name" in item or "function" in item or "functionDeclarations" in item
    return isinstance(getattr(item, "name", None), str)


# A framework's tool object as the schema it sends: (attribute of the parameters, the name the
# schema gives them). openai-agents' FunctionTool, pydantic-ai's ToolDefinition, MCP's Tool.
_TOOL_PARAMETERS: Final = (
    ("params_json_schema", "parameters"),
    ("parameters_json_schema", "parameters"),
    ("inputSchema", "input_schema"),
    ("input_schema", "input_schema"),
    ("parameters", "parameters"),
)


def _tool_schema(item: Any) -> Any:
    """A returned tool as a JSON schema: a dict as it is; a framework's tool object as its name,
    description and parameters; anything else refused in one line naming what to return."""
    if isinstance(item, Mapping):
        return dict(item)
    for attribute, key in _TOOL_PARAMETERS:
        parameters = getattr(item, attribute, None)
        if isinstance(parameters, Mapping):
            schema: dict[str, Any] = {"name": item.name}
            description = getattr(item, "description", None)
            if isinstance(description, str):
                schema["description"] = description
            schema[key] = dict(parameters)
            return schema
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_none=True)
        if isinstance(dumped, Mapping):
            return dict(dumped)
    raise NotAHeader(
        f"build() returned a tool list holding {type(item).__name__} objects, whose schema the"
        " harness cannot read: return the tools' JSON schemas (dicts with name, description and"
        " parameters), the request body, or send the request through header_capture's client"
    )


def _clip(raw: bytes) -> str:
    """The start of what a build returned, for an error message: redacted before it is cut, so a
    key the build returned is not printed in part."""
    from harness._shared._printer import clip  # the error path only

    return repr(clip(raw.decode("utf-8", "replace"), 41))


def observed_of(
    result: Any,
    sent: Sequence[Captured] | None,
    captured: Callable[[], list[CacheView]] | None = None,
    notes: list[str] | None = None,
) -> list[Observed]:
    """The observations of one build: the requests it sent, else what it returned. Requests to
    endpoints that cache nothing (token counting, model listing...) are left out, with a note."""
    if sent:
        left_out = Counter(what for item in sent if (what := item.non_cache) is not None)
        if left_out:
            if notes is not None:
                note = (
                    "requests to endpoints that cache nothing were left out of the comparison: "
                    + ", ".join(f"{what} {count}" for what, count in sorted(left_out.items()))
                )
                if note not in notes:
                    notes.append(note)
            sent = [item for item in sent if item.non_cache is None]
            if not sent:
                raise NotAHeader(
                    "build() sent only requests to endpoints that cache nothing ("
                    + ", ".join(sorted(left_out))
                    + "): send the request the model answers, or return its header"
                )
    if sent:
        if result is not None and notes is not None:
            note = (
                f"build() sent {len(sent)} request(s) and returned a {type(result).__name__}:"
                " the requests as sent were compared; the return value was ignored"
            )
            if note not in notes:
                notes.append(note)
        return [_observe_sent(item) for item in sent]
    if result is None:
        if captured is not None:
            views = captured()
            if views:
                return [Observed.of_view(view) for view in views]
        raise NotAHeader(
            "build() returned None and no capture session recorded a request: return the header"
            " (a request body, CacheView, Header...) or send it through header_capture's client"
        )
    if (
        isinstance(result, list)
        and result
        and all(isinstance(r, CacheView | Header | Request) for r in result)
    ):
        return [observe(r) for r in result]
    return [observe(result)]


def _observe_sent(item: Captured) -> Observed:
    key = b"\n".join([item.method.encode(), item.url.encode(), _ENCODE(item.headers), item.body])

    def views() -> tuple[CacheView, CacheView | None]:
        if item.split is not None:
            return item.split.view, item.split.prefix
        body = item.json()
        whole = body if isinstance(body, dict) else {"body": item.body.decode("utf-8", "replace")}
        return view_of_mapping(whole), None

    return Observed(key, views, item.body)


def call_build(build: Callable[..., Any], *args: Any) -> Any:
    """Call `build(*args)`; an awaitable result runs to completion on a fresh event loop.

    In a thread that already runs an event loop (an async test), the whole call runs on a worker
    thread, so `asyncio.run` inside the build (or ours) still works.
    """
    if _loop_running():
        return _on_worker_thread(lambda: call_build(build, *args))
    result = build(*args)
    if inspect.isawaitable(result):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _on_worker_thread(call: Callable[[], Any]) -> Any:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error

    worker = threading.Thread(target=run, name="harness-build")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
