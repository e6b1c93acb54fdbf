"""What perturbing the sources of order costs a build: the same build, natural and perturbed.

The build is an agent's start-up with every source the proof perturbs: 50 plugins loaded
concurrently by asyncio (each awaits twice and reads its manifest on a worker thread), 8 jobs on
a thread pool, a folder of 50 plugin files listed, and an entry-point group read; then the
request body is assembled, sorted, as a correct agent does. Each measurement alternates a
natural run (no harness at all) with a run under a random `RunPlan`, and compares medians.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from harness.prove.perturb._engine import perturbed
from harness.prove.perturb._plan import Mode, RunPlan


@dataclass(frozen=True)
class PerturbationFigure:
    plugins: int
    natural_ms: float
    perturbed_ms: float

    @property
    def ratio(self) -> float:
        """Perturbed time over natural time (1.2 is 20% more)."""
        return self.perturbed_ms / self.natural_ms

    @property
    def overhead(self) -> float:
        """Perturbed time over natural time, minus one (0.2 is 20% more)."""
        return self.perturbed_ms / self.natural_ms - 1


def _agent(folder: Path, plugins: int) -> Any:
    def manifest(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "description": f"The {name} tool.",
            "input_schema": {"type": "object"},
        }

    async def load(name: str, tools: list[dict[str, Any]]) -> None:
        await asyncio.sleep(0)
        tools.append(await asyncio.to_thread(manifest, name))
        await asyncio.sleep(0)

    async def start() -> dict[str, Any]:
        names = sorted(path.stem for path in folder.iterdir())
        tools: list[dict[str, Any]] = []
        await asyncio.gather(*(load(name, tools) for name in names[:plugins]))
        with ThreadPoolExecutor(max_workers=4) as pool:
            extra = list(pool.map(manifest, [f"builtin_{i}" for i in range(8)]))
        groups = sorted(point.name for point in entry_points(group="bench.harness.tools"))
        tools = sorted(tools + extra, key=lambda tool: tool["name"])
        return {"model": "m", "system": f"{len(groups)} groups", "tools": tools, "messages": []}

    return start


def measure(plugins: int = 50, rounds: int = 30) -> PerturbationFigure:
    """Median build time, natural and perturbed, over interleaved rounds."""
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        for index in range(plugins):
            (folder / f"plugin_{index:03d}.py").write_text("")
        start = _agent(folder, plugins)
        natural: list[float] = []
        under: list[float] = []
        asyncio.run(start())  # warm up imports and caches
        for index in range(rounds):
            began = time.perf_counter()
            asyncio.run(start())
            natural.append(time.perf_counter() - began)
            plan = RunPlan(3 + index, 3 + rounds, 2026, Mode.RANDOM)
            began = time.perf_counter()
            with perturbed(plan):
                asyncio.run(start())
            under.append(time.perf_counter() - began)
    return PerturbationFigure(
        plugins, statistics.median(natural) * 1e3, statistics.median(under) * 1e3
    )


if __name__ == "__main__":
    figure = measure()
    print(
        f"{figure.plugins} plugins: natural {figure.natural_ms:.2f} ms, perturbed"
        f" {figure.perturbed_ms:.2f} ms, overhead {figure.overhead:+.1%}"
    )
