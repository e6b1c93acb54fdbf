"""The example projects under `examples/`.

The two SDK agents are proved here directly, through `CaptureSession` and `prove_stable` on the
cassettes they ship, in both states: as shipped (fixed) and with `HARNESS_EXAMPLE_RACY=1`, which
brings back the racy line the README shows. Then each example's own test suite runs the way its
README says, through the harness pytest plugin (skipped until the plugin provides the
`header_capture` and `prove_stable` fixtures). The two framework examples (pydantic-ai and
openai-agents) are the newcomer's path: the agent is not touched, the tests carry
`@pytest.mark.header_capture`; recorded once, replayed offline under CI, and failing on a
reordered or an edited tool.

The PYTHONHASHSEED subprocesses import this module to find `ask_support_agent`, so the example
packages and SDKs are imported inside functions only.

Each example's suite runs once in a pytest subprocess, as its README runs it from a shell (the
framework examples' record, reordered-tool and edited-tool runs are in process, their frameworks
imported once for the module: decision 0036); the installed
pytest plugins this suite never uses (`UNUSED_PLUGINS`: hypothesis', and langsmith's, which
langchain brings) are left out, as an example's own install would not bring them. The user's own
`pytest` with every installed plugin runs in tests/cli/test_init.py (decision 0036).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.capture import CaptureSession, CassetteMismatch, cassette_path_for, current_session
from harness.prove._run_diff import HeaderDrift
from harness.prove._stable import make_prove_stable_fixture
from tests.support.inner import imported_first, inner_pytest
from tests.support.paths import EXAMPLES

ANTHROPIC = EXAMPLES / "anthropic_agent"
OPENAI = EXAMPLES / "openai_agent"
PYDANTIC_AI = EXAMPLES / "pydantic_ai_agent"
OPENAI_AGENTS = EXAMPLES / "openai_agents_agent"
SUITES = {ANTHROPIC: 2, OPENAI: 2, PYDANTIC_AI: 2, OPENAI_AGENTS: 1}  # tests in each suite
# A tool as each framework example declares it, and an edit of its description.
EDITS = {
    PYDANTIC_AI: ("day_planner/toolkits.py", "Current weather for a city.", "Weather, now."),
    OPENAI_AGENTS: (
        "support_desk/providers.py",
        "Search the internal documentation.",
        "Search the docs.",
    ),
}
RACY = "HARNESS_EXAMPLE_RACY"
TRIP_QUESTION = "Is it a good day for a walk in Paris?"
SUPPORT_QUESTION = "Where is the deploy runbook?"


def cassette(example: Path, test: str) -> Path:
    return cassette_path_for(example / "fixtures" / "cassettes", f"tests/test_agent.py::{test}")


def replaying(example: Path, test: str) -> CaptureSession:
    path = cassette(example, test)
    assert path.is_file(), f"the example ships {path}"
    return CaptureSession.for_test(path, "check", writes_allowed=False)


@pytest.fixture
def examples_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(ANTHROPIC))
    monkeypatch.syspath_prepend(str(OPENAI))
    monkeypatch.delenv(RACY, raising=False)
    yield


def ask_support_agent(tools: list[Any]) -> None:
    """The support agent's build: module level, so hash-seed subprocesses can import it."""
    import openai
    from support_agent import SupportAgent

    client = openai.OpenAI(api_key="sk-test", http_client=current_session().httpx2_client())
    SupportAgent(client, tools).ask(SUPPORT_QUESTION)


def trip_build(session: CaptureSession) -> Any:
    import anthropic
    from weather_agent import TripAgent

    def build(plugins: list[Any]) -> None:
        client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
        TripAgent.with_plugins(client, plugins).run(TRIP_QUESTION)

    return build


# -- the anthropic example, directly -------------------------------------------------------------


@pytest.mark.usefixtures("examples_on_path")
def test_trip_agent_replays_its_cassette_and_extends_its_prefix() -> None:
    import anthropic
    from weather_agent import PLUGINS, TripAgent

    session = replaying(ANTHROPIC, "test_agent_turn")
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
    answer = TripAgent.with_plugins(client, PLUGINS).run(TRIP_QUESTION)

    assert "walk" in answer
    assert len(session.requests) == 2 and all(r.split for r in session.requests)
    session.assert_prefix_extends()
    assert session.finish() == ([], [])


@pytest.mark.usefixtures("examples_on_path")
def test_trip_agent_is_stable_under_plugin_load_orders() -> None:
    from weather_agent import PLUGINS

    session = replaying(ANTHROPIC, "test_plugin_load_order_does_not_move_the_header")
    prove = make_prove_stable_fixture(seed=2026, permutations=8, command=None, capture=session)
    result = prove(trip_build(session), PLUGINS)
    assert len(result.orders) == 8 and len(set(result.header_bytes)) == 1


@pytest.mark.usefixtures("examples_on_path")
def test_trip_agent_before_the_fix_fails_with_a_report_on_the_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from weather_agent import PLUGINS

    monkeypatch.setenv(RACY, "1")
    session = replaying(ANTHROPIC, "test_plugin_load_order_does_not_move_the_header")
    prove = make_prove_stable_fixture(seed=2026, permutations=8, command=None, capture=session)
    with pytest.raises(HeaderDrift) as caught:
        prove(trip_build(session), PLUGINS)

    report = caught.value.report
    assert report is not None
    assert (report.block, report.verdict, report.kind) == ("tools", "tools_changed", "reorder")
    pairs = zip(report.tools_a, report.tools_b, strict=True)
    moved = next(i for i, (a, b) in enumerate(pairs) if a != b)
    assert report.pointer == f"/tools/{moved}/name" and report.offset > 0
    assert report.tool == report.tools_b[moved] != report.tools_a[moved]  # first out of place
    assert report.prefix_bytes_lost > 1000
    text = str(caught.value)
    assert f'first out of place: "{report.tool}"' in text
    assert f"byte {report.offset}" in text and "cached bytes" in text and "lost" in text

    turn = replaying(ANTHROPIC, "test_agent_turn")  # the racy order is not the recorded one
    import anthropic
    from weather_agent import TripAgent

    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=turn.httpx2_client())
    with pytest.raises(CassetteMismatch, match="tools block first"):
        TripAgent.with_plugins(client, PLUGINS).run(TRIP_QUESTION)


# -- the openai example, directly ----------------------------------------------------------------


@pytest.mark.usefixtures("examples_on_path")
def test_support_agent_replays_its_cassette_and_extends_its_prefix() -> None:
    import openai
    from support_agent import SupportAgent

    session = replaying(OPENAI, "test_agent_turn")
    client = openai.OpenAI(api_key="sk-test", http_client=session.httpx2_client())
    assert "runbooks/deploy.md" in SupportAgent(client).ask(SUPPORT_QUESTION)
    session.assert_prefix_extends()
    assert [r.split.provider for r in session.requests if r.split] == ["openai-chat"] * 2


@pytest.mark.slow
@pytest.mark.usefixtures("examples_on_path")
def test_support_agent_is_stable_in_process_and_across_hash_seeds() -> None:
    from support_agent import LOCAL_TOOLS

    session = replaying(OPENAI, "test_tool_order_is_stable")
    prove = make_prove_stable_fixture(seed=7, permutations=6, command=None, capture=session)
    result = prove(ask_support_agent, LOCAL_TOOLS, hash_seeds=(0, 1))
    assert result.hash_seeds == (0, 1)


@pytest.mark.slow
@pytest.mark.usefixtures("examples_on_path")
def test_support_agent_before_the_fix_fails_only_across_hash_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from support_agent import LOCAL_TOOLS

    monkeypatch.setenv(RACY, "1")

    def prove(**options: Any) -> Any:  # each call replays the cassette's one prove_stable entry
        session = replaying(OPENAI, "test_tool_order_is_stable")
        run = make_prove_stable_fixture(seed=7, permutations=6, command="pytest x", capture=session)
        return run(ask_support_agent, LOCAL_TOOLS, **options)

    prove()  # one process, one set order: shuffles cannot see it
    with pytest.raises(HeaderDrift) as caught:
        prove(hash_seeds=(0, 1))
    report = caught.value.report
    assert caught.value.hash_seeds == (0, 1)
    assert report is not None and report.block == "tools" and report.kind == "reorder"
    assert report.tool == "filesystem__read_file" and report.pointer == "/tools/3/function/name"
    assert report.prefix_bytes_lost > 0
    assert "reproduce:" in str(caught.value) and "PYTHONHASHSEED=1 pytest x" in str(caught.value)


# -- each example's own suite, through the plugin ------------------------------------------------


def is_fixture(value: object) -> bool:
    return type(value).__name__ == "FixtureFunctionDefinition" or hasattr(
        value, "_pytestfixturefunction"
    )


def plugin_or_skip() -> None:
    plugin = pytest.importorskip("harness.pytest_plugin")
    missing = [
        name
        for name in ("header_capture", "prove_stable")
        if not is_fixture(getattr(plugin, name, None))
    ]
    if missing:
        pytest.skip(
            f"harness.pytest_plugin does not provide the {' and '.join(missing)} fixtures yet"
        )


def copy_example(example: Path, target: Path) -> None:
    shutil.copytree(
        example,
        target,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"),
    )


@pytest.mark.slow
@pytest.mark.parametrize("example", list(SUITES), ids=lambda path: path.name)
def test_example_suite_passes_after_the_fix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path
) -> None:
    plugin_or_skip()
    copy_example(example, pytester.path)
    monkeypatch.delenv(RACY, raising=False)
    monkeypatch.setenv("CI", "true")  # as CI runs it: replay only, nothing written
    result = inner_pytest(pytester, "-p", "no:randomly", subprocess=True)
    result.assert_outcomes(passed=SUITES[example])


@pytest.mark.slow
@pytest.mark.parametrize("example", [ANTHROPIC, OPENAI], ids=lambda path: path.name)
def test_example_suite_fails_before_the_fix_with_the_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path
) -> None:
    plugin_or_skip()
    copy_example(example, pytester.path)
    monkeypatch.setenv(RACY, "1")
    monkeypatch.setenv("PYTHONHASHSEED", "0")  # the README's run: the set order of seed 0
    result = inner_pytest(pytester, "-p", "no:randomly", subprocess=True)
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    for expected in (
        "HeaderDrift",
        "tools_changed: tools reordered; first out of place:",
        "cached bytes",
        "lost",
        "tool order (",
    ):
        assert expected in output, expected
    result.stdout.re_match_lines([r".*first out of place: \"\w+\".* at /tools/\d+, byte \d+;.*"])


# -- the framework examples: a newcomer's project, never edited for the harness --------------

# In process (decision 0036): the README's own run of each example, from a shell, is
# `test_example_suite_passes_after_the_fix` above; here the frameworks are imported once for the
# module, and each of these runs the project's tests in this process.
frameworks = imported_first("pydantic_ai", "anthropic", "agents", "openai")


@pytest.mark.slow
@pytest.mark.usefixtures("frameworks")
@pytest.mark.parametrize("example", list(EDITS), ids=lambda path: path.name)
def test_a_framework_project_records_once_and_ci_replays_it_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path
) -> None:
    plugin_or_skip()
    copy_example(example, pytester.path)
    shutil.rmtree(pytester.path / "fixtures")  # a project that has never recorded
    monkeypatch.delenv(RACY, raising=False)
    monkeypatch.delenv("CI", raising=False)
    recording = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-mode=record", subprocess=False
    )
    recording.assert_outcomes(passed=SUITES[example])
    cassettes = sorted((pytester.path / "fixtures" / "cassettes").rglob("*.json"))
    assert len(cassettes) == SUITES[example]
    assert all(b"[redacted]" in path.read_bytes() for path in cassettes)

    monkeypatch.setenv("CI", "true")
    replay = inner_pytest(pytester, "-p", "no:randomly", subprocess=False)
    replay.assert_outcomes(passed=SUITES[example])
    assert "no header drift" in replay.stdout.str()
    assert sorted((pytester.path / "fixtures" / "cassettes").rglob("*.json")) == cassettes


@pytest.mark.slow
@pytest.mark.usefixtures("frameworks")
@pytest.mark.parametrize("example", list(EDITS), ids=lambda path: path.name)
def test_a_framework_project_fails_in_ci_on_a_reordered_tool(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path
) -> None:
    plugin_or_skip()
    copy_example(example, pytester.path)
    monkeypatch.setenv(RACY, "1")
    monkeypatch.setenv("CI", "true")
    result = inner_pytest(pytester, "-p", "no:randomly", subprocess=False)
    result.assert_outcomes(failed=SUITES[example])
    output = result.stdout.str()
    assert "harness.CassetteMismatch: request 1 (POST /v1/" in output
    assert "tools_changed: tools reordered; first out of place:" in output
    failure = output[output.index("= FAILURES =") :]
    assert failure.index("tools_changed") < failure.index("sent from (your code):")
    assert "site-packages" not in failure.split("= header drift =")[0]
    assert f"{SUITES[example]} test(s) found header drift:" in output


@pytest.mark.slow
@pytest.mark.usefixtures("frameworks")
@pytest.mark.parametrize("example", list(EDITS), ids=lambda path: path.name)
def test_a_framework_project_fails_in_ci_on_an_edited_tool(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Path
) -> None:
    plugin_or_skip()
    copy_example(example, pytester.path)
    source, old, new = EDITS[example]
    path = pytester.path / source
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))  # a developer rewords one tool
    monkeypatch.delenv(RACY, raising=False)
    monkeypatch.setenv("CI", "true")
    result = inner_pytest(pytester, "-p", "no:randomly", subprocess=False)
    result.assert_outcomes(failed=SUITES[example])
    output = result.stdout.str()
    assert "tools_changed: tool " in output and "changed (same names, same order)" in output
    assert "kind:       content" in output
