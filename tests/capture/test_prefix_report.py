"""What the prefix-chain gate prints (`harness.capture._prefix`): the failure a test sees from
`CaptureSession.assert_prefix_extends()` (how many breaks, each with its endpoint and what the
cache loses) and the coverage line `harness check` ends with.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureSession, PrefixBroken
from tests.support.bodies import MARK, claude

ANTHROPIC = "https://api.anthropic.com/v1/messages"


def capture(*bodies: Any, url: str = ANTHROPIC) -> CaptureSession:
    upstream = httpx2.MockTransport(lambda r: httpx2.Response(200, json={"id": "msg_1"}))
    session = CaptureSession(upstream=upstream)
    for body in bodies:
        session.httpx2_client().post(url, content=json.dumps(body))
    return session


def turn(system: str, *questions: str) -> dict[str, Any]:
    body = claude(1100)
    body["system"][0]["text"] = system + body["system"][0]["text"][len(system) :]
    body["messages"] = []
    for number, question in enumerate(questions):
        if number:
            body["messages"].append({"role": "assistant", "content": "ok"})
        body["messages"].append({"role": "user", "content": question})
    body["messages"][-1]["content"] = [
        {"type": "text", "text": body["messages"][-1]["content"], "cache_control": MARK}
    ]
    return body


def failure(session: CaptureSession) -> str:
    with pytest.raises(PrefixBroken) as raised:
        session.assert_prefix_extends()
    return str(raised.value)


def test_one_break_is_one_break_with_its_endpoint_and_loss() -> None:
    said = failure(capture(turn("A", "q1"), turn("B", "q1", "q2")))
    head, _, rest = said.partition("\n\n")
    assert head == (
        "1 cache prefix break (mark the test @pytest.mark.moves_header(reason=...) if the move"
        " is deliberate)"
    )
    first = rest.splitlines()[0]
    assert first.startswith(
        "system_changed: request 2 (POST api.anthropic.com/v1/messages) does not extend"
        " request 1's cacheable prefix: the system block broke first; "
    )
    assert "cached tokens" in first and "lost" in first


def test_two_breaks_are_counted_and_each_reported() -> None:
    said = failure(capture(turn("A", "q1"), turn("B", "q1", "q2"), turn("C", "q1", "q2", "q3")))
    assert said.startswith("2 cache prefix breaks (mark the test")
    heads = [line for line in said.splitlines() if " does not extend request " in line]
    assert [head.split(" does not")[0] for head in heads] == [
        "system_changed: request 2 (POST api.anthropic.com/v1/messages)",
        "system_changed: request 3 (POST api.anthropic.com/v1/messages)",
    ]


def test_the_coverage_line_counts_what_was_seen_and_judged() -> None:
    session = capture(turn("A", "q1"), turn("A", "q1", "q2"))
    session.httpx2_client().get("https://example.com/v1/models")  # no prompt: not checked
    assert session.prefix_chain().coverage() == (
        "prefix chain: anthropic 2 (judged 1); 1 other request(s) not checked"
    )
    assert CaptureSession().prefix_chain().coverage() == "prefix chain: no provider requests"
