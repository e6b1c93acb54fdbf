"""I/O a task waits on (helper processes, sockets, pipes), and whether an answer is due.

A perturbed run holds a task back while a sibling before it is still working, and waiting for an
answer is work: a task whose request went out over a pipe or a socket wakes when the answer
arrives, though nothing in the process runs for it meanwhile. A channel records that. It is
*expecting* from the moment it opens (a process spawned, a connection being made) or the program
writes to it, until data comes back; a process whose input is closed or was never a pipe (it
will only finish) keeps it busy until it exits; and data that just arrived may be followed by
more (a response in two reads), so a channel stays busy for a moment after each read.

A channel that is open but expects nothing (an MCP server between requests, a keep-alive
connection) does not keep its task busy: the task is waiting for the program, not for the world.

The hooks wrap the protocol a loop hands its transport (asyncio's own loops and uvloop both call
the protocol's methods from Python), and the `write` of the transport or stream where that is a
Python object. Connections a server in the process accepts are not tracked.
"""

from __future__ import annotations

import contextlib
import socket
import time
import weakref
from collections.abc import Callable
from typing import Any, Final

__all__ = ["HELPER_PROCESS", "PIPE", "SOCKET", "Channel", "Channels"]

HELPER_PROCESS: Final = "helper process"
SOCKET: Final = "socket"
PIPE: Final = "pipe"

RECENT_S: Final = 0.02  # after a read, more of the same answer may still be on its way


class Channel:
    """One process, connection or pipe, its owner (the task that last wrote to it), and whether
    an answer is due."""

    __slots__ = ("closed", "expecting", "kind", "last_input", "owner", "until_exit")

    def __init__(self, kind: str, owner: Any) -> None:
        self.kind = kind
        self.owner = owner
        self.expecting = True  # opening is a request: a process starts, a connection is made
        self.until_exit = False
        self.last_input = -1.0
        self.closed = False

    def busy(self, now: float) -> bool:
        if self.closed:
            return False
        return self.expecting or self.until_exit or now - self.last_input < RECENT_S

    def settles_at(self) -> float:
        """When a channel busy only because data just arrived stops being busy."""
        return self.last_input + RECENT_S


class Channels:
    """The channels a loop's tasks opened, with the hooks that keep them up to date."""

    def __init__(self, owner: Callable[[], Any], on_input: Callable[[Channel], None]) -> None:
        self._owner = owner  # the task running now (its bookkeeping), or None
        self._on_input = on_input
        self._open: list[Channel] = []
        self._sockets: weakref.WeakKeyDictionary[socket.socket, Channel] = (
            weakref.WeakKeyDictionary()
        )

    def open(self, kind: str) -> Channel:
        channel = Channel(kind, self._owner())
        self._open.append(channel)
        return channel

    def live(self) -> list[Channel]:
        self._open = [channel for channel in self._open if not channel.closed]
        return self._open

    # -- events ---------------------------------------------------------------------------------

    def arrived(self, channel: Channel) -> None:
        channel.expecting = False
        channel.last_input = time.monotonic()
        self._on_input(channel)

    def wrote(self, channel: Channel) -> None:
        channel.expecting = True
        owner = self._owner()
        if owner is not None:
            channel.owner = owner  # a pooled connection answers whoever asked last

    def closed(self, channel: Channel) -> None:
        if not channel.closed:
            channel.closed = True
            channel.last_input = time.monotonic()
            self._on_input(channel)

    # -- hooks ----------------------------------------------------------------------------------

    def factory(self, factory: Callable[[], Any], kind: str) -> Callable[[], Any]:
        """`factory`, whose protocols report to a channel of their own."""

        def make() -> Any:
            protocol = factory()
            self.watch_protocol(protocol, self.open(kind))
            return protocol

        return make

    def watch_protocol(self, protocol: Any, channel: Channel) -> None:
        def on(name: str, hook: Callable[..., None]) -> None:
            original = getattr(protocol, name, None)
            if original is None:
                return

            def wrapped(*args: Any) -> Any:
                hook(*args)
                return original(*args)

            with contextlib.suppress(AttributeError, TypeError):  # slots: it only knows it opened
                setattr(protocol, name, wrapped)

        on("data_received", lambda data: self.arrived(channel))
        on("buffer_updated", lambda size: self.arrived(channel))
        on("eof_received", lambda: self.arrived(channel))
        on("connection_lost", lambda error: self.closed(channel))
        on("pipe_data_received", lambda fd, data: self.arrived(channel) if fd == 1 else None)
        on("process_exited", lambda: self.closed(channel))
        on("pipe_connection_lost", lambda fd, error: _input_closed(channel) if fd == 0 else None)
        made = getattr(protocol, "connection_made", None)
        if made is None:
            return

        def connection_made(transport: Any) -> Any:
            result = made(transport)
            stdin = getattr(protocol, "stdin", None)
            pipes = getattr(transport, "get_pipe_transport", None)
            if pipes is not None:  # a subprocess: its input, if a pipe, is where requests go
                if pipes(0) is None:
                    channel.until_exit = True
                self.watch_writer(stdin if stdin is not None else pipes(0), channel, stdin=True)
            else:
                self.watch_writer(transport, channel)
            return result

        with contextlib.suppress(AttributeError, TypeError):
            protocol.connection_made = connection_made

    def watch_writer(self, writer: Any, channel: Channel, *, stdin: bool = False) -> None:
        """Count `writer`'s writes as requests on `channel` (and, for a process's input, its
        closing as the end of requests)."""
        if writer is None:
            return
        hooks: dict[str, Callable[..., Any]] = {
            "write": lambda *args: self.wrote(channel),
            "writelines": lambda *args: self.wrote(channel),
        }
        if stdin:
            hooks["write_eof"] = lambda: _input_closed(channel)
            hooks["close"] = lambda: _input_closed(channel)
        for name, hook in hooks.items():
            original = getattr(writer, name, None)
            if original is None:
                continue
            try:
                setattr(writer, name, _before(hook, original))
            except (AttributeError, TypeError):
                return  # uvloop's transports are C objects: their channel knows opens and reads

    def of_socket(self, sock: socket.socket) -> Channel:
        """The channel of a socket used through `loop.sock_*`."""
        channel = self._sockets.get(sock)
        if channel is None or channel.closed:
            channel = self.open(SOCKET)
            self._sockets[sock] = channel
        return channel


def _input_closed(channel: Channel) -> None:
    channel.until_exit = True


def _before(hook: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        hook(*args)
        return original(*args, **kwargs)

    return wrapped
