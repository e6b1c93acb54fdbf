"""A project's own stand-in server on an ephemeral port, captured through `hosts` (issue 34, 3).

A stack's tests often start their own stand-in on `127.0.0.1:0` and point the SDK's `base_url`
at it: a new port every run. Captured through `hosts: ["127.0.0.1"]` (no port), the port is left
out of the route, so what was recorded replays with the server down. With the port kept in the
route (`"127.0.0.1:*"`), a replay on another port is refused, and the error names the port, not
"identical" bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.capture._captured import Captured
from harness.capture._cassette import Exchange, request_record, response_record
from harness.capture._config import CaptureConfig
from harness.capture._matching import nearest_route, route_of
from tests.support.inner import inner_pytest

# Imported here, once: an in-process inner run drops the modules it imported when it ends, and
# the capture's transport classes are made per module.
openai = pytest.importorskip("openai")

CONFTEST = r"""
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.upstream import StandIn

STAND_IN = StandIn(["Sunny in Paris."])


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if os.environ.get("STAND_IN_DOWN"):
            raise AssertionError("the stand-in server was reached")
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        reply = STAND_IN.answer("POST", f"http://127.0.0.1{self.path}", body)
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def base_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # a new port every run
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def harness_capture_config():
    return {"hosts": [os.environ.get("HOSTS", "127.0.0.1")]}
"""

TESTS = r"""
import openai
import pytest


@pytest.mark.header_capture
def test_agent_against_its_own_stand_in(base_url):
    client = openai.OpenAI(api_key="sk-test-not-a-key", base_url=base_url)
    answer = client.chat.completions.create(
        model="local-model", messages=[{"role": "user", "content": "Weather in Paris?"}])
    assert answer.choices[0].message.content == "Sunny in Paris."
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    for name in ("CI", "STAND_IN_DOWN", "HOSTS"):
        monkeypatch.delenv(name, raising=False)
    return pytester


@pytest.mark.slow  # two inner runs and a server
def test_a_stand_in_on_an_ephemeral_port_records_then_replays_with_the_server_down(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    [cassette] = Path(project.path, "fixtures").rglob("*.json")
    assert "http://127.0.0.1:" in cassette.read_text()  # what was sent, as sent
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    inner_pytest(project, "-p", "no:randomly").assert_outcomes(passed=1)


@pytest.mark.slow
def test_with_the_port_in_the_route_a_replay_on_another_port_names_the_port(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTS", "127.0.0.1:*")  # every port captured, the port kept
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    [cassette] = Path(project.path, "fixtures").rglob("*.json")
    recorded = json.loads(cassette.read_text())["exchanges"][0]["request"]["url"]
    port = recorded.split(":")[2].split("/")[0]
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("STAND_IN_DOWN", "1")
    result = inner_pytest(project, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*the nearest recorded route differs in the port ({port} recorded, * live)*"]
    )
    assert "identical" not in result.stdout.str()


def _captured(url: str, method: str = "POST") -> Captured:
    return Captured(1, method, url, (), b"{}", None)


def _exchange(url: str) -> Exchange:
    return Exchange(request_record("POST", url, (), b"{}"), response_record(200, (), b"{}"))


@pytest.mark.parametrize(
    ("recorded", "live", "named"),
    [
        (
            "https://api.openai.com/v1/chat/completions",
            "http://api.openai.com/v1/chat/completions",
            "the scheme (https recorded, http live); the port (443 recorded, 80 live)",
        ),
        (
            "https://a.example/v1/chat/completions",
            "https://b.example/v1/chat/completions",
            "the host (a.example recorded, b.example live)",
        ),
        (
            "https://api.openai.com:8443/v1/chat",
            "https://api.openai.com/v1/chat",
            "the port (8443 recorded, 443 live)",
        ),
        (
            "https://api.openai.com/v1/responses",
            "https://api.openai.com/v2/responses",
            "the path (/v1/responses recorded, /v2/responses live)",
        ),
    ],
)
def test_a_route_mismatch_names_what_differs(recorded: str, live: str, named: str) -> None:
    assert nearest_route([_exchange(recorded)], _captured(live)) == named


def test_the_port_of_a_loopback_host_is_ephemeral_only_when_no_entry_names_it() -> None:
    loose = CaptureConfig.of({"hosts": ["127.0.0.1"]})
    pinned = CaptureConfig.of({"hosts": ["127.0.0.1:8080"]})
    url = "http://127.0.0.1:8080/v1/chat/completions"
    assert route_of("POST", url, loose.ephemeral_port).port is None
    assert route_of("POST", url, pinned.ephemeral_port).port == 8080
    remote = "https://llm.internal:8443/v1/chat"  # only loopback stand-ins are ephemeral
    assert (
        route_of("POST", remote, CaptureConfig.of({"hosts": ["llm.internal"]}).ephemeral_port).port
        == 8443
    )
    ollama = "http://localhost:11434/api/chat"  # the default local hosts name their ports
    assert route_of("POST", ollama, CaptureConfig().ephemeral_port).port == 11434
