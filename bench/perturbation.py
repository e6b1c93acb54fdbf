"""What perturbing the sources of order costs a build: the same build, natural and perturbed.

Two agent start-ups, each assembling its request body sorted, as a correct agent does:

- **in-process**: 50 plugins loaded concurrently by asyncio (each awaits twice and reads its
  manifest on a worker thread), 8 jobs on a thread pool, a folder of 50 plugin files listed,
  and an entry-point group read;
- **subprocesses**: 50 plugins, each a helper process the agent starts concurrently and reads
  its manifest from.

And correct programs whose deadlines hold only if the perturbed runs keep their concurrency:
six loaders of two 30 ms round trips under a 0.4 s `asyncio.timeout`, eight 40 ms pool jobs
waited for with a 0.25 s timeout, four threads at a `Barrier(timeout=...)`, a task polling for
another, and a hundred anyio worker-thread jobs of 40 ms.

Each measurement alternates a natural run (no harness at all) with a perturbed run as a proof
makes them: reversed, forward, then seeded random, under the budget a proof gives (twice the
natural run's time). The figures are medians; `worst_ms` is the median of the slowest kind of
perturbed run.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from harness.prove.perturb._engine import perturbed
from harness.prove.perturb._plan import Mode, RunPlan
from harness.prove.perturb._run import budget_after

MODES = (Mode.REVERSED, Mode.FORWARD, Mode.RANDOM)


@dataclass(frozen=True)
class PerturbationFigure:
    plugins: int
    natural_ms: float
    perturbed_ms: float
    what: str = "in-process start-up"
    worst_ms: float = 0.0  # the median of the slowest kind of perturbed run (reversed, ...)

    @property
    def ratio(self) -> float:
        """Perturbed time over natural time (1.2 is 20% more)."""
        return self.perturbed_ms / self.natural_ms

    @property
    def worst_ratio(self) -> float:
        return max(self.worst_ms, self.perturbed_ms) / self.natural_ms

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


HELPER = (
    "import json, sys; name = sys.argv[1]; print(json.dumps({'name': name, 'description':"
    " 'The ' + name + ' tool.', 'input_schema': {'type': 'object'}}))"
)


def _subprocess_agent(plugins: int) -> Callable[[], Any]:
    async def load(name: str, tools: list[Any]) -> None:
        helper = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", "-c", HELPER, name, stdout=subprocess.PIPE
        )
        out, _ = await helper.communicate()
        tools.append(out)

    async def start() -> dict[str, Any]:
        tools: list[Any] = []
        await asyncio.gather(*(load(f"plugin_{i:03d}", tools) for i in range(plugins)))
        return {"model": "m", "tools": sorted(tools), "messages": []}

    return start


def _deadlines() -> Any:
    async def load(name: str) -> str:
        for _ in range(2):
            await asyncio.sleep(0.03)
        return name

    async def start() -> list[str]:
        async with asyncio.timeout(0.4):
            return await asyncio.gather(*(load(f"tool{i}") for i in range(6)))

    return asyncio.run(start())


def _pool_deadline() -> Any:
    def job(index: int) -> str:
        time.sleep(0.04)
        return f"tool{index}"

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(job, index) for index in range(8)]
        _, late = wait(futures, timeout=0.25)
        assert not late, "a pool job missed the deadline"
        return [future.result() for future in futures]


def _barrier() -> Any:
    barrier = threading.Barrier(4, timeout=0.5)

    def job(index: int) -> str:
        time.sleep(0.01 * index)
        barrier.wait()
        return f"tool{index}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(job, range(4)))


def _polling() -> Any:
    async def start() -> list[str]:
        ready = asyncio.Event()

        async def a_poller() -> str:
            while not ready.is_set():
                await asyncio.sleep(0)
            return "poller"

        async def b_setter() -> str:
            await asyncio.sleep(0.01)
            ready.set()
            return "setter"

        return list(await asyncio.gather(a_poller(), b_setter()))

    return asyncio.run(start())


def _anyio_jobs() -> Any:
    import anyio
    import anyio.to_thread

    def job(index: int) -> str:
        time.sleep(0.04)
        return f"tool{index:03d}"

    async def start() -> list[str]:
        found: dict[int, str] = {}

        async def one(index: int) -> None:
            found[index] = await anyio.to_thread.run_sync(job, index)

        async with anyio.create_task_group() as group:
            for index in range(100):
                group.start_soon(one, index)
        return [found[index] for index in range(100)]

    return anyio.run(start)


CORRECT: dict[str, Callable[[], Any]] = {
    "deadlines: 6 loaders x 2 round trips under a 0.4 s timeout": _deadlines,
    "a pool: eight 40 ms jobs, wait(timeout=0.25)": _pool_deadline,
    "a barrier: four threads, Barrier(timeout=0.5)": _barrier,
    "a task polling for another": _polling,
    "anyio: a hundred 40 ms to_thread jobs": _anyio_jobs,
}


def _interleaved(
    build: Callable[[], Any], rounds: int, plugins: int, what: str
) -> PerturbationFigure:
    """Natural and perturbed runs of `build`, alternating; medians."""
    build()  # warm up imports and caches
    natural: list[float] = []
    under: dict[Mode, list[float]] = {mode: [] for mode in MODES}
    for index in range(max(rounds, 1)):
        began = time.perf_counter()
        build()
        natural.append(time.perf_counter() - began)
        mode = MODES[index % len(MODES)]
        plan = RunPlan(1 + index, 1 + rounds, 2026, mode)
        began = time.perf_counter()
        with perturbed(plan, budget_after(statistics.median(natural))):
            build()
        under[mode].append(time.perf_counter() - began)
    every = [seconds for runs in under.values() for seconds in runs]
    worst = max(statistics.median(runs) for runs in under.values() if runs)
    return PerturbationFigure(
        plugins,
        statistics.median(natural) * 1e3,
        statistics.median(every) * 1e3,
        what,
        worst * 1e3,
    )


def measure(plugins: int = 50, rounds: int = 30) -> PerturbationFigure:
    """The in-process start-up, natural and perturbed, over interleaved rounds."""
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        for index in range(plugins):
            (folder / f"plugin_{index:03d}.py").write_text("")
        start = _agent(folder, plugins)
        return _interleaved(lambda: asyncio.run(start()), rounds, plugins, "in-process start-up")


def measure_subprocesses(plugins: int = 50, rounds: int = 12) -> PerturbationFigure:
    """The start-up through helper processes, natural and perturbed."""
    start = _subprocess_agent(plugins)
    return _interleaved(
        lambda: asyncio.run(start()), rounds, plugins, "start-up through helper processes"
    )


def measure_correct(rounds: int = 6) -> list[PerturbationFigure]:
    """Correct programs with deadlines, barriers and polls, natural and perturbed."""
    return [_interleaved(build, rounds, 0, what) for what, build in CORRECT.items()]


if __name__ == "__main__":
    for figure in (measure(), measure_subprocesses(), *measure_correct()):
        print(
            f"{figure.what}: natural {figure.natural_ms:.1f} ms, perturbed"
            f" {figure.perturbed_ms:.1f} ms ({figure.ratio:.2f}x, slowest kind of run"
            f" {figure.worst_ratio:.2f}x)"
        )
