"""The anthropic SDK's tool runner on a server-held thread, recorded from `harness.upstream`.

Since anthropic 2.17 the tool runner sends `"thread": {"type": "continue", "previous_message_id":
...}` after its first request, with no tools or system: the server holds them. The gate judges
each continuation against the thread it continues (before: 0 of its requests were judged and
nothing warned), `harness show` says what the server holds (before: "nothing is cached"), and a
continuation that sends its tools again in another order still fails the gate.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.support.inner import inner_pytest

anthropic = pytest.importorskip("anthropic")
if not hasattr(anthropic, "beta_tool"):
    pytest.skip("an anthropic without the tool runner", allow_module_level=True)

CONFTEST = r"""
import pytest

from harness.upstream import StandIn, text, tool_call


@pytest.fixture
def harness_upstream():
    weather = [tool_call("get_weather", {"city": c}) for c in ("Paris", "Rome")]
    return StandIn([*weather, text("Sunny in both.")])
"""

TESTS = r"""
import anthropic
import pytest
from anthropic import beta_tool

SYSTEM = "You are a weather bot. " + "Answer in one short sentence about the weather. " * 200
TOOLS = [{"name": n, "input_schema": {"type": "object"}} for n in ("get_weather", "get_time")]


@beta_tool
def get_weather(city: str) -> str:
    '''The weather in a city.'''
    return f"sunny in {city}"


def client():
    return anthropic.Anthropic(api_key="sk-ant-test-not-a-key")


@pytest.mark.header_capture
def test_the_tool_runner_on_a_thread():
    runner = client().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=256, tools=[get_weather], system=SYSTEM,
        messages=[{"role": "user", "content": "Weather in Paris and Rome?"}],
        cache_control={"type": "ephemeral"}, max_iterations=6,
    )
    assert [m.stop_reason for m in runner] == ["tool_use", "tool_use", "end_turn"]


@pytest.mark.header_capture
def test_a_continuation_that_sends_its_tools_again_reordered():
    first = client().beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=256, tools=TOOLS, system=SYSTEM,
        messages=[{"role": "user", "content": "Weather?"}], thread={"type": "create"},
        cache_control={"type": "ephemeral"},
    )
    result = {"type": "tool_result", "tool_use_id": first.content[0].id, "content": "sunny"}
    client().beta.messages.create(
        model="claude-sonnet-4-5", max_tokens=256, tools=TOOLS[::-1],
        messages=[{"role": "user", "content": [result]}],
        thread={"type": "continue", "previous_message_id": first.id},
    )
"""


@pytest.mark.slow  # inner pytest runs
def test_the_gate_judges_a_threaded_tool_runner_and_show_says_what_the_server_holds(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    recorded = inner_pytest(pytester, "-p", "no:randomly", "-v", "--harness-mode=record")
    recorded.assert_outcomes(passed=1, failed=1)
    recorded.stdout.fnmatch_lines(
        [
            "*test_the_tool_runner_on_a_thread PASSED*",
            "*test_a_continuation_that_sends_its_tools_again_reordered FAILED*",
            "*tools_changed: request 2 (POST api.anthropic.com/v1/messages) does not extend"
            " request 1's cacheable prefix*",
            # three requests of the runner and two of the near miss: 2 + 1 links judged
            "prefix chain: 2 captured test(s); requests per provider: anthropic 5 (judged 3)",
        ]
    )
    cassette = Path(
        pytester.path, "fixtures/cassettes/test_agent/test_the_tool_runner_on_a_thread.json"
    )
    assert cassette.is_file()
    assert not cassette.with_name(
        "test_a_continuation_that_sends_its_tools_again_reordered.json"
    ).exists()

    checked = inner_pytest(pytester, "-p", "no:randomly", "-k", "tool_runner")
    checked.assert_outcomes(passed=1)
    checked.stdout.fnmatch_lines(["*requests per provider: anthropic 3 (judged 2)*"])

    capsys.readouterr()
    assert main(["show", str(cassette)]) == 0
    shown = capsys.readouterr().out
    assert "nothing is cached" not in shown
    assert shown.count("reads a message thread the server holds") == 2, shown
