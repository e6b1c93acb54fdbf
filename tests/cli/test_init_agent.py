"""`harness init` on a project with an SDK: the stand-in and a proof of the project's own agent.

Issue 34 (item 9): init's stand-in imported httpx2 (not installed with every SDK) and answered
only Anthropic's shape, and its proof tested a sample. Now init finds the project's SDKs and its
agent's entry point (read with `ast`, never imported), writes a conftest whose
`harness_upstream` is `harness.upstream.StandIn` (with a fake key for each SDK), and a proof
that runs one turn of the agent under `prove_stable`. Recorded with no key, replayed under CI; a
racy tool order in the agent fails it with the cause.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.init._detect import detect_sdks, find_entry_point
from tests.support.inner import inner_pytest

AGENT = """
import asyncio
import os
import random

import openai

NAMES = ["weather", "search", "calendar", "mail"]


def make_client():
    return openai.OpenAI()


async def _load(name):
    await asyncio.sleep(random.random() / 200)  # an MCP server's answer
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


async def _tools():
    loaded = []

    async def add(name):
        loaded.append(await _load(name))

    await asyncio.gather(*(add(name) for name in NAMES))
    if os.environ.get("SORTED"):
        loaded.sort(key=lambda tool: tool["function"]["name"])
    return loaded


def ask(question: str) -> str:
    tools = asyncio.run(_tools())
    reply = make_client().chat.completions.create(
        model="gpt-5", tools=tools, messages=[{"role": "user", "content": question}])
    return reply.choices[0].message.content
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("openai")
    pytester.makefile(
        ".toml",
        pyproject='[project]\nname = "weather"\nversion = "0.1"\ndependencies = ["openai>=3"]\n',
    )
    (pytester.path / "weather").mkdir()
    (pytester.path / "weather/__init__.py").write_text("")
    (pytester.path / "weather/agent.py").write_text(AGENT)
    for name in ("CI", "SORTED", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return pytester.path


def test_init_finds_the_sdk_and_the_agents_entry_point_without_importing_it(project: Path) -> None:
    sdks = detect_sdks(project)
    assert [sdk.name for sdk in sdks] == ["openai"]
    point, under_src = find_entry_point(project, sdks)
    assert point is not None and (point.module, point.function, point.prompt) == (
        "weather.agent",
        "ask",
        True,
    )
    assert not under_src  # make_client, a helper, is not the entry point


def test_init_writes_a_stand_in_for_the_sdk_and_a_proof_of_the_agent(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(project)]) == 0
    out = capsys.readouterr().out
    assert "SDKs found: openai" in out and "agent entry point: weather.agent.ask" in out
    conftest = (project / "tests/conftest.py").read_text()
    assert "from harness.upstream import StandIn, text" in conftest
    assert 'os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-key")' in conftest
    assert "import httpx2" not in conftest
    proof = (project / "tests/test_prompt_cache.py").read_text()
    assert "from weather.agent import ask" in proof and 'return ask("What can you do?")' in proof
    assert "prove_stable(one_turn, hash_seeds=2)" in proof


@pytest.mark.slow  # pytest subprocesses and hash-seed children
def test_the_generated_proof_records_without_a_key_replays_and_catches_a_racy_agent(
    project: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["init", str(project)]) == 0
    capsys.readouterr()
    # pytest subprocesses, as the user runs the generated proof from a shell (the installed
    # plugins this suite never uses are left out: tests/cli/test_init.py runs one with them all)
    racy = inner_pytest(pytester, "--harness-mode=record", subprocess=True)
    racy.assert_outcomes(failed=1)
    racy.stdout.fnmatch_lines(["*cause: asyncio completion order*"])
    assert not list(project.rglob("fixtures/**/*.json"))
    monkeypatch.setenv("SORTED", "1")  # the fix
    inner_pytest(pytester, "--harness-mode=record", subprocess=True).assert_outcomes(passed=1)
    assert len(list(project.rglob("fixtures/**/*.json"))) == 1
    monkeypatch.setenv("CI", "true")
    inner_pytest(pytester, subprocess=True).assert_outcomes(passed=1)
