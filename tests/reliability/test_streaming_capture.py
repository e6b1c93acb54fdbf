"""A captured answer streams through to the client while it is recorded (defect 7 of issue 24).

Before, the capture read every forwarded answer whole before the client saw a byte: an endless
event stream (an HTTP MCP server's `/sse`, captured with `hosts: ["*"]`) hung the test, and a
provider's stream reached the client only when the generation ended. Now each chunk goes to the
client as it arrives and into the recording beside it; the exchange is recorded when the stream
ends, or, cut short by the client, with what the client read.
"""

from __future__ import annotations

import pytest

from tests.support.inner import inner_pytest

CONFTEST = """
import json
import threading

import httpx2
import pytest

GATE = threading.Event()  # set by the test once it has read the first delta


def event(name, data):
    return f"event: {name}\\ndata: {json.dumps(data)}\\n\\n".encode()


def delta(text):
    return event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": text}})


def generation():
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 5, "output_tokens": 0}}
    yield event("message_start", {"type": "message_start", "message": message})
    yield event("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "text", "text": ""}})
    yield delta("Sunny")
    # the model goes on only once the client has shown the first words to its user
    yield delta(", and the client saw it first." if GATE.wait(timeout=20) else ", buffered.")
    yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield event("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": 9}})
    yield event("message_stop", {"type": "message_stop"})


def endless():
    number = 0
    while True:
        number += 1
        yield f"event: ping\\ndata: {number}\\n\\n".encode()


def answer(request):
    if request.url.path == "/sse":
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=endless())
    return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                           content=generation())


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)


@pytest.fixture
def harness_capture_config():
    return {"hosts": ["*"]}
"""

TESTS = """
import anthropic
import httpx2
import pytest

from conftest import GATE


@pytest.mark.header_capture
def test_words_reach_the_user_as_the_model_writes_them():
    client = anthropic.Anthropic(api_key="test-key-not-a-secret")
    seen = []
    with client.messages.stream(model="claude-test", max_tokens=64,
                                messages=[{"role": "user", "content": "Weather?"}]) as stream:
        for text in stream.text_stream:
            seen.append(text)
            GATE.set()
    assert "".join(seen) == "Sunny, and the client saw it first."


@pytest.mark.header_capture
def test_an_endless_event_stream_is_read_as_far_as_the_client_goes():
    with httpx2.Client() as client:
        with client.stream("GET", "http://mcp.local:8000/sse") as response:
            events = []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    events.append(line)
                if len(events) == 3:
                    break
    assert events == ["data: 1", "data: 2", "data: 3"]
"""


@pytest.mark.slow
def test_a_stream_reaches_the_client_while_it_is_recorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(conftest=CONFTEST, test_stream=TESTS)
    result = inner_pytest(
        pytester, "-p", "no:randomly", "--harness-mode=record", subprocess=True, timeout=120
    )
    result.assert_outcomes(passed=2)
    folder = pytester.path / "fixtures" / "cassettes" / "test_stream"
    words = (folder / "test_words_reach_the_user_as_the_model_writes_them.json").read_text()
    assert "and the client saw it first." in words and "message_stop" in words
    endless = folder / "test_an_endless_event_stream_is_read_as_far_as_the_client_goes.json"
    assert '"data: 3"' in endless.read_text()

    # replayed, the recorded streams give the same answers, offline
    result = inner_pytest(pytester, "-p", "no:randomly", subprocess=True, timeout=120)
    result.assert_outcomes(passed=2)
