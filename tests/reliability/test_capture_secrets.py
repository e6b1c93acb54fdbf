"""Secrets through capture, met as an SDK project meets them (defect 3 of the reliability issue).

The project's agent code makes its own clients and knows nothing of the harness; its tests carry
`@pytest.mark.header_capture` (issue 12's interception). Whatever the interception records is
scanned as it would be decoded: a key the stand-in API streams back three characters per
server-sent event, a gzip-compressed request body, a key in a parametrize id. The run fails (or
records a clean cassette), names the kind of secret, and no file and no printed line holds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest
from tests.support.paths import compiled_from_beside

KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"
GROQ = "gsk_" + "Pq4Rs8Tu" * 6 + "Vw7X"

AGENT = """
import gzip
import json

import anthropic
import httpx2


def ask(question):
    client = anthropic.Anthropic(api_key="test-key-not-a-secret")  # the agent's own client
    with client.messages.stream(
        model="claude-test",
        max_tokens=64,
        system="You answer briefly.",
        messages=[{"role": "user", "content": question}],
    ) as stream:
        return "".join(stream.text_stream)


def send_compressed(note):
    body = json.dumps({"model": "m", "max_tokens": 1, "messages": [
        {"role": "user", "content": note}]}).encode()
    with httpx2.Client() as client:
        client.post(
            "https://api.anthropic.com/v1/messages",
            content=gzip.compress(body),
            headers={"content-encoding": "gzip", "content-type": "application/json"},
        )
"""

CONFTEST = """
import json

import httpx2
import pytest

SECRET = %r


def events(pieces):
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 5, "output_tokens": 0}}
    out = [("message_start", {"type": "message_start", "message": message}),
           ("content_block_start", {"type": "content_block_start", "index": 0,
                                    "content_block": {"type": "text", "text": ""}})]
    for piece in pieces:
        out.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": piece}}))
    out += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": 9}}),
            ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {name}\\ndata: {json.dumps(data)}\\n\\n" for name, data in out)


def stand_in(request):
    body = request.content
    wants_stream = body[:1] == b"{" and json.loads(body).get("stream")
    if wants_stream:
        said = json.loads(body)["messages"][0]["content"]
        text = ("Your key is " + SECRET + ".") if "key" in said else "Hello there."
        pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
        return httpx2.Response(200, content=events(pieces).encode(),
                               headers={"content-type": "text/event-stream"})
    return httpx2.Response(200, json={"id": "msg_2", "type": "message", "role": "assistant",
                                      "model": "m", "content": [], "stop_reason": "end_turn",
                                      "stop_sequence": None,
                                      "usage": {"input_tokens": 1, "output_tokens": 0}})


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(stand_in)
"""


def project(pytester: pytest.Pytester, tests: str, secret: str = KEY) -> None:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST % secret, test_agent=tests)
    pytester.syspathinsert()


def holding(root: Path, secret: str) -> list[Path]:
    """Files under `root` whose bytes or name hold the secret, or a recognisable part of it."""
    parts = [secret[i : i + 12] for i in range(0, len(secret) - 11, 4)]

    def holds(path: Path) -> bool:
        named = any(part in str(path.relative_to(root)) for part in parts)
        return named or (path.is_file() and any(p.encode() in path.read_bytes() for p in parts))

    return [path for path in root.rglob("*") if not compiled_from_beside(path) and holds(path)]


def assert_not_printed(secret: str, out: str) -> None:
    for start in range(0, len(secret) - 11, 4):
        assert secret[start : start + 12] not in out, secret[start : start + 12]


def test_a_key_streamed_back_in_small_deltas_is_never_recorded(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        """
import pytest

import agent


@pytest.mark.header_capture
def test_asks_for_the_key():
    assert "Your key is" in agent.ask("what is my key?")
""",
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1, errors=1)  # the teardown refuses the cassette
    out = result.stdout.str()
    assert "SecretLeak" in out and "an Anthropic API key" in out
    assert "streamed text joined across events" in out
    assert_not_printed(KEY, out)
    assert not (pytester.path / "fixtures").exists()
    conftest = pytester.path / "conftest.py"
    assert holding(pytester.path, KEY) == [conftest]  # only where the test put it


def test_a_key_in_a_gzip_compressed_request_body_is_never_recorded(
    pytester: pytest.Pytester,
) -> None:
    project(
        pytester,
        f"""
import pytest

import agent


@pytest.mark.header_capture
def test_sends_a_compressed_body():
    agent.send_compressed("deploy with {GROQ}")
""",
        secret="unused",
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    # the request body is stored decoded (harness/capture/_encodings.py): the scan finds the key
    # in the file's own bytes
    assert "a Groq API key" in out
    assert_not_printed(GROQ, out)
    assert not (pytester.path / "fixtures").exists()


def test_a_key_in_a_parametrize_id_never_names_a_cassette(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        f"""
import pytest

import agent


@pytest.mark.parametrize("token", ["{GROQ}", "plain"])
@pytest.mark.header_capture
def test_hello(token):
    assert agent.ask("hello") == "Hello there."
""",
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=2)
    cassettes = sorted((pytester.path / "fixtures" / "cassettes").rglob("*.json"))
    assert len(cassettes) == 2  # still one cassette per test
    assert holding(pytester.path / "fixtures", GROQ) == []
    summary = result.stdout.str().split("header drift")[-1]
    assert "wrote " in summary
    assert_not_printed(GROQ, summary)
