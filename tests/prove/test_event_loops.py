"""Event loops the build brings: perturbed anyway, or one line saying why not; never a silent pass.

uvloop (installed as a policy, run through `uvloop.run`, or made directly), a policy of the
build's own, and a `loop_factory` handed to `asyncio.Runner`: the racy agent fails with its
cause, the fixed one passes, and the proof leaves the process's policy as it found it.
"""

from __future__ import annotations

import re

import pytest

from .conftest import cause_of, make_agent, prove

# Each test runs a generated project under several seeds: seconds each.
pytestmark = pytest.mark.slow

pytest.importorskip("uvloop")

LOADERS = """
import asyncio

LATENCY = {"fs": 0.03, "web": 0.01, "shell": 0.02}


async def load_all(fixed=False):
    tools = []

    async def load(name):
        await asyncio.sleep(LATENCY[name])
        tools.append(name)

    await asyncio.gather(*(load(name) for name in LATENCY))
    return FIX(tools)
"""

RUNS: dict[str, str] = {
    "uvloop-install": """
        import uvloop

        def build():
            uvloop.install()
            return request(asyncio.run(load_all()))
    """,
    "uvloop-run": """
        import uvloop

        def build():
            return request(uvloop.run(load_all()))
    """,
    "uvloop-loop-made-directly": """
        import uvloop

        def build():
            loop = uvloop.new_event_loop()
            try:
                return request(loop.run_until_complete(load_all()))
            finally:
                loop.close()
    """,
    "own-policy": """
        class AgentPolicy(asyncio.DefaultEventLoopPolicy):
            pass

        def build():
            asyncio.set_event_loop_policy(AgentPolicy())
            return request(asyncio.run(load_all()))
    """,
    "runner-loop-factory": """
        def build():
            with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
                return request(runner.run(load_all()))
    """,
}


def _source(run: str) -> str:
    import textwrap

    return LOADERS + textwrap.dedent(RUNS[run])


@pytest.mark.parametrize("seed", [1, 2026])
@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_loop_the_build_brings_is_perturbed(
    pytester: pytest.Pytester, run: str, seed: int
) -> None:
    make_agent(pytester, _source(run), fixed=False)
    result = prove(pytester, seed)
    result.assert_outcomes(failed=1)
    assert re.fullmatch(
        r"asyncio completion order \(fs, shell, web vs web, shell, fs\)", cause_of(result)
    )


@pytest.mark.parametrize("seed", [1, 2026])
@pytest.mark.parametrize("run", sorted(RUNS))
def test_the_same_agent_passes_once_it_sorts(
    pytester: pytest.Pytester, run: str, seed: int
) -> None:
    make_agent(pytester, _source(run), fixed=True)
    pytester.makepyfile(
        test_policy="""
        import asyncio

        import agent

        def test_the_policy_is_left_as_it_was(prove_stable):
            before = type(asyncio.get_event_loop_policy())
            prove_stable(agent.build)
            assert type(asyncio.get_event_loop_policy()) is before
        """
    )
    prove(pytester, seed).assert_outcomes(passed=2)


def test_a_loop_that_cannot_be_perturbed_fails_in_one_line(pytester: pytest.Pytester) -> None:
    # uvloop's compiled base class, made directly: its class cannot take the proof's scheduling.
    source = _source("runner-loop-factory").replace(
        "asyncio.Runner(loop_factory=asyncio.SelectorEventLoop)",
        "asyncio.Runner(loop_factory=uvloop.loop.Loop)",
    )
    make_agent(pytester, "import uvloop.loop\n" + source, fixed=True)
    result = prove(pytester, 1)
    result.assert_outcomes(failed=1)
    lines = [line for line in result.stdout.lines if "could not perturb the event loop" in line]
    assert lines, result.stdout.str()
    assert "the build runs (uvloop.loop.Loop: its class cannot be extended" in lines[0]
    assert lines[0].rstrip().endswith("or a Python subclass"), lines[0]
