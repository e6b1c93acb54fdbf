"""The proof under attack: races it must catch and correct programs it must leave alone.

Each case came from an adversarial review: a racy agent that passed, a correct one that failed
or hung, a cause that named the wrong source. They call `harness.prove_stable` directly, over
several seeds: detection must not depend on luck.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pytest

from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import PerturbationWarning, prove_stable

SEEDS = [1, 2, 3, 7, 11, 2026]


def request(tools: list[str]) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "system": "You are an agent.",
        "tools": [{"name": n, "description": n, "input_schema": {}} for n in tools],
        "messages": [{"role": "user", "content": "hi"}],
    }


def fails(build: Any, seed: int, **options: Any) -> str:
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(build, seed=seed, **options)
    return str(caught.value)


# -- races that must be caught ----------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_call_later_latencies_are_perturbed(seed: int) -> None:
    async def build() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        tools: list[str] = []

        async def load(name: str, latency: float) -> None:
            done: asyncio.Future[str] = loop.create_future()
            loop.call_later(latency, done.set_result, name)
            tools.append(await done)

        await asyncio.gather(load("fs", 0.03), load("web", 0.01), load("shell", 0.02))
        return request(tools)

    assert "cause: asyncio completion order" in fails(build, seed)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_heartbeat_timer_does_not_hide_a_sleep_race(seed: int) -> None:
    async def build() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        beat: list[asyncio.TimerHandle] = []

        def tick() -> None:
            beat.append(loop.call_later(0.007, tick))

        tick()
        tools: list[str] = []

        async def load(name: str, latency: float) -> None:
            await asyncio.sleep(latency)
            tools.append(name)

        await asyncio.gather(load("fs", 0.03), load("web", 0.01), load("shell", 0.02))
        beat[-1].cancel()
        return request(tools)

    assert "cause: asyncio completion order" in fails(build, seed)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_anyio_worker_threads_are_perturbed(seed: int) -> None:
    anyio = pytest.importorskip("anyio")

    def load(name: str) -> str:
        time.sleep({"a": 0.02, "b": 0.0, "c": 0.01}[name])
        return name

    async def build() -> dict[str, Any]:
        tools: list[str] = []

        async def one(name: str) -> None:
            tools.append(await anyio.to_thread.run_sync(load, name))

        async with anyio.create_task_group() as group:
            for name in "abc":
                group.start_soon(one, name)
        return request(tools)

    assert "completion order" in fails(build, seed)


LOOPS: dict[str, asyncio.AbstractEventLoop] = {}


def _background_loop() -> asyncio.AbstractEventLoop:
    """A sync facade's event loop, made once on first use and kept (as some SDK wrappers do)."""
    if "loop" not in LOOPS:
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        LOOPS["loop"] = loop
    return LOOPS["loop"]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_loop_made_in_an_earlier_run_is_perturbed_in_later_ones(seed: int) -> None:
    async def load_all() -> list[str]:
        tools: list[str] = []

        async def load(name: str) -> None:
            await asyncio.sleep(0)
            tools.append(name)

        await asyncio.gather(*(load(n) for n in ("a", "b", "c")))
        return tools

    def build() -> dict[str, Any]:
        future = asyncio.run_coroutine_threadsafe(load_all(), _background_loop())
        return request(future.result(timeout=5))

    try:
        assert "cause: asyncio completion order" in fails(build, seed)
    finally:
        loop = LOOPS.pop("loop")
        loop.call_soon_threadsafe(loop.stop)


def _installed(site: Path, name: str, version: str = "1.0") -> None:
    info = site / f"acme_{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: acme-{name}\nVersion: {version}\n"
    )
    (info / "entry_points.txt").write_text(f"[acme.tools]\n{name}{version[0]} = os:getcwd\n")


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_distributions_imported_by_name_are_perturbed(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import distributions  # bound before the proof, as users write it

    for name in ("beta", "alpha", "gamma"):
        _installed(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))

    def build() -> dict[str, Any]:
        names = [
            d.metadata["Name"] for d in distributions() if d.metadata["Name"].startswith("acme")
        ]
        return request(names)

    assert "cause: entry-point order" in fails(build, seed)


def test_a_cached_discovery_is_flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import entry_points

    for name in ("beta", "alpha"):
        _installed(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))

    @functools.lru_cache
    def discover() -> tuple[str, ...]:
        return tuple(ep.name for ep in entry_points(group="acme.tools"))

    with pytest.warns(PerturbationWarning, match="entry points in its first run only"):
        result = prove_stable(lambda: request(list(discover())), seed=1)
    assert any("a cache?" in note for note in result.notes)


@pytest.mark.slow
def test_hash_seeds_can_be_a_count_drawn_from_the_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "two_tools.py").write_text(
        "TOOLS = {'read_file', 'write_file'}\n"
        "def build():\n"
        "    return {'model': 'm', 'system': 's', 'messages': [],\n"
        "            'tools': [{'name': n, 'input_schema': {}} for n in TOOLS]}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    text = fails("two_tools:build", 1, permutations=1, hash_seeds=8)
    assert "cause: PYTHONHASHSEED" in text


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_pool_jobs_submitted_far_apart_are_still_one_burst(seed: int) -> None:
    def load(name: str) -> str:
        return name

    def build() -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = []
            for name in ("a", "b", "c"):
                time.sleep(0.03)  # setup between submissions
                futures.append(pool.submit(load, name))
            return request([f.result() for f in as_completed(futures)])

    assert "cause: thread completion order" in fails(build, seed)


# -- correct programs that must pass ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_timeouts_keep_their_meaning_for_each_loader(seed: int) -> None:
    # If a short sleep were moved to a longer one's slot, its own timeout would fire first.
    # The slack between a short sleep and its deadline is wide (0.38 s): a plain asyncio loop
    # starved that long by a loaded machine would miss the deadline too.
    latency = {"fs": 0.6, "web": 0.01, "shell": 0.02}
    deadline = {"fs": 1.5, "web": 0.4, "shell": 0.4}

    async def build() -> dict[str, Any]:
        tools: list[str] = []

        async def load(name: str) -> None:
            async with asyncio.timeout(deadline[name]):
                await asyncio.sleep(latency[name])
            tools.append(name)

        await asyncio.gather(*(load(name) for name in latency))
        return request(sorted(tools))

    prove_stable(build, seed=seed)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_one_worker_pool_is_a_queue_not_a_race(seed: int) -> None:
    def build() -> dict[str, Any]:
        tools: list[str] = []
        with ThreadPoolExecutor(max_workers=1) as serial:
            for name in ("search", "fetch", "read"):
                serial.submit(tools.append, name)
        return request(tools)

    prove_stable(build, seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_jobs_that_wait_for_each_other_pass_quickly(seed: int) -> None:
    def build() -> dict[str, Any]:
        handoff: queue.Queue[str] = queue.Queue()
        barrier = threading.Barrier(3, timeout=0.5)

        def consume() -> str:
            barrier.wait()
            return handoff.get(timeout=0.5)

        def produce() -> str:
            barrier.wait()
            handoff.put("tool")
            return "producer"

        with ThreadPoolExecutor(max_workers=3) as pool:
            got = [pool.submit(consume), pool.submit(produce), pool.submit(barrier.wait)]
            names = [str(f.result()) for f in got[:2]]
        return request(sorted(names))

    started = time.monotonic()
    prove_stable(build, seed=seed)
    assert time.monotonic() - started < 5


def test_independent_conversations_may_go_out_in_any_order() -> None:
    from harness._shared._views import CacheView

    async def build() -> list[CacheView]:
        sent: list[CacheView] = []

        async def agent(system: str, latency: float) -> None:
            await asyncio.sleep(latency)
            sent.append(CacheView({"model": "m"}, {"system": system, "tools": []}))

        await asyncio.gather(agent("researcher", 0.01), agent("writer", 0.02))
        return sent

    result = prove_stable(build, seed=3)
    assert any("another order" in note for note in result.notes)


@pytest.mark.slow
def test_a_stale_shadowed_copy_is_not_a_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import entry_points

    _installed(tmp_path / "new", "omega", "2.0")
    _installed(tmp_path / "old", "omega", "1.0")
    _installed(tmp_path / "new", "alpha")
    monkeypatch.syspath_prepend(str(tmp_path / "old"))
    monkeypatch.syspath_prepend(str(tmp_path / "new"))

    def build() -> dict[str, Any]:
        return request(sorted(ep.name for ep in entry_points(group="acme.tools")))

    for seed in SEEDS[:3]:
        prove_stable(build, seed=seed)


@pytest.mark.slow
def test_an_abandoned_job_does_not_hold_the_proof() -> None:
    stop = threading.Event()

    def never_ends() -> str:
        stop.wait(30)
        return "late"

    def build() -> dict[str, Any]:
        pool = ThreadPoolExecutor(max_workers=2)
        future = pool.submit(never_ends)
        with contextlib.suppress(TimeoutError):
            future.result(timeout=0.1)
        pool.shutdown(wait=False, cancel_futures=True)
        return request(["fallback"])

    started = time.monotonic()
    try:
        prove_stable(build, seed=1)
    finally:
        stop.set()
    assert time.monotonic() - started < 10


# -- causes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_race_no_source_controls_is_not_blamed_on_one(seed: int) -> None:
    def build() -> dict[str, Any]:
        tools: list[str] = []
        lock = threading.Lock()

        def load(name: str) -> None:
            time.sleep(0.001)
            with lock:
                tools.append(name)

        threads = [threading.Thread(target=load, args=(n,)) for n in "abcdefgh"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return request(tools)

    try:
        text = fails(build, seed, permutations=20)
    except pytest.fail.Exception:
        pytest.skip("the threads happened to finish in one order every run")
    cause = next(line for line in text.splitlines() if line.startswith("cause: "))
    assert "asyncio" not in cause and "filesystem" not in cause and "entry-point" not in cause
