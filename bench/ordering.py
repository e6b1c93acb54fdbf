"""`order_tools` alone, on 10 to 10,000 tools: time per call and how it grows.

The order is a stable sort by UTF-16 code units (plus list positions when `tool_order` is set),
so n log n is expected: the time per call divided by n·log2(n) should stay about flat.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from harness.agent import TOOL_ORDER_REST, ToolSchema, order_tools

# Tool names as providers accept them ([a-zA-Z0-9_-]); names with astral characters take the
# slower exact path (UTF-16 keys), tested in tests/test_performance_semantics.py.
_PARTS = ("read", "Write", "list", "search", "run", "fetch", "git", "web", "db", "ui", "mcp-x")


@dataclass(frozen=True)
class OrderFigure:
    tools: int
    unset_s: float  # no tool_order: code-unit order
    listed_s: float  # tool_order listing a few names and the rest entry

    @property
    def per_n_log_n_ns(self) -> float:
        return self.unset_s / (self.tools * math.log2(self.tools)) * 1e9


def tools(count: int, seed: int = 0) -> list[ToolSchema]:
    """`count` tools with distinct names, shuffled."""
    rng = random.Random(seed)
    made = [
        ToolSchema(
            f"{rng.choice(_PARTS)}_{rng.choice(_PARTS)}_{index:05d}",
            "A generated tool.",
            {"type": "object", "properties": {}},
        )
        for index in range(count)
    ]
    rng.shuffle(made)
    return made


def _per_call(run: Callable[[], object], budget_s: float, batches: int) -> float:
    """Seconds per call: calls batched to take about `budget_s / batches`, best batch."""
    calls = 1
    while True:  # find a batch size that takes measurable time
        start = time.perf_counter()
        for _ in range(calls):
            run()
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s / batches / 4 or calls >= 1 << 20:
            break
        calls *= 4
    best = elapsed / calls
    for _ in range(batches - 1):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def measure(sizes: tuple[int, ...], budget_s: float = 0.3, batches: int = 5) -> list[OrderFigure]:
    figures = []
    for count in sizes:
        made = tools(count)
        listed = (made[0].name, made[-1].name, TOOL_ORDER_REST, made[count // 2].name)
        figures.append(
            OrderFigure(
                tools=count,
                unset_s=_per_call(partial(order_tools, made, None), budget_s, batches),
                listed_s=_per_call(partial(order_tools, made, listed), budget_s, batches),
            )
        )
    return figures
