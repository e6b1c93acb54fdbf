"""`moves_header(reason=..., only=...)` and `known_moves`: waive one move, judge the rest.

A framework moves bytes its user cannot change (Semantic Kernel names the stored replies, AutoGen's
reflection call drops the tools): the whole-test marker would waive every other break too. With
`only=` (a block, a verdict, a JSON pointer or a predicate) just that move is waived; a project's
`known_moves` waive theirs in every test; an exemption that waived nothing is reported stale.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

# Imported once here: an in-process inner run drops what it imported, and would import it again.
openai = pytest.importorskip("openai")

CONFTEST = r"""
import os

import pytest

from harness.upstream import StandIn


@pytest.fixture
def harness_upstream():
    return StandIn(["Done."])


@pytest.fixture
def harness_capture_config():
    if os.environ.get("KNOWN_MOVES"):
        return {"known_moves": [
            {"reason": "the reflection call drops the tools", "only": "tools_changed"},
            {"reason": "a move no test makes", "only": "/system"},
        ]}
    return {}
"""

TESTS = r"""
import httpx2
import openai
import pytest

TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
ASKED = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Done."}, {"role": "user", "content": "More"}]
NAMED = [*ASKED[:2], {**ASKED[2], "name": "assistant"}, ASKED[3],
         {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Again"}]


def send(*turns):
    client = openai.OpenAI(api_key="sk-test-not-a-key")
    for messages, tools in turns:
        extra = {"tools": tools} if tools else {}
        client.chat.completions.create(model="gpt-5", messages=messages, **extra)


@pytest.mark.header_capture
@pytest.mark.moves_header(reason="the framework names stored replies", only="/messages/*/name")
def test_named_replies_are_waived_by_pointer():
    send((ASKED, TOOLS), (NAMED, TOOLS))


@pytest.mark.header_capture
@pytest.mark.moves_header(reason="the reflection call drops the tools", only="tools")
def test_a_dropped_tool_list_is_waived_by_block():
    send((ASKED, TOOLS), (ASKED, None))


@pytest.mark.header_capture
@pytest.mark.moves_header(reason="reflection", only=lambda b: b.verdict == "tools_changed")
def test_a_predicate_waives_what_it_accepts():
    send((ASKED, TOOLS), (ASKED, None))


@pytest.mark.header_capture
@pytest.mark.moves_header(reason="the framework names stored replies", only="/messages/*/name")
def test_a_move_the_waiver_does_not_name_still_fails():
    send((ASKED, TOOLS), (NAMED, None))  # the tools dropped too: the tools block breaks first


@pytest.mark.header_capture
@pytest.mark.moves_header(reason="the system prompt may move", only="system")
def test_a_waiver_that_waived_nothing_is_stale():
    send((ASKED, TOOLS), (ASKED, TOOLS))


@pytest.mark.header_capture
def test_a_dropped_tool_list_unmarked():
    send((ASKED, TOOLS), (ASKED, None))
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("KNOWN_MOVES", raising=False)
    return pytester


@pytest.mark.slow  # inner pytest runs
def test_only_waives_just_the_named_move_and_the_rest_of_the_gate_still_judges(
    project: pytest.Pytester,
) -> None:
    result = inner_pytest(project, "-p", "no:randomly", "-v", "--harness-mode=record")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_named_replies_are_waived_by_pointer PASSED*",
            "*test_a_dropped_tool_list_is_waived_by_block PASSED*",
            "*test_a_predicate_waives_what_it_accepts PASSED*",
            "*test_a_move_the_waiver_does_not_name_still_fails FAILED*",
            "*test_a_waiver_that_waived_nothing_is_stale PASSED*",
            "*test_a_dropped_tool_list_unmarked FAILED*",
        ]
    )
    text = result.stdout.str()
    assert "prefix-chain gate failed" in text and "tools_changed" in text
    assert (
        "test_a_waiver_that_waived_nothing_is_stale: the system prompt may move (only 'system')"
        " [stale: nothing it names moved]"
    ) in text
    assert "test_named_replies_are_waived_by_pointer: the framework names stored replies" in text
    assert "waived_by_pointer: the framework names stored replies (only '/messages/*/name')" in (
        text
    )
    assert (
        "waived_by_pointer: the framework names stored replies (only '/messages/*/name') ["
        not in (text)
    )
    # the waived moves are written as the exemption they were: `harness check` agrees
    cassettes = sorted(Path(project.path, "fixtures").rglob("*.json"))
    assert len(cassettes) == 4, cassettes  # the failed tests wrote nothing
    written = Path(
        project.path, "fixtures/cassettes/test_agent/test_named_replies_are_waived_by_pointer.json"
    )
    assert '"moves_header": "the framework names stored replies"' in written.read_text()
    check = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", "fixtures"],
        cwd=project.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow  # inner pytest runs
def test_known_moves_waive_a_frameworks_move_in_every_test_and_an_unused_one_is_stale(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWN_MOVES", "1")
    result = inner_pytest(
        project, "-p", "no:randomly", "-v", "--harness-mode=record", "-k", "unmarked or stale"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*1 known move(s) of harness_capture_config waived nothing (stale):*",
            "*  a move no test makes*",
        ]
    )
    assert "the reflection call drops the tools\n" not in result.stdout.str().split("(stale):")[1]


def test_only_must_be_a_block_verdict_pointer_or_predicate(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_bad="""
import pytest

@pytest.mark.header_capture
@pytest.mark.moves_header(reason="why", only=42)
def test_bad():
    pass
"""
    )
    result = inner_pytest(project, "-p", "no:randomly", "test_bad.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*only= takes a block*a JSON pointer*or a predicate, not 42*"])
    assert "During handling" not in result.stdout.str()
