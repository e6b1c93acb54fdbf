"""No silent pass: a marked test that reaches a host through a client the capture does not see.

The capture intercepts httpx, httpx2, urllib3 (requests, botocore), `http.client` and aiohttp. A
client it does not see (a raw socket, a library with its own HTTP stack) would send the provider's
request to the network unrecorded and ungated, and the test would pass. So while a
`@pytest.mark.header_capture` test runs, every door a Python program has to the network is guarded
(`harness.capture._guard_doors`: the resolver's functions, a socket's `connect`, `connect_ex`,
`sendto` and `sendmsg`, c-ares through aiohttp's `AsyncResolver` and pycares, uvloop): a host to
block fails with `NetworkBlocked`, one line naming the host, the library and what to do, and the
error is kept on the session, so an agent that swallows it and falls back to a canned answer still
fails (the gate reports the session's errors after the test body).

Which hosts are blocked (`block_network` in `harness_capture_config`): `"providers"`, the hosts
the capture captures (every provider's, and `hosts`); `"all"`, every host; `"none"`, nothing;
`"auto"` (the default), `"providers"` locally and `"all"` in CI. Never blocked: this machine (an
address that is loopback or unspecified, judged by the address, `::ffff:127.0.0.1` and `127.1`
included; the names `localhost` and this machine's host name exactly, never a name that merely
starts or ends like one), `allowed_hosts` and `ignore_hosts` (names, wildcards, addresses, or
networks such as `10.0.0.0/8`), a host the capture itself forwards a captured request to
(recording against the network), and, at a socket, an address a guarded lookup of a name that is
not blocked answered (what a client resolved `example.org` to connects as `example.org`). So in
`"all"` mode an address nothing named is refused wherever the program found it (a hard-coded
address, a resolver the guard does not see); in `"providers"` mode an address is blocked only
when the capture captures it (`hosts`), since nothing says whose it is.

What an in-process guard cannot see: another process (`curl` from `subprocess`, a helper server),
and a C extension that makes its own sockets (gRPC's core, libcurl in pycurl, c-ares's own DNS
packets). Close those by running CI without a network (`unshare -n`, a container with
`--network none`): docs/guarantees.md and decision 0032.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import sys
import sysconfig
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

from harness._shared._errors import NetworkBlocked
from harness.capture._guard_doors import Restore, open_doors
from harness.providers._base import host_matches

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._session import CaptureSession

__all__ = ["address_of", "blocked_mode", "guarding"]

# Frames between the client and the resolver that name no client: skipped to find the library.
_PLUMBING: Final = frozenset(
    {"socket", "ssl", "asyncio", "selectors", "concurrent", "threading", "harness", "contextlib"}
    | {"functools", "aiohappyeyeballs", "anyio", "trio", "sniffio", "_socket", "encodings"}
    | {"aiodns", "pycares", "uvloop"}
)
_NAMES: Final = {"http": "http.client", "urllib": "urllib.request"}
_LEGACY_IPV4: Final = re.compile(r"[0-9a-fx.]+")  # inet_aton's forms (127.1, 0x7f.1)
_REMEMBERED: Final = 4096  # addresses kept with the names they were looked up for

_lock = threading.RLock()  # a door may be reached while the doors are opened
_guards: list[tuple[CaptureSession, CaptureConfig, str]] = []
_restores: list[Restore] = []
_local_names: set[str] = set()
# address -> the names a guarded lookup answered it for (the latest last), process-wide
_looked_up: OrderedDict[str, set[str]] = OrderedDict()


def blocked_mode(config: CaptureConfig, *, ci: bool) -> str:
    """What `block_network` means for this run: "providers", "all" or "none"."""
    if config.block_network == "auto":
        return "all" if ci else "providers"
    return config.block_network


@contextmanager
def guarding(session: CaptureSession, config: CaptureConfig, *, ci: bool) -> Iterator[None]:
    """While inside, reaching a host to block fails, and the failure is kept on `session`."""
    mode = blocked_mode(config, ci=ci)
    if mode == "none":
        yield
        return
    with _lock:
        if not _guards:
            _local_names.clear()
            _local_names.update({"localhost", socket.gethostname().lower().rstrip(".")})
            _restores.extend(open_doors(_check, _remember))
        _guards.append((session, config, mode))
    try:
        yield
    finally:
        with _lock:
            for index in range(len(_guards) - 1, -1, -1):
                if _guards[index][0] is session:
                    del _guards[index]
                    break
            if not _guards:
                while _restores:
                    _restores.pop()()


def address_of(host: str) -> str | None:
    """`host` as an IP address in its canonical text, if it is one (else None): brackets and a
    zone taken off, an IPv4-mapped IPv6 address as its IPv4 address, inet_aton's short forms
    (which `getaddrinfo` reads as addresses too) spelled out."""
    text = host.strip("[]").partition("%")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(text):
            return None
        try:
            return socket.inet_ntoa(socket.inet_aton(text))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _name(host: Any) -> str | None:
    if isinstance(host, bytes | bytearray):
        host = bytes(host).decode("idna", "replace")
    return host.lower().rstrip(".") if isinstance(host, str) else None


def _check(host: Any) -> None:
    """Raise (and keep on the session) the refusal of `host`, if the current guard blocks it."""
    with _lock:
        current = _guards[-1] if _guards else None
    name = _name(host)
    if current is not None and name:
        error = _refusal(name, *current)
        if error is not None:
            raise error


def _remember(host: Any, addresses: Iterable[Any]) -> None:
    """A guarded lookup of `host` (let through) answered `addresses`: a connection to one of them
    is judged as a connection to `host`."""
    name = _name(host)
    if not name or address_of(name) is not None:
        return
    found = [address_of(str(a)) for a in addresses if isinstance(a, str | bytes)]
    with _lock:
        for address in filter(None, found):
            _looked_up.setdefault(address, set()).add(name)
            _looked_up.move_to_end(address)
        while len(_looked_up) > _REMEMBERED:
            _looked_up.popitem(last=False)


def _allowed(host: str, address: str | None, config: CaptureConfig) -> bool:
    for pattern in (*config.allowed_hosts, *config.ignore_hosts):
        if host_matches(pattern, host) or (address is not None and address_of(pattern) == address):
            return True
        if address is not None and "/" in pattern:
            try:
                if ipaddress.ip_address(address) in ipaddress.ip_network(pattern, strict=False):
                    return True
            except ValueError:
                continue
    return False


def _what(host: str, session: CaptureSession, config: CaptureConfig, mode: str) -> str | None:
    """What `host` is, if the guard blocks it ("a provider host", "a host", "an address"); None
    when it goes through."""
    address = address_of(host)
    if address is None and host in _local_names:
        return None
    if address is not None:
        ip = ipaddress.ip_address(address)
        if ip.is_loopback or ip.is_unspecified:
            return None
    if _allowed(host, address, config):
        return None
    with session.lock:
        if host in session.hosts_seen or address in session.hosts_seen:
            return None  # the capture forwards a request it captured: recording against the network
    if address is not None:
        with _lock:
            names = sorted(_looked_up.get(address, ()))
        if any(_what(name, session, config, mode) is None for name in names):
            return None
    provider = config.captures(host) or (address is not None and config.captures(address))
    if mode == "providers" and not provider:
        return None
    if provider:
        return "a provider host"
    return "an address no guarded lookup gave" if address is not None else "a host"


def _refusal(
    host: str, session: CaptureSession, config: CaptureConfig, mode: str
) -> NetworkBlocked | None:
    what = _what(host, session, config, mode)
    if what is None:
        return None
    library = _library()
    allow = (
        "the address (or its network, such as 10.0.0.0/8)" if what.startswith("an ") else "the host"
    )
    error = NetworkBlocked(
        f"{library} tried to reach {what}, {host}, through a client the capture does not see:"
        " its requests would be neither recorded nor gated (block_network"
        f" {config.block_network!r}; use a captured client (httpx, requests, boto3, aiohttp),"
        f" or add {allow} to allowed_hosts in harness_capture_config)"
    )
    with session.lock:
        if all(str(error) != str(known) for known in session.errors):
            session.errors.append(error)
    return error


def _library() -> str:
    """The client library that asked for the host: the first frame outside the plumbing."""
    roots = _installed_roots()
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        top = module.partition(".")[0]
        if top and top not in _PLUMBING:
            path = str(Path(frame.f_code.co_filename).resolve())
            if path.startswith(roots):
                return _NAMES.get(top, top)
            return f"a raw socket call in {module}"
        frame = frame.f_back
    return "a client in a worker thread"


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(str(Path(p).resolve()) for p in found)
