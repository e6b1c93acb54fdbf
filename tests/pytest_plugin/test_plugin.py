"""The pytest plugin, driven through pytester as a user's project would use it.

Each behaviour runs without xdist, with `-n 0` and with `-n 2`, with pytest-randomly active and
with `-p no:randomly`.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.support.inner import inner_pytest

pytest_plugins = ["pytester"]

XDIST = {"plain": [], "n0": ["-n", "0"], "n2": ["-n", "2"]}
RANDOMLY = {"randomly": ["-p", "randomly"], "no-randomly": ["-p", "no:randomly"]}
SLOW = ("n2",)  # `-n 2` runs pytest in a subprocess that starts two workers: seconds a run


def xdist_cases() -> list[Any]:
    return [pytest.param(XDIST[x], id=x, marks=[pytest.mark.slow] * (x in SLOW)) for x in XDIST]


MATRIX = [
    pytest.param(XDIST[x] + RANDOMLY[r], id=f"{x}-{r}", marks=[pytest.mark.slow] * (x in SLOW))
    for x in XDIST
    for r in RANDOMLY
]

RACY_AGENT = '''
import asyncio

from harness.agent import order_tools, ToolSchema

TOOL_ORDER = None  # the fix: TOOL_ORDER = ["<unlisted-tools>"]

PLUGINS = {
    "files": [("read_file", "Read a file."), ("write_file", "Write a file.")],
    "shell": [("bash", "Run a command.")],
    "search": [("grep", "Search file contents."), ("glob", "Find files by pattern.")],
    "web": [("fetch", "Fetch a URL.")],
}


async def load(order):
    """Plugins load concurrently and register as each finishes: the race."""
    registry = []

    async def load_one(name):
        await asyncio.sleep(0)
        params = {"type": "object", "properties": {}}
        registry.extend(ToolSchema(n, d, params) for n, d in PLUGINS[name])

    await asyncio.gather(*(load_one(name) for name in order))
    return registry


def build_request(order):
    tools = asyncio.run(load(order))
    if TOOL_ORDER is not None:
        tools = order_tools(tools, TOOL_ORDER)
    return {
        "model": "claude-test",
        "max_tokens": 512,
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ],
        "system": "You are a coding agent.",
        "messages": [{"role": "user", "content": "hi"}],
    }
'''

RACY_TEST = """
import agent


def test_header_is_stable_under_registration_order(registration_shuffle):
    registration_shuffle.assert_stable(agent.build_request, list(agent.PLUGINS))
"""


def racy_project(pytester: pytest.Pytester, *, fixed: bool) -> None:
    source = RACY_AGENT
    if fixed:
        source = source.replace("TOOL_ORDER = None", 'TOOL_ORDER = ["<unlisted-tools>"]')
    pytester.makepyfile(agent=source, test_agent=RACY_TEST)
    pytester.syspathinsert()


REPRODUCE = re.compile(r"reproduce:\s+(pytest \S+ .+)$", re.MULTILINE)


def assert_racy_report(result: pytest.RunResult, flags: list[str]) -> None:
    """The racy project's run: one failure naming the seed, both orders and how to reproduce."""
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "header drift under permutation" in out
    assert "tools_changed" in out
    assert re.search(r"seed \d+", out)
    assert "order A" in out and "order B" in out
    assert REPRODUCE.search(out), out
    assert "header drift" in out  # the terminal summary section
    if "no:randomly" in flags:
        assert "--harness-seed=" in REPRODUCE.search(out).group(1)  # type: ignore[union-attr]
    else:
        assert "--randomly-seed=" in REPRODUCE.search(out).group(1)  # type: ignore[union-attr]


# The `-n 2` cells are checked by the first run of the rerun test below, which makes this same run
# and asserts the same report (assert_racy_report) before it reruns: one run with workers fewer.
@pytest.mark.parametrize("flags", [case for case in MATRIX if not case.id.startswith(SLOW)])
def test_a_racy_registry_fails_under_shuffle_naming_the_seed_and_orders(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    racy_project(pytester, fixed=False)
    assert_racy_report(inner_pytest(pytester, *flags), flags)


@pytest.mark.parametrize("flags", MATRIX)
def test_the_same_registry_with_tool_order_set_passes(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    racy_project(pytester, fixed=True)
    result = inner_pytest(pytester, *flags)
    result.assert_outcomes(passed=1)
    assert "no header drift" in result.stdout.str()


def _orders(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if "order B" in line and ":" in line][:2]


@pytest.mark.slow
@pytest.mark.parametrize("flags", MATRIX)
def test_rerunning_with_the_printed_seed_reproduces_the_failure(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    racy_project(pytester, fixed=False)
    first = inner_pytest(pytester, *flags)
    assert_racy_report(first, flags)  # for `-n 2`, the only run of the racy project's report
    match = REPRODUCE.search(first.stdout.str())
    assert match
    command = shlex.split(match.group(1))[1:]  # drop "pytest"
    xdist = [f for f in flags if f in ("-n", "0", "2")]
    second = inner_pytest(pytester, *command, *xdist)
    second.assert_outcomes(failed=1)
    seed = re.search(r"seed (\d+)", first.stdout.str())
    assert seed and f"seed {seed.group(1)}" in second.stdout.str()
    assert _orders(first.stdout.str()) == _orders(second.stdout.str())
    assert _orders(first.stdout.str())


SCENARIO_TEST = """
from harness.scenarios._formats import PinSpec, PluginSpec, Scenario, ToolSpec
from harness.agent import ScriptedReply

PLUGINS = (
    PluginSpec(
        name="files",
        tools=(ToolSpec("read_file", "Read a file."), ToolSpec("write_file", "Write a file.")),
    ),
    PluginSpec(name="shell", tools=(ToolSpec("bash", "Run a command."),)),
)
SCENARIO = Scenario(
    name="hello",
    config={"tool_order": ["bash", "<unlisted-tools>"]},
    variables={"cwd": "/work", "platform": "linux"},
    plugins=PLUGINS,
    loops=(("hello",),),
    script=(ScriptedReply(text="hi there"),),
    pin=PinSpec("default", owner=True),
)


def test_hello(agent_harness):
    outcome = agent_harness.check(SCENARIO)
    assert outcome.ok
"""


def scenario_project(pytester: pytest.Pytester) -> Path:
    pytester.makepyfile(test_scenario=SCENARIO_TEST)
    pytester.makeini("[pytest]\nharness_fixtures = recorded/fixtures\n")
    return pytester.path / "recorded"


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def assert_no_recording_fails(pytester: pytest.Pytester, root: Path, flags: list[str]) -> None:
    result = inner_pytest(pytester, *flags)
    result.assert_outcomes(failed=1)
    assert "no recording for scenario 'hello'" in result.stdout.str()
    assert not root.exists()


# The `-n 2` cell is the first run of the record-check-update test below, on the same project.
@pytest.mark.parametrize("flags", [case for case in xdist_cases() if case.id not in SLOW])
def test_check_mode_with_no_recording_fails_and_writes_nothing(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    assert_no_recording_fails(pytester, scenario_project(pytester), flags)


@pytest.mark.slow
@pytest.mark.parametrize("flags", xdist_cases())
def test_record_then_check_under_ci_writes_nothing_and_update_rewrites_only_what_changed(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    """One project through its life: check mode with no recording fails and writes nothing; one
    recording for the rest: under CI, check passes and nothing is written (update is refused);
    then update rewrites nothing until the scenario changes, and then only its files."""
    root = scenario_project(pytester)
    assert_no_recording_fails(pytester, root, flags)
    inner_pytest(pytester, "--harness-mode=record", *flags).assert_outcomes(passed=1)
    recorded = files_of(root)
    assert {
        "fixtures/hello/scenario.json",
        "fixtures/hello/log.json",
        "snapshots/headers/default/tool-schemas.expected.json",
    } <= set(recorded)
    with pytest.MonkeyPatch.context() as ci:
        ci.setenv("CI", "true")
        result = inner_pytest(pytester, *flags)
        result.assert_outcomes(passed=1)
        assert files_of(root) == recorded
        refused = inner_pytest(pytester, "--harness-mode=update", *flags)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        assert "CI never writes" in refused.stderr.str()
        assert files_of(root) == recorded

    unchanged = inner_pytest(pytester, "--harness-mode=update", *flags)
    unchanged.assert_outcomes(passed=1)
    assert files_of(root) == recorded  # bytes and mtimes: nothing rewritten
    test_file = pytester.path / "test_scenario.py"
    test_file.write_text(
        test_file.read_text().replace(
            '"bash", "<unlisted-tools>"', '"read_file", "<unlisted-tools>"'
        )
    )
    assert (
        inner_pytest(pytester, *flags).ret == pytest.ExitCode.TESTS_FAILED
    )  # check mode: changed input
    inner_pytest(pytester, "--harness-mode=update", *flags).assert_outcomes(passed=1)
    after = files_of(root)
    changed = {name for name in after if after[name] != recorded.get(name)}
    assert changed == {
        "fixtures/hello/scenario.json",
        "snapshots/headers/default/tool-schemas.expected.json",
    }
    tools = json.loads((root / "snapshots/headers/default/tool-schemas.expected.json").read_text())
    assert [t["name"] for t in tools["initial"]] == ["read_file", "bash", "write_file"]
    inner_pytest(pytester, *flags).assert_outcomes(passed=1)


@pytest.mark.parametrize("flags", xdist_cases())
def test_moves_header_without_a_reason_is_an_error_and_uses_are_listed(
    pytester: pytest.Pytester, flags: list[str]
) -> None:
    pytester.makepyfile(
        test_marks="""
import pytest

@pytest.mark.moves_header
def test_no_reason():
    pass

@pytest.mark.moves_header(reason="the persona changes on purpose in this release")
def test_with_reason():
    pass
"""
    )
    result = inner_pytest(pytester, *flags)
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert "moves_header needs reason=" in out
    assert "1 test(s) marked moves_header" in out
    assert "the persona changes on purpose in this release" in out


def test_the_report_header_names_mode_and_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_ok():\n    pass\n")
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=4242")
    result.assert_outcomes(passed=1)
    assert (
        "harness: mode check, 8 registration orders per scenario, seed 4242 (from --harness-seed)"
        in result.stdout.str()
    )


def test_an_unknown_mode_in_ini_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nharness_mode = sometimes\n")
    pytester.makepyfile(test_nothing="def test_ok():\n    pass\n")
    result = inner_pytest(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "harness_mode must be one of" in result.stderr.str()


@pytest.mark.slow
def test_header_snapshot_stores_exact_bytes_and_reports_drift(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_snap="""
import os
from harness.agent import ToolSchema, LlmConfig, canonical_header

ORDER = os.environ.get("TOOLS", "a,b").split(",")

def test_header(header_snapshot):
    tools = [ToolSchema(n, n + " tool", {"type": "object"}) for n in ORDER]
    header = canonical_header(LlmConfig("p", "m"), "system text", tools)
    assert header == header_snapshot
"""
    )
    inner_pytest(pytester, "--snapshot-update").assert_outcomes(passed=1)
    (stored,) = (pytester.path / "__snapshots__").rglob("*.header.json")
    assert stored.read_bytes().startswith(
        b'{"config":{"provider":"p","model":"m"},"system":"system text","tools":[{"name":"a"'
    )
    inner_pytest(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("TOOLS", "b,a")
    result = inner_pytest(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "tools_changed" in out and "reorder" in out
