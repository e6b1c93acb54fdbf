"""The network guard reads `sys.modules` to rebind the resolver functions modules bound at import
(`from socket import getaddrinfo`). A module imported while it reads (a test's server thread
importing as it answers, or a finalizer run by a collection in the middle of the read) must not
fail the test: seen in CI as `RuntimeError: dictionary changed size during iteration` in a test
whose session-scoped server imported while the next test opened the guard."""

from __future__ import annotations

import gc
import socket
import sys
import types
from collections.abc import Iterator

import pytest

from harness.capture import _guard_doors

PREFIX = "_harness_guard_race_"


class ImportsWhenCollected:
    """Garbage whose finalizer imports a module, as a thread's import would, mid-read."""

    made = 0

    def __init__(self) -> None:
        self.itself = self

    def __del__(self) -> None:
        ImportsWhenCollected.made += 1
        name = f"{PREFIX}{ImportsWhenCollected.made}"
        sys.modules[name] = types.ModuleType(name)


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.freeze()  # the process' objects out of the collections: each one below is then cheap
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()
    for name in [name for name in sys.modules if name.startswith(PREFIX)]:
        del sys.modules[name]


@pytest.mark.usefixtures("restored_gc")
def test_a_module_imported_while_the_guard_reads_the_modules_fails_nothing() -> None:
    bound = types.ModuleType(f"{PREFIX}bound")
    bound.getaddrinfo = socket.getaddrinfo  # type: ignore[attr-defined]
    sys.modules[bound.__name__] = bound
    collected_inside = 0
    # A collection at each point of the read in turn: the finalizer imports in the middle of it
    # at some of them (17 of 85 failed before the guard copied the dict in one call).
    for threshold in range(5, 600, 7):
        gc.disable()
        gc.collect()
        ImportsWhenCollected()
        before = ImportsWhenCollected.made
        gc.set_threshold(threshold)
        gc.enable()
        try:
            restores = _guard_doors.open_doors(lambda *_: None, lambda *_: None)
        finally:
            gc.disable()
        collected_inside += ImportsWhenCollected.made - before
        try:
            assert bound.getaddrinfo is not socket.getaddrinfo.__wrapped__  # type: ignore[attr-defined]
            assert bound.getaddrinfo.__wrapped__ is socket.getaddrinfo.__wrapped__  # type: ignore[attr-defined]
        finally:
            for restore in reversed(restores):
                restore()
        assert socket.getaddrinfo is bound.getaddrinfo  # both put back
    assert collected_inside > 0  # the finalizers ran while the doors were opened
