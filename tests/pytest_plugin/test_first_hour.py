"""The first hour on a new stack (issue 34, item 9): every stumble ends in one line that says
what to do.

- a returned framework tool list (openai-agents' `FunctionTool`) is read as its schemas; a tool
  object the harness cannot read is refused in one line naming what to return (it was a raw
  msgspec `TypeError`);
- an unmarked `prove_stable(agent.one_turn)` that reaches for the network says the marker is
  missing (it was the SDK's connection error alone);
- a marked test that captured nothing names the host its requests went to and `hosts` (it
  blamed the client);
- a toy request under the minimum is an `info` counted in the summary, not a line per request.
"""

from __future__ import annotations

import pytest

from harness import prove_stable
from harness.prove._builds import NotAHeader
from tests.support.inner import inner_pytest

openai = pytest.importorskip("openai")


class Unreadable:
    name = "lookup"  # a name, and no schema the harness can read


@pytest.mark.slow  # imports openai-agents
def test_a_returned_function_tool_list_is_read_as_its_schemas() -> None:
    agents = pytest.importorskip("agents")

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    result = prove_stable(lambda: [get_weather], permutations=2)
    [tool] = result.views[0][0].blocks["tools"]
    assert tool["name"] == "get_weather" and tool["description"] == "The weather in a city."
    assert tool["parameters"]["required"] == ["city"]


def test_a_tool_object_without_a_readable_schema_is_refused_in_one_line() -> None:
    with pytest.raises(NotAHeader) as caught:
        prove_stable(lambda: [Unreadable()], permutations=1)
    text = str(caught.value)
    assert "\n" not in text and "Unreadable objects" in text and "JSON schemas" in text
    assert "TypeError" not in text


TESTS = r"""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import openai
import pytest

import agent


def test_unmarked_proof(prove_stable):
    prove_stable(agent.one_turn)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.mark.header_capture
def test_marked_but_its_host_is_not_captured():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        httpx2.get(f"http://127.0.0.1:{server.server_address[1]}/v1/models")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.header_capture
def test_a_toy_request(harness_upstream):
    openai.OpenAI(api_key="sk-test-not-a-key").chat.completions.create(
        model="gpt-5", messages=[{"role": "user", "content": "Hi"}])
"""

AGENT = r"""
import openai


def one_turn():
    client = openai.OpenAI(api_key="sk-test-not-a-key", max_retries=0)
    client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "Hi"}])
"""

CONFTEST = r"""
import pytest
from harness.upstream import StandIn


@pytest.fixture
def harness_upstream():
    return StandIn(["Done."])
"""


@pytest.mark.slow  # an inner pytest run
def test_the_first_hour_stumbles_each_end_in_one_line_saying_what_to_do(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(agent=AGENT, test_first_hour=TESTS)
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "-W", "always", "--harness-mode=record")
    result.assert_outcomes(failed=1, passed=2)
    out = result.stdout.str()
    assert "this test is not marked @pytest.mark.header_capture" in out
    assert "went to 127.0.0.1:" in out and "harness_capture_config's hosts" in out
    assert "info below-minimum" not in out
    result.stdout.fnmatch_lines(
        ["cache rules: 1 finding(s) (0 error(s), 0 warning(s), 1 info); 1 request(s) under*"]
    )
