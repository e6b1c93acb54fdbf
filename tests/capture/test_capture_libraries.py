"""Capture with whichever HTTP library the project has: only `httpx`, only `httpx2`, or neither.

An SDK brings one of the two (anthropic 2 and openai 3 bring `httpx2`, older majors and many
frameworks plain `httpx`), and the harness declares neither outside its `capture` extra. Each
case runs in a child interpreter where the missing library cannot be imported (its
`sys.modules` entry is None, which is what Python reports for a package that is not installed:
`import` raises ImportError and `importlib.util.find_spec` answers None). The wheel test
(`tests/project/test_wheel.py`) repeats the "neither" case in a fresh virtual environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.support.inner import inner_pytest

# Each case runs in a child interpreter (or a pytest subprocess) missing a library.
pytestmark = pytest.mark.slow

EXTRA = "pip install 'prompt-cache-harness[capture]'"

_PRELUDE = """
import importlib, json, sys
for name in {blocked!r}:
    sys.modules[name] = None  # as if not installed
import harness.capture
from harness.capture import CaptureSession
from harness._shared._errors import HarnessError
BODY = {{
    "model": "claude-test",
    "max_tokens": 8,
    "system": "You are careful.",
    "tools": [{{"name": "bash", "input_schema": {{"type": "object"}}}}],
    "messages": [{{"role": "user", "content": "hi"}}],
}}
ANSWER = {{
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
    "content": [{{"type": "text", "text": "Sunny."}}], "stop_reason": "end_turn",
    "stop_sequence": None, "usage": {{"input_tokens": 10, "output_tokens": 2}},
}}
result = {{"modules": sorted(n for n in ("httpx", "httpx2") if sys.modules.get(n) is not None)}}
"""

_ONE_LIBRARY = """
lib = importlib.import_module({library!r})
session = CaptureSession(upstream=lib.MockTransport(lambda request: lib.Response(200, json=ANSWER)))
with session.intercept():  # a client the code makes itself, inside the capture
    reply = lib.Client().post("https://api.anthropic.com/v1/messages", json=BODY)
result["status"] = reply.status_code
result["captured"] = [
    (c.provider, json.loads(c.body)["tools"][0]["name"]) for c in session.requests
]
client = getattr(session, {library!r} + "_client")()  # a client handed in
result["handed_in"] = type(client).__module__.split(".")[0]
try:
    getattr(session, {other!r} + "_client")()
except HarnessError as error:
    result["other"] = str(error)
"""

_NEITHER = """
session = CaptureSession()
result["errors"] = []
for use in (session.intercept().__enter__, session.httpx2_client, session.httpx_client,
            lambda: harness.capture.CaptureTransport):
    try:
        use()
    except HarnessError as error:
        result["errors"].append(str(error))
"""


def run_child(code: str) -> dict[str, object]:
    script = textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(("library", "other"), [("httpx", "httpx2"), ("httpx2", "httpx")])
def test_capture_works_with_only_one_http_library(library: str, other: str) -> None:
    code = _PRELUDE.format(blocked=[other]) + _ONE_LIBRARY.format(library=library, other=other)
    result = run_child(code)
    assert result["modules"] == [], "importing harness.capture imports neither library"
    assert result["status"] == 200
    assert result["captured"] == [["anthropic", "bash"]]
    assert result["handed_in"] == library
    message = str(result["other"])
    assert "\n" not in message
    assert f"capturing through {other} needs the {other} package" in message
    assert f"this environment has {library}: use its clients" in message
    assert (EXTRA if other == "httpx2" else "pip install httpx") in message


def test_without_either_library_using_capture_names_the_extra_in_one_line() -> None:
    result = run_child(_PRELUDE.format(blocked=["httpx", "httpx2"]) + _NEITHER)
    errors = [str(error) for error in result["errors"]]  # type: ignore[attr-defined]
    assert len(errors) == 4, "intercept, both clients and the transport class each refuse"
    for message in errors:
        assert "\n" not in message
        assert "installed" in message
    assert errors[0].startswith("capture needs httpx2 or httpx, and neither is installed")
    assert EXTRA in errors[0] and EXTRA in errors[1] and EXTRA in errors[3]
    assert "pip install httpx" in errors[2]


def test_a_captured_test_without_either_library_fails_with_the_line_not_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import sys
        sys.modules["httpx"] = None
        sys.modules["httpx2"] = None
        """
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.header_capture
        def test_agent():
            pass
        """
    )
    result = inner_pytest(pytester, "-p", "no:randomly", subprocess=True, user_plugins=True)
    result.assert_outcomes(errors=1)
    lines = result.stdout.lines
    first = lines.index(next(line for line in lines if "ERROR at setup of test_agent" in line))
    assert lines[first + 1].startswith(
        "harness: capture needs httpx2 or httpx, and neither is installed: " + EXTRA
    )
    assert lines[first + 2].startswith("=====")  # that one line is the whole report
