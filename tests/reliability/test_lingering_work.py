"""A request belongs to the test that started the work that sent it (defect 8 of issue 24).

Before, a thread that test A started and that sent after A ended was captured by whichever test
was running then: its request landed in test B's cassette. Now the work a test starts (asyncio
tasks through their context, threads through the thread that started them, pool jobs through the
code that submitted them) is the test's: a request it sends after the test ended is refused, with
one line naming the test, and is never recorded in another test's cassette. The near misses:
threads and pool jobs a test starts and waits for are recorded in its own cassette, also in a
pool made by an earlier test.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import httpx2
import pytest

from harness.capture import CaptureError, CaptureSession, LateRequestWarning, _owner
from tests.support.cassettes import whole_document
from tests.support.inner import inner_pytest
from tests.support.stand_ins import anthropic_message


def ask(client: anthropic.Anthropic) -> str:
    reply = client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "Weather?"}]
    )
    return reply.content[0].text  # type: ignore[union-attr]


CONFTEST = """
import json

import httpx2
import pytest


def answer(request):
    asked = json.loads(request.content)["messages"][0]["content"]
    return httpx2.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": "answer to " + asked}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 2}})


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(answer)
"""

AGENT = """
import anthropic


def ask(question):
    client = anthropic.Anthropic(api_key="test-key-not-a-secret", max_retries=0)
    reply = client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": question}])
    return reply.content[0].text
"""

LINGERING = """
import threading

import pytest

import agent

SEND = threading.Event()
SENT = threading.Event()
OUTCOME = []


@pytest.mark.header_capture
def test_a():
    def later():
        SEND.wait(30)
        try:
            OUTCOME.append(agent.ask("late, from test_a"))
        except Exception as error:
            OUTCOME.append(f"{type(error).__name__}: {error}")
        finally:
            SENT.set()

    threading.Thread(target=later, daemon=True).start()  # never joined: it outlives test_a
    assert agent.ask("from test_a") == "answer to from test_a"


@pytest.mark.header_capture
def test_b():
    SEND.set()
    assert SENT.wait(30)
    assert agent.ask("from test_b") == "answer to from test_b"
    print("OUTCOME:", OUTCOME)
"""


def questions(cassette: object) -> list[str]:
    document = whole_document(cassette.read_bytes())  # type: ignore[attr-defined]
    requests = [e["request"] for e in document["exchanges"]]
    # a body the client sent as compact JSON is stored as `json`; a spaced one, as its `text`
    bodies = [r["json"] if "json" in r else json.loads(r["text"]) for r in requests]
    return [body["messages"][0]["content"] for body in bodies]


AGENT_REQUESTS = """
import requests


def ask(question):
    reply = requests.post(
        "https://api.anthropic.com/v1/messages",
        headers={"x-api-key": "test-key-not-a-secret", "anthropic-version": "2023-06-01"},
        json={"model": "claude-test", "max_tokens": 8,
              "messages": [{"role": "user", "content": question}]},
        timeout=30,
    )
    return reply.json()["content"][0]["text"]
"""


@pytest.mark.slow
@pytest.mark.parametrize("client", ["anthropic-httpx", "requests-urllib3"])
def test_a_lingering_threads_request_never_lands_in_the_next_tests_cassette(
    pytester: pytest.Pytester, client: str
) -> None:
    if client == "requests-urllib3":
        pytest.importorskip("requests")
    agent = AGENT if client == "anthropic-httpx" else AGENT_REQUESTS
    pytester.makepyfile(agent=agent, conftest=CONFTEST, test_agent=LINGERING)
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "-s", "--harness-mode=record")
    result.assert_outcomes(passed=2)
    folder = pytester.path / "fixtures" / "cassettes" / "test_agent"
    assert questions(folder / "test_a.json") == ["from test_a"]
    assert questions(folder / "test_b.json") == ["from test_b"]
    out = result.stdout.str()
    # refused in one line that names the test whose work sent it, and what to do
    assert "test_agent.py::test_a ended" in out
    assert "wait for the work it starts" in out
    assert "answer to late" not in out


NEAR_MISS = """
import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import agent

POOL = ThreadPoolExecutor(max_workers=2)  # shared by the tests: its threads start in test_a


@pytest.mark.header_capture
def test_a():
    assert POOL.submit(agent.ask, "pool, test_a").result() == "answer to pool, test_a"


@pytest.mark.header_capture
def test_b():
    answers = []
    thread = threading.Thread(target=lambda: answers.append(agent.ask("thread, test_b")))
    thread.start()
    thread.join()
    answers.append(POOL.submit(agent.ask, "pool, test_b").result())
    answers.append(asyncio.run(asyncio.to_thread(agent.ask, "to_thread, test_b")))
    assert len(answers) == 3
"""


@pytest.mark.slow
def test_the_work_a_test_starts_and_waits_for_is_its_own(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(agent=AGENT, conftest=CONFTEST, test_agent=NEAR_MISS)
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=2)
    folder = pytester.path / "fixtures" / "cassettes" / "test_agent"
    assert questions(folder / "test_a.json") == ["pool, test_a"]
    assert questions(folder / "test_b.json") == [
        "thread, test_b",
        "pool, test_b",
        "to_thread, test_b",
    ]


def test_in_process_a_late_thread_is_refused_and_the_running_session_keeps_only_its_own(
    tmp_path: Path,
) -> None:
    """The same through `CaptureSession.intercept()`, and asyncio tasks too."""
    upstream = httpx2.MockTransport(lambda _: httpx2.Response(200, json=anthropic_message()))
    first, second = (
        CaptureSession.for_test(tmp_path / name, "record", writes_allowed=True, upstream=upstream)
        for name in ("a.json", "b.json")
    )
    send, outcome = threading.Event(), []

    def later() -> None:
        send.wait(30)
        try:
            outcome.append(ask(anthropic.Anthropic(api_key="test-key", max_retries=0)))
        except CaptureError as error:
            outcome.append(str(error))

    with first.intercept():
        thread = threading.Thread(target=later)
        thread.start()
    with second.intercept(), pytest.warns(LateRequestWarning, match="after the test of"):
        send.set()
        thread.join(30)
        ask(anthropic.Anthropic(api_key="test-key", max_retries=0))
    assert len(second.requests) == 1 and first.requests == []
    assert "wait for the work it starts" in outcome[0]


def test_in_process_work_started_under_a_session_is_its_own(tmp_path: Path) -> None:
    """The near miss: threads, pool jobs and tasks a session's code starts and waits for."""
    upstream = httpx2.MockTransport(lambda _: httpx2.Response(200, json=anthropic_message()))
    session = CaptureSession.for_test(
        tmp_path / "c.json", "record", writes_allowed=True, upstream=upstream
    )
    client = anthropic.Anthropic(api_key="test-key", max_retries=0)
    with session.intercept(), ThreadPoolExecutor(2) as pool:
        thread = threading.Thread(target=ask, args=(client,))
        thread.start()
        thread.join()
        pool.submit(ask, client).result()
        asyncio.run(asyncio.to_thread(ask, client))
    assert len(session.requests) == 3


def test_a_pools_threads_are_no_tests_even_when_a_job_bypasses_the_submit_hook(
    tmp_path: Path,
) -> None:
    """A pool's worker threads started under one session serve the next: a job that reaches them
    around the `submit` hook (prove_stable's thread perturbation keeps its own reference to
    `submit`) is captured by the running session, not refused as the first one's."""
    upstream = httpx2.MockTransport(lambda _: httpx2.Response(200, json=anthropic_message()))
    first, second = (
        CaptureSession.for_test(tmp_path / name, "record", writes_allowed=True, upstream=upstream)
        for name in ("a.json", "b.json")
    )
    client = anthropic.Anthropic(api_key="test-key", max_retries=0)
    with ThreadPoolExecutor(1) as pool:
        with first.intercept():
            pool.submit(lambda: None).result()  # the pool's thread starts under the first
        with second.intercept():
            bare_submit = _owner._originals[(ThreadPoolExecutor, "submit")]
            bare_submit(pool, ask, client).result()
    assert len(second.requests) == 1 and first.requests == []
