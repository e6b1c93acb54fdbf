"""No silent pass: a marked test that reaches a host through a client the capture does not see.

The capture intercepts httpx, httpx2 and urllib3 (requests, botocore). A client it does not see
(a raw `socket.create_connection`, `http.client`, a library with its own HTTP stack) would send
the provider's request to the network unrecorded and ungated, and the test would pass. So while
a `@pytest.mark.header_capture` test runs, `socket.getaddrinfo` (which every client calls before
it connects, the asyncio loop too, in its executor) is guarded, and so are the other ways Python
code names a host to the resolver: `socket.gethostbyname(_ex)`, and a socket's own `connect` /
`connect_ex` given a host name (which resolve in C, past `getaddrinfo`): a host to block fails the
resolution with `NetworkBlocked`, one line naming the host and the library, and the error is
kept on the session, so an agent that swallows it and falls back to a canned answer still
fails (the gate reports the session's errors after the test body).

Which hosts are blocked (`block_network` in `harness_capture_config`): `"providers"`, the hosts
the capture captures (every provider's, and `hosts`); `"all"`, every host; `"none"`, nothing;
`"auto"` (the default), `"providers"` locally and `"all"` in CI. Never blocked: loopback (the
project's own in-process servers), `allowed_hosts`, `ignore_hosts` (let through on purpose), and
a host the capture itself forwards a captured request to (recording against the network).
An IP address is guarded when the client passes it to `getaddrinfo` (`socket.create_connection`,
urllib3 and http.client do; asyncio does not, so an aiohttp or httpx-async connection to a bare
IP address is not); in CI that includes botocore's instance-metadata lookup (169.254.169.254)
when no credentials are set: set them (any fake values) or allow the address.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

from harness._shared._errors import NetworkBlocked
from harness.providers._base import host_matches

if TYPE_CHECKING:
    from harness.capture._config import CaptureConfig
    from harness.capture._session import CaptureSession

__all__ = ["blocked_mode", "guarding"]

_LOOPBACK: Final = ("localhost", "127.*", "::1", "0:0:0:0:0:0:0:1", "localhost.*", "*.localhost")
# Frames between the client and the resolver that name no client: skipped to find the library.
_PLUMBING: Final = frozenset(
    {"socket", "ssl", "asyncio", "selectors", "concurrent", "threading", "harness", "contextlib"}
    | {"functools", "aiohappyeyeballs", "anyio", "trio", "sniffio", "_socket", "encodings"}
)
_NAMES: Final = {"http": "http.client", "urllib": "urllib.request"}

_lock = threading.Lock()
_guards: list[tuple[CaptureSession, CaptureConfig, str]] = []
_original: list[Any] = []
# What else is patched while guarding: (owner, attribute, the original), restored at the end.
_others: list[tuple[Any, str, Any]] = []


def blocked_mode(config: CaptureConfig, *, ci: bool) -> str:
    """What `block_network` means for this run: "providers", "all" or "none"."""
    if config.block_network == "auto":
        return "all" if ci else "providers"
    return config.block_network


@contextmanager
def guarding(session: CaptureSession, config: CaptureConfig, *, ci: bool) -> Iterator[None]:
    """While inside, resolving a host to block fails, and the failure is kept on `session`."""
    mode = blocked_mode(config, ci=ci)
    if mode == "none":
        yield
        return
    with _lock:
        if not _guards:
            _original.append(socket.getaddrinfo)
            socket.getaddrinfo = _guarded
            _patch_others()
        _guards.append((session, config, mode))
    try:
        yield
    finally:
        with _lock:
            for index in range(len(_guards) - 1, -1, -1):
                if _guards[index][0] is session:
                    del _guards[index]
                    break
            if not _guards and _original:
                socket.getaddrinfo = _original.pop()
                while _others:
                    owner, name, original = _others.pop()
                    setattr(owner, name, original)


def _guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
    with _lock:
        original = _original[0] if _original else None
    assert original is not None
    _check(host)
    return original(host, *args, **kwargs)


def _check(host: Any) -> None:
    """Raise (and keep on the session) the refusal of `host`, if the current guard blocks it."""
    with _lock:
        current = _guards[-1] if _guards else None
    if current is not None and isinstance(host, str | bytes):
        name = host.decode("idna") if isinstance(host, bytes) else host
        error = _refusal(name.lower().rstrip("."), *current)
        if error is not None:
            raise error


def _patch_others() -> None:
    """Guard the resolver's other doors: `gethostbyname(_ex)` and `connect` given a host name."""

    def by_name(original: Any) -> Any:
        def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
            _check(host)
            return original(host, *args, **kwargs)

        return guarded

    def connecting(original: Any) -> Any:
        def guarded(self: Any, address: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(address, tuple) and address and _is_name(address[0]):
                _check(address[0])
            return original(self, address, *args, **kwargs)

        return guarded

    for owner, name, wrap in (
        (socket, "gethostbyname", by_name),
        (socket, "gethostbyname_ex", by_name),
        (socket.socket, "connect", connecting),
        (socket.socket, "connect_ex", connecting),
    ):
        original = getattr(owner, name)
        _others.append((owner, name, original))
        setattr(owner, name, wrap(original))


def _is_name(host: Any) -> bool:
    """Whether `host` is a host name (not an IP address, which no resolver is asked about)."""
    if not isinstance(host, str | bytes):
        return False
    text = host.decode("idna", "replace") if isinstance(host, bytes) else host
    try:
        ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return bool(text)
    return False


def _refusal(
    host: str, session: CaptureSession, config: CaptureConfig, mode: str
) -> NetworkBlocked | None:
    if not host or any(host_matches(pattern, host) for pattern in _LOOPBACK):
        return None
    if any(host_matches(p, host) for p in (*config.allowed_hosts, *config.ignore_hosts)):
        return None
    with session.lock:
        forwarded = host in session.hosts_seen
    if forwarded:
        return None  # the capture forwards a request it captured: recording against the network
    provider = config.captures(host)
    if mode == "providers" and not provider:
        return None
    library = _library()
    what = "a provider host" if provider else "a host"
    error = NetworkBlocked(
        f"{library} tried to reach {what}, {host}, through a client the capture does not see:"
        " its requests would be neither recorded nor gated (block_network"
        f" {config.block_network!r}; use a captured client (httpx, requests, boto3), or add the"
        " host to allowed_hosts in harness_capture_config)"
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
