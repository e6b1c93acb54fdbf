"""Only a test that passed writes its recording (defect 5 of issue 24).

The README says "A test that fails writes nothing". Before, a test that failed in setup, failed
under `xfail`, or called `pytest.skip()` or `pytest.xfail()` after its first request overwrote
its complete cassette with the partial one: only a failed call phase withheld the write. Now
only a test whose setup, call and teardown all passed writes. Met as a user meets it: a project
records a two-turn conversation, then re-records while something stops the test halfway.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

AGENT = """
import anthropic


def turn(text):
    client = anthropic.Anthropic(api_key="test-key-not-a-secret")
    return client.messages.create(model="claude-test", max_tokens=64, system="You plan trips.",
                                  messages=[{"role": "user", "content": text}])
"""

CONFTEST = """
import httpx2
import pytest

import agent

ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
          "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2}}


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))


@pytest.fixture
def warmed_up(header_capture):
    agent.turn("warm up")
    raise RuntimeError("the database is down")


@pytest.fixture
def leaky(header_capture):
    yield
    raise RuntimeError("could not clean up")
"""

COMPLETE = """
import pytest

import agent


@pytest.mark.header_capture
def test_trip():
    agent.turn("Paris?")
    agent.turn("And Rome?")
"""

HALFWAY = {
    "setup-error": """
@pytest.mark.header_capture
def test_trip(warmed_up):
    agent.turn("Paris?")
""",
    "xfail-marker": """
@pytest.mark.xfail(reason="known flake")
@pytest.mark.header_capture
def test_trip():
    agent.turn("Paris?")
    raise AssertionError("the flake")
""",
    "skip-call": """
@pytest.mark.header_capture
def test_trip():
    agent.turn("Paris?")
    pytest.skip("the second city is down today")
""",
    "xfail-call": """
@pytest.mark.header_capture
def test_trip():
    agent.turn("Paris?")
    pytest.xfail("the second city is down today")
""",
    "teardown-error": """
@pytest.mark.header_capture
def test_trip(leaky):
    agent.turn("Paris?")
""",
}


def recorded(pytester: pytest.Pytester) -> Path:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_trip=COMPLETE)
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1)
    cassette = pytester.path / "fixtures" / "cassettes" / "test_trip" / "test_trip.json"
    assert cassette.read_bytes().count(b'"method": "POST"') == 2
    return cassette


@pytest.mark.parametrize("mode", ["record", "update"])
@pytest.mark.parametrize("how", list(HALFWAY))
def test_a_test_stopped_halfway_keeps_its_complete_cassette(
    pytester: pytest.Pytester, how: str, mode: str
) -> None:
    cassette = recorded(pytester)
    before = cassette.read_bytes()
    pytester.makepyfile(test_trip="import pytest\n\nimport agent\n" + HALFWAY[how])
    result = inner_pytest(pytester, "-p", "no:randomly", f"--harness-mode={mode}")
    assert result.ret != 0 or how in ("xfail-marker", "skip-call", "xfail-call")
    assert cassette.read_bytes() == before
    assert "wrote " not in result.stdout.str()


def test_a_test_that_passes_writes_its_shorter_conversation(pytester: pytest.Pytester) -> None:
    """The near miss: a test that passes with one turn fewer rewrites its cassette."""
    cassette = recorded(pytester)
    pytester.makepyfile(
        test_trip="""
import pytest

import agent


@pytest.mark.header_capture
def test_trip():
    agent.turn("Paris?")
"""
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1)
    assert cassette.read_bytes().count(b'"method": "POST"') == 1
