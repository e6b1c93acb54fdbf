"""Timing on a shared, noisy machine: the best of several runs, with a collection before each.

The best run is the one least disturbed by other load; the figures that matter are ratios
between pipelines measured the same way in the same process.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def timed(run: Callable[[], T]) -> tuple[float, T]:
    """Seconds `run` took (after a full collection, so earlier garbage is not billed to it)."""
    gc.collect()
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def best_of(run: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` runs, in seconds."""
    return min(timed(run)[0] for _ in range(max(repeats, 1)))
