"""Running a user's build once, and what it produced: the requests it sent or the header it
returned, as cache views.

`prove_stable` runs a build many times (`harness.stability`), a `PYTHONHASHSEED` child runs it
once (`harness.hashseed`); both observe a run the same way, here. A build that sent requests
through a capture session is judged by those requests; otherwise by what it returned: a harness
`Header` or `Request`, a `CacheView`, a request body (`dict`, JSON `str` or `bytes`) or a tool list.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from harness.agent.llm import Request
from harness.agent.session import Header
from harness.providers import split_request
from harness.views import CacheView, view_of_header, view_of_mapping, view_of_request, view_of_tools

if TYPE_CHECKING:
    from harness.capture import Captured

__all__ = ["Observed", "observe", "resolve", "run_build", "unit_name", "view_of_value"]


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


def view_of_value(value: Any) -> CacheView:
    """The cache view of whatever a build returned (see the module docstring)."""
    return observe(value).view


@dataclass(frozen=True)
class Observed:
    """One request a build produced: its cache view, its cacheable prefix and raw body if known."""

    view: CacheView
    prefix: CacheView | None = None
    body: bytes | None = None


def observe(value: Any) -> Observed:
    """What a build returned, as a cache view (with its prefix when it is a provider body)."""
    if isinstance(value, CacheView):
        return Observed(value)
    if isinstance(value, Header):
        return Observed(view_of_header(value))
    if isinstance(value, Request):
        return Observed(view_of_request(value))
    raw: bytes | None = None
    if isinstance(value, bytes | bytearray | memoryview | str):
        raw = value.encode() if isinstance(value, str) else bytes(value)
        value = msgspec.json.decode(raw)
    if isinstance(value, Mapping):
        split = split_request(dict(value))
        if split is not None:
            return Observed(split.view, split.prefix, raw)
        return Observed(view_of_mapping(value), None, raw)
    if isinstance(value, list | tuple):
        return Observed(view_of_tools(value))
    raise TypeError(
        f"build() returned {type(value).__name__}; return a Header, Request, CacheView, request "
        "body (dict, str or bytes), a tool list, or None after sending through a capture session"
    )


def _observed_of(
    result: Any,
    seen: list[Captured] | None,
    captured: Callable[[], list[CacheView]] | None,
) -> list[Observed]:
    if result is None:
        if seen:
            found = [
                Observed(item.split.view, item.split.prefix, item.body)
                for item in seen
                if item.split is not None
            ]
            if found:
                return found
            raise TypeError(
                f"build() sent {len(seen)} request(s) through the capture session, none of them"
                " a provider request this harness knows (Anthropic Messages, OpenAI Chat"
                " Completions or Responses)"
            )
        if captured is not None:
            views = captured()
            if views:
                return [Observed(view) for view in views]
        raise TypeError(
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


def run_build(
    build: Callable[[list[Any]], Any],
    order: Sequence[Any],
    *,
    proof: Any = None,
    index: int = 0,
    captured: Callable[[], list[CacheView]] | None = None,
) -> list[Observed]:
    """Call `build(order)` once (inside a capture proof build when `proof` is given)."""
    if proof is None:
        return _observed_of(build(list(order)), None, captured)
    with proof.build(index) as seen:
        result = build(list(order))
    return _observed_of(result, list(seen), captured)
