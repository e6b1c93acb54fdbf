"""The proof perturbs the program's own sources of order: user projects through pytester.

Each project is an agent that builds its request from tools loaded by an unmodified loader: one
per source of order (asyncio latency, asyncio scheduling, thread pools, folder listings, entry
points). The racy version must fail with its cause named; the fixed one (it sorts) must pass.
Correct programs (timeouts, long sleeps, a deliberate order, nested loops) pass under any seed.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

pytest_plugins = ["pytester"]

BODY = """
def request(tools):
    return {
        "model": "claude-x",
        "max_tokens": 64,
        "system": "You are an agent.",
        "tools": [
            {"name": name, "description": name, "input_schema": {"type": "object"}}
            for name in tools
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }
"""

# source -> (agent module, the cause the report must name); `FIX` marks where the fix goes.
PROJECTS: dict[str, tuple[str, str]] = {
    "asyncio-latency": (
        """
        import asyncio

        LATENCY = {"fs": 0.03, "web": 0.01, "shell": 0.02}

        async def build():
            tools = []

            async def load(name):
                await asyncio.sleep(LATENCY[name])
                tools.append(name)

            await asyncio.gather(*(load(name) for name in LATENCY))
            return request(FIX(tools))
        """,
        r"cause: asyncio completion order \(fs, shell, web vs web, shell, fs\)",
    ),
    "asyncio-as-completed": (
        """
        import asyncio

        async def fetch(name):
            await asyncio.sleep({"a": 0.02, "b": 0.01, "c": 0.03}[name])
            return name

        async def build():
            tools = []
            for done in asyncio.as_completed([fetch(n) for n in "abc"]):
                tools.append(await done)
            return request(FIX(tools))
        """,
        r"cause: asyncio completion order",
    ),
    "asyncio-taskgroup": (
        """
        import asyncio

        async def build():
            tools = []

            async def load(name):
                await asyncio.sleep(0)  # an import or a response that is already there
                tools.append(name)

            async with asyncio.TaskGroup() as group:
                for name in ("search", "shell", "files"):
                    group.create_task(load(name))
            return request(FIX(tools))
        """,
        r"cause: asyncio completion order \(files, search, shell vs shell, search, files\)",
    ),
    "threads-as-completed": (
        """
        from concurrent.futures import ThreadPoolExecutor, as_completed

        def load(name):
            return name

        def build():
            tools = []
            with ThreadPoolExecutor(max_workers=4) as pool:
                for future in as_completed([pool.submit(load, n) for n in ("a", "b", "c")]):
                    tools.append(future.result())
            return request(FIX(tools))
        """,
        r"cause: thread completion order",
    ),
    "threads-map-side-effect": (
        """
        import time
        from concurrent.futures import ThreadPoolExecutor

        REGISTRY = []

        def register(name):
            time.sleep({"a": 0.02, "b": 0.01, "c": 0.0}[name])
            REGISTRY.append(name)

        def build():
            REGISTRY.clear()
            with ThreadPoolExecutor(max_workers=3) as pool:
                list(pool.map(register, ["a", "b", "c"]))
            return request(FIX(list(REGISTRY)))
        """,
        r"cause: thread completion order \(a, b, c vs c, b, a\)",
    ),
    "to-thread": (
        """
        import asyncio

        def read(name):
            return name

        async def build():
            tools = []

            async def load(name):
                tools.append(await asyncio.to_thread(read, name))

            await asyncio.gather(load("x"), load("y"), load("z"))
            return request(FIX(tools))
        """,
        r"cause: (asyncio|thread) completion order",
    ),
    "listdir": (
        """
        import os

        HERE = os.path.dirname(os.path.abspath(__file__))

        def build():
            folder = os.path.join(HERE, "plugins")
            names = [n[:-3] for n in os.listdir(folder) if n.endswith(".py")]
            return request(FIX(names))
        """,
        r"cause: filesystem listing order \(os\.listdir of plugins/\)",
    ),
    "pathlib-glob": (
        """
        from pathlib import Path

        def build():
            folder = Path(__file__).resolve().parent / "plugins"
            return request(FIX([p.stem for p in folder.glob("*.py")]))
        """,
        r"cause: filesystem listing order \(os\.scandir of plugins/\)",
    ),
    "entry-points": (
        """
        from importlib.metadata import entry_points

        def build():
            return request(FIX([ep.name for ep in entry_points(group="acme.tools")]))
        """,
        r"cause: entry-point order \(group 'acme\.tools'\)",
    ),
}

TEST = """
import agent

def test_header_is_stable(prove_stable):
    prove_stable(agent.build)
"""


def make_project(pytester: pytest.Pytester, source: str, *, fixed: bool) -> None:
    module, _ = PROJECTS[source]
    fix = "sorted" if fixed else "list"
    code = BODY + textwrap.dedent(module).replace("FIX(", f"{fix}(")
    pytester.makepyfile(agent=code, test_agent=TEST)
    plugins = pytester.path / "plugins"
    plugins.mkdir()
    for name in ("weather", "calendar", "maps", "notes"):
        (plugins / f"{name}.py").write_text("")
    for name in ("beta", "alpha"):
        _distribution(pytester.path / "site", name)
    pytester.syspathinsert(pytester.path / "site")
    pytester.syspathinsert()


def _distribution(site: Path, name: str) -> None:
    info = site / f"acme_{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: acme-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[acme.tools]\n{name} = os:getcwd\n")


# slow: the racy entry-points project takes 2.2-2.4 s of CPU in a serial run (issue 33)
RACY_SOURCES = [
    pytest.param(source, marks=pytest.mark.slow) if source == "entry-points" else source
    for source in sorted(PROJECTS)
]


@pytest.mark.parametrize("source", RACY_SOURCES)
def test_a_racy_loader_fails_naming_its_cause(pytester: pytest.Pytester, source: str) -> None:
    make_project(pytester, source, fixed=False)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=11")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert re.search(PROJECTS[source][1], out), out
    assert "tools_changed" in out and "reorder" in out
    first = out.index("cause: ")
    assert first < out.index("tools_changed"), "the cause comes before the report"


@pytest.mark.parametrize("source", sorted(PROJECTS))
def test_the_same_loader_passes_once_it_sorts(pytester: pytest.Pytester, source: str) -> None:
    make_project(pytester, source, fixed=True)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=11").assert_outcomes(passed=1)


@pytest.mark.parametrize("seed", [1, 2, 3, 1234567, 4294967295])
def test_a_race_is_caught_for_every_seed(pytester: pytest.Pytester, seed: int) -> None:
    make_project(pytester, "asyncio-taskgroup", fixed=False)
    result = inner_pytest(
        pytester, "-p", "no:randomly", f"--harness-seed={seed}", "--harness-shuffle=3"
    )
    result.assert_outcomes(failed=1)


CORRECT = """
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from agent import request

PRIORITY = ["bash", "read_file", "write_file"]  # deliberate, not alphabetical


async def timeouts():
    async def slow():
        await asyncio.sleep(0.2)
        return "slow"

    async def fast():
        await asyncio.sleep(0.01)
        return "fast"

    found = []
    try:
        found.append(await asyncio.wait_for(slow(), timeout=0.05))
    except TimeoutError:
        found.append("timed out")
    found.append(await asyncio.wait_for(fast(), timeout=5))
    async with asyncio.timeout(5):
        await asyncio.sleep(0.02)
    try:
        async with asyncio.timeout(0.02):
            await asyncio.sleep(0.5)
    except TimeoutError:
        found.append("timed out again")
    found.append(await asyncio.to_thread(lambda: "thread"))
    return found


def nested():
    async def inner():
        await asyncio.sleep(0)
        return "inner"

    with ThreadPoolExecutor(max_workers=2) as pool:
        return pool.submit(lambda: asyncio.run(inner())).result()


async def build():
    seen = await timeouts()
    assert seen == ["timed out", "fast", "timed out again", "thread"], seen
    assert nested() == "inner"
    await asyncio.gather(*(asyncio.sleep(0.05) for _ in range(3)))
    tools = []

    async def load(name):
        await asyncio.sleep({"bash": 0.02, "read_file": 0.01, "write_file": 0.0}[name])
        tools.append(name)

    await asyncio.gather(*(load(name) for name in PRIORITY))
    return request(sorted(tools, key=PRIORITY.index))
"""


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 7, 99, 2026])
def test_a_correct_program_with_timeouts_and_nested_loops_passes(
    pytester: pytest.Pytester, seed: int
) -> None:
    pytester.makepyfile(agent=BODY, correct=CORRECT)
    pytester.makepyfile(
        test_correct="""
        import correct

        def test_correct(prove_stable):
            result = prove_stable(correct.build)
            first = result.header_bytes[0]
            assert first.index(b'"bash"') < first.index(b'"read_file"')
        """
    )
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", f"--harness-seed={seed}")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_an_async_build_works_from_async_tests(pytester: pytest.Pytester) -> None:
    make_project(pytester, "asyncio-latency", fixed=True)
    pytester.makepyfile(
        test_async="""
        import pytest
        import agent

        @pytest.mark.anyio
        async def test_under_anyio(prove_stable):
            result = await prove_stable(agent.build)
            assert len(result.orders) == 8

        @pytest.mark.asyncio
        async def test_under_pytest_asyncio(prove_stable):
            prove_stable(agent.build)

        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "test_async.py")
    result.assert_outcomes(passed=2)


def test_an_async_build_fails_from_an_async_test_too(pytester: pytest.Pytester) -> None:
    make_project(pytester, "asyncio-latency", fixed=False)
    pytester.makepyfile(
        test_async="""
        import pytest
        import agent

        @pytest.mark.asyncio
        async def test_under_pytest_asyncio(prove_stable):
            prove_stable(agent.build)
        """
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "test_async.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cause: asyncio completion order*"])


RESTORED = """
import asyncio
import importlib.metadata
import os
from concurrent.futures import Future, ThreadPoolExecutor

import agent

def now():
    return (os.listdir, os.scandir, ThreadPoolExecutor.submit, Future.result, Future.done,
            importlib.metadata.Distribution.__dict__["discover"],
            importlib.metadata.EntryPoints.select, type(asyncio.get_event_loop_policy()))

ORIGINALS = now()

def test_a_failing_build_restores_everything(prove_stable):
    def build():
        os.listdir(".")
        raise RuntimeError("the build broke")

    try:
        prove_stable(build)
    except RuntimeError as error:
        assert "while building order 1 of 8" in "".join(error.__notes__)
    assert now() == ORIGINALS

def test_a_drifting_build_restores_everything(prove_stable):
    try:
        prove_stable(agent.build)
    except AssertionError:
        pass
    else:
        raise AssertionError("the racy build passed")
    assert now() == ORIGINALS
"""


def test_the_patched_functions_are_restored_after_a_failing_build(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, "listdir", fixed=False)
    pytester.makepyfile(test_restored=RESTORED)
    result = inner_pytest(pytester, "-p", "no:randomly", "test_restored.py")
    result.assert_outcomes(passed=2)


REPRODUCE = re.compile(r"reproduce:\s+(pytest \S+ .+)$", re.MULTILINE)


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_the_printed_reproduce_command_reproduces_the_cause(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    make_project(pytester, "asyncio-as-completed", fixed=False)
    first = inner_pytest(pytester, "-p", "randomly", *flags)
    first.assert_outcomes(failed=1)
    out = first.stdout.str()
    command = REPRODUCE.search(out)
    assert command is not None, out
    cause = re.search(r"cause: .*", out)
    assert cause is not None
    argv = command.group(1).split()[1:]
    again = inner_pytest(pytester, *argv)
    again.assert_outcomes(failed=1)
    assert cause.group(0) in again.stdout.str()


@pytest.mark.slow
def test_xdist_gives_the_same_verdicts(pytester: pytest.Pytester) -> None:
    make_project(pytester, "threads-as-completed", fixed=False)
    pytester.makepyfile(
        test_more="""
        import agent

        def test_fixed(prove_stable):
            prove_stable(lambda: agent.request(["z", "a"]))
        """
    )
    plain = inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=5")
    spread = inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=5", "-n", "2")
    plain.assert_outcomes(failed=1, passed=1)
    spread.assert_outcomes(failed=1, passed=1)


JUDGE_SENT = """
import asyncio
import httpx2
import anthropic
from harness.capture import current_session


def message():
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


async def build():
    session = current_session()
    client = anthropic.AsyncAnthropic(api_key="test", http_client=session.httpx2_async_client())
    tools = []

    async def load(name, latency):
        await asyncio.sleep(latency)
        tools.append({"name": name, "description": name, "input_schema": {"type": "object"}})

    await asyncio.gather(load("a", 0.02), load("b", 0.01))
    reply = await client.messages.create(
        model="claude-x", max_tokens=10, tools=tools,
        messages=[{"role": "user", "content": "hi"}],
    )
    return {"answer": reply.content[0].text}  # the same on every run: not what is judged
"""


def test_what_was_sent_is_judged_not_the_answer(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(sender=JUDGE_SENT)
    pytester.makeconftest(
        """
        import httpx2, pytest, sender

        @pytest.fixture
        def harness_upstream():
            return httpx2.MockTransport(lambda request: httpx2.Response(200, json=sender.message()))
        """
    )
    pytester.makepyfile(
        test_sent="""
        import sender

        def test_sent(prove_stable):
            prove_stable(sender.build)
        """
    )
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "cause: asyncio completion order (a, b vs b, a)" in out
    assert "tools_changed" in out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ('"Paris is the capital."', "not a JSON request body"),
        ('{"answer": "Paris"}', "looks like an answer, not a request header"),
        ("42", "build() returned int"),
        ("None", "returned None and no capture session recorded a request"),
    ],
)
def test_a_return_value_that_is_not_a_header_is_an_error(
    pytester: pytest.Pytester, returned: str, message: str
) -> None:
    pytester.makepyfile(
        test_answer=f"""
        def test_answer(prove_stable):
            prove_stable(lambda: {returned})
        """
    )
    result = inner_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert message in out, out
    assert "msgspec" not in out


def test_a_key_a_build_returns_is_not_printed_in_part() -> None:
    # The error quotes the start of what the build returned: redacted before it is cut, so the
    # key's prefix and first characters never reach the message (they once did, 40 characters).
    from harness._shared._errors import HarnessError
    from harness.prove._stable import prove_stable

    key = "sk-ant-api03-" + "Q7" * 48
    with pytest.raises(HarnessError) as caught:
        prove_stable(lambda: key)
    message = str(caught.value)
    assert "not a JSON request body" in message
    assert "sk-ant" not in message and "Q7Q7" not in message, message


@pytest.mark.slow
def test_a_set_ordered_header_fails_across_hash_seeds_without_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.prove._run_diff import HeaderDrift
    from harness.prove._stable import prove_stable

    (tmp_path / "hashed_agent.py").write_text(
        BODY
        + textwrap.dedent(
            """
            TOOLS = {"search", "fetch", "summarize", "translate", "calendar", "weather"}

            def build():
                return request(list(TOOLS))  # set order: fixed in a process, not across them

            def fixed():
                return request(sorted(TOOLS))
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HeaderDrift) as caught:
        prove_stable("hashed_agent:build", permutations=2, hash_seeds=(0, 1, 2, 3))
    assert re.search(r"^cause: PYTHONHASHSEED 0 vs \d$", str(caught.value), re.MULTILINE)
    prove_stable("hashed_agent:fixed", permutations=2, hash_seeds=(0, 1, 2, 3))


def test_a_seed_gives_the_same_orders_every_time() -> None:
    import asyncio

    from harness.prove.perturb._engine import perturbed
    from harness.prove.perturb._plan import ASYNCIO, plans

    async def loader() -> list[str]:
        done: list[str] = []

        async def load(name: str) -> None:
            await asyncio.sleep(0)
            done.append(name)

        await asyncio.gather(*(load(name) for name in "abcdefgh"))
        return done

    def orders(seed: int) -> list[list[str]]:
        seen = []
        for plan in plans(8, seed):
            with perturbed(plan) as journal:
                seen.append(asyncio.run(loader()))
            finished = journal.finished_order[ASYNCIO]
            assert finished.index("loader") > max(finished.index(f"load({n})") for n in "ah")
        return seen

    first, again, other = orders(42), orders(42), orders(43)
    assert first == again
    assert first[0] == list("abcdefgh") and first[1] == list("hgfedcba")
    assert first != other, "another seed draws other random orders"
    assert len({tuple(order) for order in first[3:]}) > 1, "the random runs differ"


FAN_OUT = """
import asyncio
import anthropic
from harness.capture import current_session


async def build():
    session = current_session()
    client = anthropic.AsyncAnthropic(api_key="test", http_client=session.httpx2_async_client())

    async def sub_agent(role, latency):
        await asyncio.sleep(latency)
        reply = await client.messages.create(
            model="claude-x", max_tokens=10, system=f"You are the {role}.",
            messages=[{"role": "user", "content": "go"}],
        )
        return reply.content[0].text

    return await asyncio.gather(sub_agent("researcher", 0.01), sub_agent("writer", 0.02))
"""


@pytest.mark.slow
def test_independent_sub_agents_sent_concurrently_are_not_drift(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(sender=JUDGE_SENT, fan_out=FAN_OUT)
    pytester.makeconftest(
        """
        import httpx2, pytest, sender

        @pytest.fixture
        def harness_upstream():
            return httpx2.MockTransport(lambda request: httpx2.Response(200, json=sender.message()))
        """
    )
    pytester.makepyfile(
        test_fan_out="""
        import fan_out

        def test_fan_out(prove_stable):
            result = prove_stable(fan_out.build)
            assert any("another order" in note for note in result.notes)
        """
    )
    pytester.syspathinsert()
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=1)


UNMODIFIED = """
import asyncio
import anthropic


async def run_agent(fixed=False):
    client = anthropic.AsyncAnthropic(api_key="test")  # the agent makes its own client
    tools = []

    async def load(name, latency):
        await asyncio.sleep(latency)
        tools.append({"name": name, "description": name, "input_schema": {"type": "object"}})

    await asyncio.gather(load("a", 0.02), load("b", 0.01))
    if fixed:
        tools.sort(key=lambda tool: tool["name"])
    reply = await client.messages.create(
        model="claude-x", max_tokens=10, tools=tools, messages=[{"role": "user", "content": "hi"}]
    )
    return reply.content[0].text
"""


@pytest.mark.slow
def test_an_intercepted_agent_is_judged_by_what_it_sent(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(sender=JUDGE_SENT, unmodified=UNMODIFIED)
    pytester.makeconftest(
        """
        import httpx2, pytest, sender

        @pytest.fixture
        def harness_upstream():
            return httpx2.MockTransport(lambda request: httpx2.Response(200, json=sender.message()))
        """
    )
    pytester.makepyfile(
        test_unmodified="""
        import pytest
        import unmodified

        @pytest.mark.header_capture
        def test_racy(prove_stable):
            prove_stable(unmodified.run_agent)

        @pytest.mark.header_capture
        def test_fixed(prove_stable):
            prove_stable(lambda: unmodified.run_agent(fixed=True))
        """
    )
    pytester.syspathinsert()
    recording = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    recording.assert_outcomes(failed=1, passed=1)
    recording.stdout.fnmatch_lines(["*cause: asyncio completion order (a, b vs b, a)*"])
    replay = inner_pytest(pytester, "-p", "no:randomly", "test_unmodified.py::test_fixed")
    replay.assert_outcomes(passed=1)  # offline, from the cassette the passing test wrote
