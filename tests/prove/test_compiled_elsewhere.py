"""A library whose code says it was compiled elsewhere still spawns the program's tasks.

pytest rewrites the modules of every pytest plugin's distribution (anyio ships one) and caches
the result beside the source, keyed by the source's time and size, not its path. A run in a
virtual environment whose site-packages links to these files (this suite's wheel test builds one)
writes that cache with the environment's path in every code object's `co_filename`; later runs
here load it as is. anyio's `start_soon` then named a file outside anyio, and the tasks of an
anyio task group were not the program's: nothing ordered them, and a racy loader passed its
proof in its first orders (or failed naming a partial order). The proof now tells whose code a
frame runs by its module, so the same agent fails with its whole cause whatever `co_filename`
says, and its sorted version passes.
"""

from __future__ import annotations

import types
from collections.abc import Iterator

import pytest

from .conftest import cause_of, make_agent, prove
from .test_latency_races import SHAPES

pytestmark = pytest.mark.slow  # a generated project proved in process: a second or more

anyio = pytest.importorskip("anyio")

AGENT = SHAPES["anyio-task-group"][0]  # the racy task group of the latency races

ELSEWHERE = "/elsewhere/venv/lib/python3.11/site-packages/anyio/"


@pytest.fixture
def anyio_compiled_elsewhere(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Every function of anyio's task groups (the abstract class and asyncio's backend) as a
    stale rewrite cache leaves it: `co_filename` under another environment's site-packages."""
    from anyio._backends import _asyncio as backend
    from anyio.abc import _tasks as abstract

    moved = 0
    for cls in (abstract.TaskGroup, backend.TaskGroup):
        for function in vars(cls).values():
            if not isinstance(function, types.FunctionType):
                continue
            where = ELSEWHERE + function.__code__.co_filename.rpartition("/anyio/")[2]
            monkeypatch.setattr(function, "__code__", function.__code__.replace(co_filename=where))
            moved += 1
    yield moved


@pytest.mark.parametrize("seed", [1, 7])
def test_a_racy_anyio_task_group_fails_with_its_whole_cause(
    pytester: pytest.Pytester, anyio_compiled_elsewhere: int, seed: int
) -> None:
    assert anyio_compiled_elsewhere >= 2  # start_soon and the backend's spawning functions
    make_agent(pytester, AGENT, fixed=False)
    result = prove(pytester, seed)
    result.assert_outcomes(failed=1)
    assert cause_of(result) == "asyncio completion order (fs, shell, web vs web, shell, fs)"


def test_the_same_task_group_passes_once_it_sorts(
    pytester: pytest.Pytester, anyio_compiled_elsewhere: int
) -> None:
    make_agent(pytester, AGENT, fixed=True)
    prove(pytester, 1).assert_outcomes(passed=1)
