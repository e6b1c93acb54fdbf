"""A progress line on a terminal: how many requests were read, on stderr, rewritten in place.

Shown only when stderr is a terminal, not under CI and not with `--quiet`: a log or a pipe gets
nothing. It is one line of our own rather than a library's bar: it counts rows, it is all the
scan has to say while it reads, and it adds no dependency (decision 0028).
"""

from __future__ import annotations

import sys
import time
from typing import Final

from harness._shared._ci import detect_ci

__all__ = ["Progress"]

_EVERY: Final = 0.2  # seconds between two redraws


class Progress:
    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty() and detect_ci() is None
        self._last = 0.0
        self._drawn = False

    def show(self, text: str) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if now - self._last < _EVERY:
            return
        self._last = now
        sys.stderr.write(f"\r\x1b[2K{text}")
        sys.stderr.flush()
        self._drawn = True

    def done(self) -> None:
        if self._drawn:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self._drawn = False
