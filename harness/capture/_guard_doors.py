"""The doors a Python program has to the network, each guarded while a marked test runs.

`harness.capture._guard` decides which hosts are blocked; this module is where it is asked. A door
is a row of `DOORS`: a module, a class in it (or none), a callable, and how to read the host it is
given (and, for a lookup, the addresses it answered, which the guard remembers so a connection
to them reads as a connection to the name). The doors, lowest first:

- the resolver: `_socket.getaddrinfo` (the C function `socket.getaddrinfo` calls at each call, so
  a `from socket import getaddrinfo` bound before the guard reaches it too) and `socket.getaddrinfo`
  as it is (a project's own replacement too), `gethostbyname(_ex)`, `gethostbyaddr` and
  `getnameinfo` (a reverse lookup), in `socket` and `_socket` both;
- the socket: `socket.socket`'s `connect`, `connect_ex`, `sendto` and `sendmsg` for an IPv4 or
  IPv6 socket, TCP and UDP, which every Python client reaches with the address it connects to or
  sends to (asyncio's loop does for an IP address it never resolves);
- c-ares: aiohttp's `AsyncResolver.resolve` (aiohttp's default resolver once `aiodns` is
  installed, `aiohttp[speedups]`) and `pycares.Channel`'s lookups, which resolve in C;
- uvloop: `uvloop.Loop`'s `create_connection`, `create_datagram_endpoint`, `getaddrinfo` and
  `getnameinfo`, which resolve and connect in libuv, past every door above.

A C resolver function bound to another module's global at import under its own name (`from
socket import gethostbyname`) is rebound to its guarded door for the test and restored after, as
freezegun rebinds `datetime` (`rebind`); bound under another name it is not, and what it resolves
is refused at the socket in `"all"` mode, an address no guarded lookup named. A library installed
but not yet imported is imported to guard it; one that is not installed is skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import socket
import sys
from collections.abc import Callable, Iterable
from typing import Any, Final, NamedTuple

__all__ = ["DOORS", "Door", "open_doors", "rebind"]

Check = Callable[[Any], None]  # raises NetworkBlocked when the host is blocked
Remember = Callable[[Any, Iterable[Any]], None]  # a lookup of a host answered these addresses
Restore = Callable[[], None]

_INET: Final = (socket.AF_INET, socket.AF_INET6)
_clean: dict[str, int] = {}  # modules found holding no resolver function: name -> id(module)


class Door(NamedTuple):
    module: str
    owner: str  # a class in `module`, or "" for the module itself
    name: str
    wrap: Callable[[Any, Check, Remember], Any]


def _lookup(answer: Callable[[Any], Iterable[Any]]) -> Callable[[Any, Check, Remember], Any]:
    """A resolver function's door: the host checked, the addresses it answered remembered."""

    def wrap(original: Any, check: Check, remember: Remember) -> Any:
        def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
            check(host)
            result = original(host, *args, **kwargs)
            remember(host, answer(result))
            return result

        return guarded

    return wrap


def _reverse(original: Any, check: Check, remember: Remember) -> Any:
    """`getnameinfo(sockaddr, flags)`: a reverse lookup unless the host is asked numeric."""

    def guarded(sockaddr: Any, flags: int, *args: Any, **kwargs: Any) -> Any:
        if not flags & socket.NI_NUMERICHOST and isinstance(sockaddr, tuple) and sockaddr:
            check(sockaddr[0])
        return original(sockaddr, flags, *args, **kwargs)

    return guarded


def _addressed(where: Callable[[tuple[Any, ...]], Any]) -> Callable[[Any, Check, Remember], Any]:
    """A socket method given the address it reaches (`where` finds it among the arguments);
    only an IPv4 or IPv6 socket's address names a host (a Unix socket's is a path)."""

    def wrap(original: Any, check: Check, remember: Remember) -> Any:
        def guarded(self: Any, *args: Any) -> Any:
            address = where(args)
            if self.family in _INET and isinstance(address, tuple) and address:
                check(address[0])
            return original(self, *args)

        return guarded

    return wrap


def _resolver(original: Any, check: Check, remember: Remember) -> Any:
    """aiohttp's `AsyncResolver.resolve(host, port, family)`: its answers are dicts."""

    async def resolve(self: Any, host: Any, *args: Any, **kwargs: Any) -> Any:
        check(host)
        result = await original(self, host, *args, **kwargs)
        remember(host, (item.get("host") for item in result if isinstance(item, dict)))
        return result

    return resolve


def _first(original: Any, check: Check, remember: Remember) -> Any:
    """A method whose first argument is the host (or a sockaddr whose first item is)."""

    def guarded(self: Any, host: Any, *args: Any, **kwargs: Any) -> Any:
        check(host[0] if isinstance(host, tuple) and host else host)
        return original(self, host, *args, **kwargs)

    return guarded


def _loop_lookup(original: Any, check: Check, remember: Remember) -> Any:
    """uvloop's `loop.getaddrinfo(host, port, ...)`, a coroutine answering sockaddrs."""

    async def getaddrinfo(self: Any, host: Any, *args: Any, **kwargs: Any) -> Any:
        check(host)
        result = await original(self, host, *args, **kwargs)
        remember(host, (entry[4][0] for entry in result))
        return result

    return getaddrinfo


def _loop_connect(original: Any, check: Check, remember: Remember) -> Any:
    """uvloop's `create_connection(protocol_factory, host, port, ...)`."""

    def create_connection(
        self: Any, protocol_factory: Any, host: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        check(host)
        return original(self, protocol_factory, host, *args, **kwargs)

    return create_connection


def _loop_datagram(original: Any, check: Check, remember: Remember) -> Any:
    """uvloop's `create_datagram_endpoint(protocol_factory, local_addr, remote_addr, ...)`."""

    def create_datagram_endpoint(self: Any, *args: Any, **kwargs: Any) -> Any:
        remote = kwargs.get("remote_addr", args[2] if len(args) > 2 else None)
        if isinstance(remote, tuple) and remote:
            check(remote[0])
        return original(self, *args, **kwargs)

    return create_datagram_endpoint


def _loop_reverse(original: Any, check: Check, remember: Remember) -> Any:
    def getnameinfo(self: Any, sockaddr: Any, flags: int = 0) -> Any:
        if not flags & socket.NI_NUMERICHOST and isinstance(sockaddr, tuple) and sockaddr:
            check(sockaddr[0])
        return original(self, sockaddr, flags)

    return getnameinfo


_getaddrinfo = _lookup(lambda result: (entry[4][0] for entry in result))
_gethostbyname = _lookup(lambda result: (result,))
_gethostbyname_ex = _lookup(lambda result: result[2])

DOORS: Final = (
    Door("_socket", "", "getaddrinfo", _getaddrinfo),
    Door("socket", "", "getaddrinfo", _getaddrinfo),  # whatever it is now (a project's own too)
    *(
        door
        for module in ("socket", "_socket")
        for door in (
            Door(module, "", "gethostbyname", _gethostbyname),
            Door(module, "", "gethostbyname_ex", _gethostbyname_ex),
            Door(module, "", "gethostbyaddr", _gethostbyname_ex),
            Door(module, "", "getnameinfo", _reverse),
        )
    ),
    Door("socket", "socket", "connect", _addressed(lambda args: args[0] if args else None)),
    Door("socket", "socket", "connect_ex", _addressed(lambda args: args[0] if args else None)),
    # sendto(data, address) or sendto(data, flags, address)
    Door(
        "socket", "socket", "sendto", _addressed(lambda args: args[-1] if len(args) > 1 else None)
    ),
    # sendmsg(buffers, ancdata, flags, address)
    Door(
        "socket", "socket", "sendmsg", _addressed(lambda args: args[3] if len(args) > 3 else None)
    ),
    Door("aiohttp.resolver", "AsyncResolver", "resolve", _resolver),
    *(
        Door("pycares", "Channel", name, _first)
        for name in ("getaddrinfo", "gethostbyname", "gethostbyaddr", "getnameinfo", "query")
    ),
    Door("pycares", "Channel", "search", _first),
    Door("uvloop", "Loop", "create_connection", _loop_connect),
    Door("uvloop", "Loop", "create_datagram_endpoint", _loop_datagram),
    Door("uvloop", "Loop", "getaddrinfo", _loop_lookup),
    Door("uvloop", "Loop", "getnameinfo", _loop_reverse),
)


def _module(name: str) -> Any:
    """`name` imported, if it is installed (else None)."""
    if name in sys.modules:
        return sys.modules[name]
    try:
        if importlib.util.find_spec(name.partition(".")[0]) is None:
            return None
        return importlib.import_module(name)
    except Exception:  # a broken install guards nothing and breaks nothing
        return None


def open_doors(check: Check, remember: Remember) -> list[Restore]:
    """Guard every door of `DOORS` that is installed; what puts each back as it was."""
    restores: list[Restore] = []
    guarded: dict[int, Any] = {}  # by the original: `socket.gethostbyname` is `_socket`'s
    functions: list[tuple[str, Any, Any]] = []  # the resolver functions, for `rebind`
    for door in DOORS:
        module = _module(door.module)
        owner = getattr(module, door.owner, None) if door.owner else module
        original = getattr(owner, door.name, None) if owner is not None else None
        if original is None:
            continue
        if id(original) not in guarded:
            made = door.wrap(original, check, remember)
            made.__wrapped__ = original
            guarded[id(original)] = made
        if not door.owner:
            functions.append((door.name, original, guarded[id(original)]))
        restores.append(_put(owner, door.name, guarded[id(original)]))
    return restores + rebind(functions)


def _put(owner: Any, name: str, value: Any) -> Restore:
    """Set `owner.name` to `value`; what restores it (deleting it again if it was inherited)."""
    own = name in vars(owner)
    original = vars(owner).get(name)
    setattr(owner, name, value)

    def restore() -> None:
        if own:
            setattr(owner, name, original)
        elif name in vars(owner):
            delattr(owner, name)

    return restore


def rebind(wrapped: list[tuple[str, Any, Any]]) -> list[Restore]:
    """Rebind each module global that holds an original resolver function under its own name
    (bound at import: `from socket import gethostbyname`) to its guarded door. A module found
    holding none is not looked at again (module globals are bound at import), so a test pays only
    for the modules imported since the last."""
    doors: dict[str, dict[int, tuple[Any, Any]]] = {}
    for name, original, guarded in wrapped:
        doors.setdefault(name, {})[id(original)] = (original, guarded)
    names = frozenset(doors)
    restores: list[Restore] = []
    # `sys.modules.copy()` is one C call: no Python code runs inside it, so no other thread (a
    # server importing as it answers) and no finalizer can import into the dict while it is read;
    # `list(sys.modules.items())` allocates a tuple per module, a collection can run a `__del__`
    # between two of them, and the iteration then fails on the dict it no longer matches.
    for key, module in sys.modules.copy().items():
        if _clean.get(key) == id(module) or module is socket or key == "_socket":
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        found = False
        for name in names:  # a few names: never iterate a namespace another thread may grow
            pair = doors[name].get(id(namespace.get(name)))
            if pair is not None:
                namespace[name] = pair[1]
                restores.append(_unbind(namespace, name, *pair))
                found = True
        if not found:
            _clean[key] = id(module)
    return restores


def _unbind(namespace: dict[str, Any], name: str, original: Any, guarded: Any) -> Restore:
    def restore() -> None:
        if namespace.get(name) is guarded:
            namespace[name] = original

    return restore
