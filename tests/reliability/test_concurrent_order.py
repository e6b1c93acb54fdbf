"""A cassette of concurrent requests is stored in a deterministic order (defect 14 of issue 24).

Before, the exchanges of requests in flight together were stored in the order their answers
completed, so re-recording unchanged code churned the file. Now requests in flight together are
stored by what they are, whatever order they arrived and finished in, and the real timing of
each exchange is kept beside it (`started`: the wall-clock time of the first request; `timing`:
each exchange's start and end, in milliseconds from then; cassette format 2, and format 1 files
are read as they are). A re-record whose only
change is the timing leaves the file as it was.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from harness.capture import CaptureSession, load_cassette
from tests.support.cassettes import whole_document
from tests.support.inner import inner_pytest

from .conftest import Cli, one_line
from .test_check_cassettes import cassettes, record

__all__ = ["cassettes"]  # the fixture, shared with the cassette checks

URL = "https://api.anthropic.com/v1/messages"


def body(city: str) -> bytes:
    message = {"role": "user", "content": f"Weather in {city}?"}
    request = {"model": "claude-test", "max_tokens": 8, "messages": [message]}
    return json.dumps(request, separators=(",", ":")).encode()  # as the SDKs send it


def answer(city: str) -> bytes:
    return json.dumps({"content": [{"type": "text", "text": f"{city}: sunny"}]}).encode()


HEADERS = [("content-type", "application/json")]


def interleaved(tmp_path: Path, arrive: str, finish: str) -> bytes:
    """Three requests in flight together, arriving and finishing in the orders given."""
    session = CaptureSession.for_test(tmp_path / "c.json", "record", writes_allowed=True)
    tickets = {city: session.receive("POST", URL, HEADERS, body(city)) for city in arrive}
    for city in finish:
        session.complete(tickets[city], 200, HEADERS, answer(city))
    ((_, data),) = session.finish().files
    return data


def without_timing(data: bytes) -> bytes:
    document = json.loads(data)
    del document["started"]  # the wall-clock time of the first request
    for exchange in document["exchanges"]:
        exchange.pop("timing")
    return json.dumps(document).encode()


@pytest.mark.parametrize(("arrive", "finish"), [("abc", "cba"), ("cab", "abc"), ("bca", "bac")])
def test_requests_in_flight_together_are_stored_in_one_order(
    tmp_path: Path, arrive: str, finish: str
) -> None:
    reference = interleaved(tmp_path, "abc", "abc")
    assert without_timing(interleaved(tmp_path, arrive, finish)) == without_timing(reference)


def test_sequential_requests_keep_the_order_they_were_sent_in(tmp_path: Path) -> None:
    """The near miss: requests one after the other are a conversation; their order is kept."""
    session = CaptureSession.for_test(tmp_path / "c.json", "record", writes_allowed=True)
    for city in "cab":
        ticket = session.receive("POST", URL, HEADERS, body(city))
        session.complete(ticket, 200, HEADERS, answer(city))
    ((_, data),) = session.finish().files
    exchanges = whole_document(data)["exchanges"]
    texts = [e["request"]["json"]["messages"][0]["content"] for e in exchanges]
    assert texts == ["Weather in c?", "Weather in a?", "Weather in b?"]


def test_each_exchange_keeps_its_real_timing_beside_it(tmp_path: Path) -> None:
    data = interleaved(tmp_path, "abc", "cba")
    document = json.loads(data)
    assert document["format"] == 3
    assert datetime.fromisoformat(document["started"]).tzinfo is not None
    timings = [exchange["timing"] for exchange in document["exchanges"]]
    assert min(t["start_ms"] for t in timings) == 0
    assert all(0 <= t["start_ms"] <= t["end_ms"] for t in timings)
    # all three were in flight together: each started before any finished
    assert max(t["start_ms"] for t in timings) <= min(t["end_ms"] for t in timings)


def test_a_format_1_cassette_still_loads_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(interleaved(tmp_path, "abc", "abc"))
    document = whole_document(path)
    document["format"] = 1
    for exchange in document["exchanges"]:
        del exchange["timing"]
    path.write_text(json.dumps(document, indent=2) + "\n")
    assert len(load_cassette(path).exchanges) == 3
    session = CaptureSession.for_test(path, "check", writes_allowed=False)
    for city in "bca":
        reply = session.httpx2_client().post(URL, content=body(city), headers=dict(HEADERS))
        assert reply.json()["content"][0]["text"] == f"{city}: sunny"


AGENT = """
import asyncio
import os

import anthropic


async def forecast(gates):
    client = anthropic.AsyncAnthropic(api_key="test-key-not-a-secret")

    async def ask(city):
        return await client.messages.create(
            model="claude-test", max_tokens=8,
            messages=[{"role": "user", "content": f"Weather in {city}?"}])

    async def release():
        for city in os.environ["FINISH"]:  # the answers come back in this order
            gates[city].set()
            for _ in range(50):
                await asyncio.sleep(0)

    answers = await asyncio.gather(*(ask(city) for city in "abc"), release())
    return [a.content[0].text for a in answers[:3]]
"""

CONFTEST = """
import asyncio

import httpx2
import pytest

GATES = {}


async def answer(request):
    city = request.content.decode().split("Weather in ")[1][0]
    await GATES[city].wait()
    return httpx2.Response(200, json={
        "id": "msg_" + city, "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": city + ": sunny"}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 2}})


@pytest.fixture
def harness_upstream():
    GATES.clear()
    GATES.update({city: asyncio.Event() for city in "abc"})
    return httpx2.MockTransport(answer)
"""

TESTS = """
import asyncio

import pytest

import agent
from conftest import GATES


@pytest.mark.header_capture
def test_forecast(harness_upstream):
    assert asyncio.run(agent.forecast(GATES)) == ["a: sunny", "b: sunny", "c: sunny"]
"""


def test_re_recording_unchanged_concurrent_code_leaves_the_cassette_as_it_was(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_forecast=TESTS)
    pytester.syspathinsert()
    cassette = pytester.path / "fixtures" / "cassettes" / "test_forecast" / "test_forecast.json"
    monkeypatch.setenv("FINISH", "abc")
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    before = cassette.read_bytes()
    monkeypatch.setenv("FINISH", "cba")
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1)
    assert cassette.read_bytes() == before
    assert "wrote" not in result.stdout.str()


def as_format_1(path: Path) -> None:
    """The cassette as the harness wrote it before timing was kept (format 1)."""
    document = whole_document(path)
    document["format"] = 1
    del document["started"]
    for exchange in document["exchanges"]:
        del exchange["timing"]
    path.write_text(json.dumps(document, indent=2) + "\n")


def test_harness_check_reads_a_format_1_cassette_as_it_is(cassettes: Path, cli: Cli) -> None:
    as_format_1(cassettes / "test_clean.json")
    code, out, err = cli("check")
    assert code == 0, out + err
    assert "test_clean.json: ok (2 requests)" in out


def test_harness_check_still_finds_drift_in_a_format_1_cassette(cassettes: Path, cli: Cli) -> None:
    """The near miss: reading format 1 is not skipping it."""
    as_format_1(record(cassettes / "test_reordered.json"))  # its tools swap order between turns
    code, out, err = cli("check")
    assert code == 1, out + err
    assert "tools_changed: request 2" in out


def test_a_cassette_of_a_later_format_is_refused_in_one_line(cassettes: Path, cli: Cli) -> None:
    path = cassettes / "test_clean.json"
    path.write_bytes(path.read_bytes().replace(b'"format": 3', b'"format": 4', 1))
    code, _, err = cli("check")
    assert code == 2
    assert "has format version 4; this harness reads version 1, 2 and 3" in one_line(err)
