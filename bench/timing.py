"""Timing one call, with a full collection before it, so earlier garbage is not billed to it.

`median_of` repeats a call; contenders that are compared with each other run interleaved
instead (`bench.contest`).
"""

from __future__ import annotations

import gc
import statistics
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


def median_of(run: Callable[[], object], repeats: int) -> float:
    """The median of `repeats` runs, in seconds."""
    return statistics.median(timed(run)[0] for _ in range(max(repeats, 1)))
