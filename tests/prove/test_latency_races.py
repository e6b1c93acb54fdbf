"""Races at any relative latency, in one process: a loader that awaits more often, or longer,
still finishes first in one of the perturbed runs, and the cause names the program's tasks.

Each shape is an agent as a user writes it: the racy version fails with its cause, the fixed one
(it sorts) passes, under several run seeds. Correct programs with deadlines and polling loops
pass under several seeds.
"""

from __future__ import annotations

import re

import pytest

from .conftest import cause_of, make_agent, prove

# Each test runs a generated project under several seeds: seconds each.
pytestmark = pytest.mark.slow

SEEDS = [1, 7, 2026]

# shape -> (the agent's loaders, the cause the report must name)
SHAPES: dict[str, tuple[str, str]] = {
    "as-completed-await-counts": (
        """
        import asyncio

        AWAITS = {"fs": 3, "web": 1, "shell": 2}  # a cache miss awaits more often than a hit

        async def fetch(name):
            for _ in range(AWAITS[name]):
                await asyncio.sleep(0)
            return name

        async def build():
            tools = []
            for next_done in asyncio.as_completed([fetch(name) for name in AWAITS]):
                tools.append(await next_done)
            return request(FIX(tools))
        """,
        r"asyncio completion order \(fs, shell, web vs web, shell, fs\)",
    ),
    "taskgroup-await-counts": (
        """
        import asyncio

        AWAITS = {"fs": 3, "web": 1, "shell": 2}

        async def build():
            tools = []

            async def load(name):
                for _ in range(AWAITS[name]):
                    await asyncio.sleep(0)
                tools.append(name)

            async with asyncio.TaskGroup() as group:
                for name in AWAITS:
                    group.create_task(load(name))
            return request(FIX(tools))
        """,
        r"asyncio completion order \(fs, shell, web vs web, shell, fs\)",
    ),
    "gather-round-trips": (
        """
        import asyncio

        ROUND_TRIPS = {"search": 2, "files": 1}  # one plugin asks twice

        async def build():
            tools = []

            async def load(name):
                for _ in range(ROUND_TRIPS[name]):
                    await asyncio.sleep(0.01)
                tools.append(name)

            await asyncio.gather(*(load(name) for name in ROUND_TRIPS))
            return request(FIX(tools))
        """,
        r"asyncio completion order \((files, search vs search, files|search, files vs files,"
        r" search)\)",
    ),
    "cache-hit-vs-miss": (
        """
        import asyncio

        CACHE = {"calendar": {"cached": True}}  # loaded before; "weather" is not

        async def load(name, tools):
            if name in CACHE:
                await asyncio.sleep(0)  # a hit: no round trip
            else:
                await asyncio.sleep(0.02)  # a miss: one round trip
            tools.append(name)

        async def build():
            tools = []
            await asyncio.gather(load("calendar", tools), load("weather", tools))
            return request(FIX(tools))
        """,
        r"asyncio completion order \(calendar, weather vs weather, calendar\)",
    ),
    "wait-first-completed": (
        """
        import asyncio

        LATENCY = {"fs": 0.03, "web": 0.01, "shell": 0.02}

        async def fetch(name):
            await asyncio.sleep(LATENCY[name])
            return name

        async def build():
            pending = {asyncio.create_task(fetch(name)) for name in LATENCY}
            tools = []
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                tools.extend(task.result() for task in done)
            return request(FIX(tools))
        """,
        r"asyncio completion order \(fs, shell, web vs web, shell, fs\)",
    ),
    "anyio-task-group": (
        """
        import anyio

        AWAITS = {"fs": 3, "web": 1, "shell": 2}

        async def build():
            tools = []

            async def connect(name):
                for _ in range(AWAITS[name]):
                    await anyio.sleep(0)
                tools.append(name)

            async with anyio.create_task_group() as group:
                for name in AWAITS:
                    group.start_soon(connect, name)
            return request(FIX(tools))
        """,
        r"asyncio completion order \(fs, shell, web vs web, shell, fs\)",
    ),
    "plugin-objects": (
        """
        import asyncio

        class Plugin:
            def __init__(self, name, setup_cost):
                self.name, self.setup_cost = name, setup_cost

            async def setup(self):
                await asyncio.sleep(self.setup_cost)

        PLUGINS = [Plugin("fs", 0.03), Plugin("web", 0.0), Plugin("shell", 0.01)]

        async def build():
            tools = []

            async def register(plugin):
                await plugin.setup()
                tools.append(plugin.name)

            await asyncio.gather(*(register(plugin) for plugin in PLUGINS))
            return request(FIX(tools))
        """,
        r"asyncio completion order \(fs, shell, web vs web, shell, fs\)",
    ),
    "detached-registrations": (
        """
        import asyncio

        LATENCY = {"fs": 0.03, "web": 0.01, "shell": 0.02}

        async def build():
            tools, pending = [], []

            async def register(name):
                await asyncio.sleep(LATENCY[name])
                tools.append(name)

            async def load(name):  # spawns its registration and returns at once
                pending.append(asyncio.create_task(register(name)))

            await asyncio.gather(*(load(name) for name in LATENCY))
            await asyncio.gather(*pending)
            return request(FIX(tools))
        """,
        r"asyncio completion order \(.*register\(fs\), register\(shell\), register\(web\)"
        r" vs .*register\(web\), register\(shell\), register\(fs\)\)",
    ),
    "queue-workers": (
        """
        import asyncio

        LATENCY = {"fs": 0.03, "web": 0.01, "shell": 0.02}

        async def build():
            queue, tools = asyncio.Queue(), []
            for name in LATENCY:
                queue.put_nowait(name)

            async def worker():
                while not queue.empty():
                    name = queue.get_nowait()
                    await asyncio.sleep(LATENCY[name])
                    tools.append(name)

            await asyncio.gather(*(worker() for _ in range(3)))
            return request(FIX(tools))
        """,
        r"asyncio completion order",  # three workers of one label: nothing to tell apart
    ),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_racy_loader_fails_with_its_cause(
    pytester: pytest.Pytester, shape: str, seed: int
) -> None:
    source, cause = SHAPES[shape]
    make_agent(pytester, source, fixed=False)
    result = prove(pytester, seed)
    result.assert_outcomes(failed=1)
    assert re.fullmatch(cause, cause_of(result)), cause_of(result)
    assert "_run_coro" not in result.stdout.str()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_same_loader_passes_once_it_sorts(
    pytester: pytest.Pytester, shape: str, seed: int
) -> None:
    make_agent(pytester, SHAPES[shape][0], fixed=True)
    prove(pytester, seed).assert_outcomes(passed=1)


def test_gathering_in_submission_order_is_a_fix_too(pytester: pytest.Pytester) -> None:
    make_agent(
        pytester,
        """
        import asyncio

        AWAITS = {"fs": 3, "web": 1, "shell": 2}

        async def fetch(name):
            for _ in range(AWAITS[name]):
                await asyncio.sleep(0)
            return name

        async def build():
            return request(await asyncio.gather(*(fetch(name) for name in AWAITS)))
        """,
        fixed=True,
    )
    for seed in SEEDS:
        prove(pytester, seed).assert_outcomes(passed=1)


DEADLINES = """
import asyncio

import anyio

LOADERS = [f"tool{index}" for index in range(6)]


async def load(name):
    for _ in range(2):  # two round trips of 30 ms each
        await asyncio.sleep(0.03)
    return name


async def build():
    async with asyncio.timeout(0.4):
        first = await asyncio.gather(*(load(name) for name in LOADERS))
    second = await asyncio.wait_for(asyncio.gather(*(load(name) for name in LOADERS)), 0.4)
    with anyio.fail_after(0.4):
        third = await asyncio.gather(*(load(name) for name in LOADERS))
    assert first == second == third == LOADERS
    with anyio.move_on_after(0.05) as scope:  # a deadline that must fire still fires
        await asyncio.sleep(1)
    assert scope.cancelled_caught
    try:
        await asyncio.wait_for(asyncio.sleep(0.5), 0.02)
    except TimeoutError:
        pass
    else:
        raise AssertionError("a 20 ms deadline let a 500 ms sleep finish")
    return request(first)
"""

POLLING = """
import asyncio


async def build():
    state = {"ready": False}

    async def a_waiter():  # ranked first in the forward run: it polls for b_setter
        while not state["ready"]:
            await asyncio.sleep(0)
        return "waiter"

    async def b_setter():
        await asyncio.sleep(0.01)
        state["ready"] = True
        return "setter"

    async def c_poller():
        while not state["ready"]:
            await asyncio.sleep(0.005)
        return "poller"

    queue = asyncio.Queue()

    async def a_consumer():
        return [await queue.get() for _ in range(3)]

    async def b_producer():
        for name in ("x", "y", "z"):
            await asyncio.sleep(0.002)
            await queue.put(name)
        return "producer"

    polled = await asyncio.gather(a_waiter(), b_setter(), c_poller())
    consumed, _ = await asyncio.gather(a_consumer(), b_producer())
    return request([*polled, *consumed])
"""


@pytest.mark.parametrize("seed", [0, 7, 2026])
@pytest.mark.parametrize("program", ["deadlines", "polling"])
def test_a_correct_program_passes(pytester: pytest.Pytester, program: str, seed: int) -> None:
    source = {"deadlines": DEADLINES, "polling": POLLING}[program]
    make_agent(pytester, source, fixed=True)
    prove(pytester, seed).assert_outcomes(passed=1)
