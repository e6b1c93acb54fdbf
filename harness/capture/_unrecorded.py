"""The harness's own stand-in traffic, kept out of other recorders' sight (vcrpy, pytest-recording).

vcrpy patches the `handle_request` of httpx's and httpx2's transport classes, `MockTransport`
among them, for as long as a cassette is in use. A test that is both `@pytest.mark.vcr` and
`@pytest.mark.header_capture` then has the harness's call to its `harness_upstream` stand-in
(a `MockTransport`) go through vcrpy, which in its default `none` mode refuses a request its own
cassette lacks (`CannotOverwriteExistingCassetteException`) although no network is involved.

`unrecorded(upstream)` is a copy of the user's transport whose class is a subclass of its own
that calls the class's original `handle_request` / `handle_async_request` (a vcrpy wrapper,
recognised by its globals, a `vcr.*` module's, is unwrapped through its `__wrapped__`; any other
wrapper is left in place). The copy is still of the library's transport class, so the capture
transport converts requests for it as before. The SDK's own requests never reach a patched
class: the capture transport stands in for the SDK client's transport.
"""

from __future__ import annotations

import copy
from typing import Any, Final

__all__ = ["unrecorded"]

_METHODS: Final = ("handle_request", "handle_async_request")
_MADE: dict[type[Any], type[Any]] = {}


def unrecorded(upstream: Any) -> Any:
    """`upstream` as a transport that other recorders' patches do not see (itself when it is not
    a transport object, or when nothing need change)."""
    if upstream is None or isinstance(upstream, str | bytes | int | float | bool):
        return upstream
    cls = type(upstream)
    if not any(callable(getattr(cls, name, None)) for name in _METHODS):
        return upstream
    sub = _subclass(cls)
    try:
        twin = copy.copy(upstream)
        twin.__class__ = sub
    except TypeError:  # a class whose instances cannot change class: leave it as it is
        return upstream
    return twin


def _subclass(cls: type[Any]) -> type[Any]:
    if cls not in _MADE:
        members: dict[str, Any] = {"__module__": cls.__module__, "__doc__": cls.__doc__}
        for name in _METHODS:
            found = getattr(cls, name, None)
            if callable(found):
                members[name] = _original(cls, name)
        _MADE[cls] = type(cls.__name__, (cls,), members)
    return _MADE[cls]


def _original(cls: type[Any], name: str) -> Any:
    """The method as the library defines it, looked up at each call (vcrpy patches and unpatches
    the class as cassettes open and close), less vcrpy's wrapper."""

    def call(self: Any, request: Any) -> Any:
        method = getattr(cls, name)
        while _from_vcr(method) and callable(getattr(method, "__wrapped__", None)):
            method = method.__wrapped__
        return method(self, request)

    call.__name__ = name
    return call


def _from_vcr(method: Any) -> bool:
    """Whether `method` is defined in vcrpy (its globals are a `vcr.*` module's: `functools.wraps`
    copies the wrapped function's `__module__`, not its globals)."""
    module = getattr(method, "__globals__", {}).get("__name__", "")
    return isinstance(module, str) and (module == "vcr" or module.startswith("vcr."))
