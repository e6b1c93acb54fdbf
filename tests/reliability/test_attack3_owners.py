"""The four questions left open last round (issue 32), decided (docs/decisions/0029):

- a thread no test started (at import, by a session-scoped fixture) is captured by the test
  running when it sends: a session-scoped server's traffic is each test's own (kept);
- work a test started that later tests feed (a lazily started worker) still belongs to that
  test: what it sends to a captured host after the test ended is refused (kept), what it sends
  to a host the capture does not capture goes out untouched (changed: it was refused too);
- requests a pool sends one after the other keep their sending order in the file, which may
  change between two recordings; replay answers them in any order (kept);
- a growing message (DSPy's ReAct) whose middle step was edited before a step was added is
  judged against the step it edits, and breaks (changed: it read as a new question, or as an
  extension of an older step, and passed).
"""

from __future__ import annotations

import json
import queue
import threading
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureSession, LateRequestWarning, load_cassette
from tests.support.inner import inner_pytest
from tests.support.stand_ins import chat_completion

CHAT = "https://api.openai.com/v1/chat/completions"


def answering() -> httpx2.MockTransport:
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=chat_completion()))


# -- 5. a thread no test started -------------------------------------------------------------

SERVER_CONFTEST = r"""
import queue
import threading

import httpx2
import pytest


@pytest.fixture(scope="session")
def agent_server():
    # a session-scoped agent: one thread, started before any capture, serving every test
    jobs = queue.Queue()

    def serve():
        client = httpx2.Client()
        while True:
            question, answers = jobs.get()
            body = {"model": "gpt-test", "messages": [{"role": "user", "content": question}]}
            reply = client.post("https://api.openai.com/v1/chat/completions", json=body)
            answers.put(reply.json()["choices"][0]["message"]["content"])

    threading.Thread(target=serve, daemon=True).start()

    def ask(question):
        answers = queue.Queue()
        jobs.put((question, answers))
        return answers.get(timeout=10)

    return ask


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json={
        "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}]}))
"""

SERVER_TESTS = r"""
import pytest


@pytest.mark.header_capture
def test_paris(agent_server):
    assert agent_server("Paris?") == "Hello."


@pytest.mark.header_capture
def test_rome(agent_server):
    assert agent_server("Rome?") == "Hello."
"""


def test_a_session_scoped_servers_requests_land_in_the_cassette_of_the_test_that_drives_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(SERVER_CONFTEST)
    pytester.makepyfile(test_server=SERVER_TESTS)
    monkeypatch.delenv("CI", raising=False)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=2)
    cassettes = {p.stem: load_cassette(p) for p in Path(pytester.path).rglob("*.json")}
    asked = {
        name: [e.request.parsed["messages"][0]["content"] for e in capture.exchanges]
        for name, capture in cassettes.items()
    }
    assert sorted(asked.values()) == [["Paris?"], ["Rome?"]], asked
    monkeypatch.setenv("CI", "true")  # and each replays its own
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=2)


def test_a_thread_no_test_started_is_captured_by_the_session_intercepting_when_it_sends() -> None:
    jobs: queue.Queue[tuple[str, queue.Queue[int]]] = queue.Queue()

    def serve() -> None:
        while True:
            question, done = jobs.get()
            body = {"model": "gpt-test", "messages": [{"role": "user", "content": question}]}
            done.put(httpx2.Client().post(CHAT, json=body).status_code)

    threading.Thread(target=serve, daemon=True).start()  # before any session: no owner
    sessions = [CaptureSession(upstream=answering()) for _ in range(2)]
    for session, question in zip(sessions, ("Paris?", "Rome?"), strict=True):
        done: queue.Queue[int] = queue.Queue()
        with session.intercept():
            jobs.put((question, done))
            assert done.get(timeout=10) == 200
    assert [[r.json()["messages"][0]["content"] for r in s.requests] for s in sessions] == [
        ["Paris?"],
        ["Rome?"],
    ]


# -- 6. a lazily started worker fed by later tests -------------------------------------------


class Worker:
    """A worker thread started on first use (by whichever test uses it first), fed by a queue."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[str, queue.Queue[Any]]] = queue.Queue()
        self.thread: threading.Thread | None = None
        # the project's own telemetry client, on a host no provider answers on
        self.client = httpx2.Client(transport=httpx2.MockTransport(self.answer))

    @staticmethod
    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.host == "telemetry.example":
            return httpx2.Response(204)
        return httpx2.Response(200, json=chat_completion())

    def run(self) -> None:
        while True:
            url, done = self.jobs.get()
            try:
                done.put(self.client.post(url, json={"model": "gpt-test", "messages": []}))
            except Exception as error:
                done.put(error)

    def send(self, url: str) -> Any:
        if self.thread is None:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()
        done: queue.Queue[Any] = queue.Queue()
        self.jobs.put((url, done))
        return done.get(timeout=10)


@pytest.fixture
def worker() -> Iterator[Worker]:
    yield Worker()


def test_a_lazily_started_workers_request_to_an_uncaptured_host_goes_out_untouched(
    worker: Worker,
) -> None:
    with CaptureSession(upstream=answering()).intercept():  # the first test starts it
        assert worker.send("https://telemetry.example/v1/events").status_code == 204
    later = CaptureSession(upstream=answering())
    with warnings.catch_warnings():
        warnings.simplefilter("error", LateRequestWarning)
        with later.intercept():
            assert worker.send("https://telemetry.example/v1/events").status_code == 204
    assert later.requests == [] and later.errors == []


def test_near_miss_its_request_to_a_captured_host_in_a_later_test_is_refused(
    worker: Worker,
) -> None:
    with CaptureSession(upstream=answering()).intercept():
        assert worker.send(CHAT).status_code == 200
    later = CaptureSession(upstream=answering())
    with pytest.warns(LateRequestWarning, match="session-scoped fixture"), later.intercept():
        refused = worker.send(CHAT)
    assert "ended" in str(refused)
    assert later.requests == []  # never in the later test's cassette


# -- 7. sequential pool requests -------------------------------------------------------------


def pooled(order: tuple[str, ...]) -> Callable[[], None]:
    """Two pool jobs, one after the other (one worker), in `order`."""

    def ask(city: str) -> int:
        body = {"model": "gpt-test", "messages": [{"role": "user", "content": city}]}
        return httpx2.Client().post(CHAT, json=body).status_code

    def run() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            assert list(pool.map(ask, order)) == [200, 200]

    return run


# slow: 0.80-0.93 s of CPU in a serial run (issue 33)
@pytest.mark.slow
def test_sequential_pool_requests_keep_their_sending_order_and_replay_in_any_order(
    tmp_path: Path,
) -> None:
    cassettes = {}
    for order in (("Paris", "Rome"), ("Rome", "Paris")):
        path = tmp_path / f"{order[0]}.json"
        session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=answering())
        with session.intercept():
            pooled(order)()
        path.write_bytes(session.finish().files[0][1])
        cassettes[order] = path
        stored = [e.request.parsed["messages"][0]["content"] for e in load_cassette(path).exchanges]
        assert tuple(stored) == order  # the order they were sent in
    for path in cassettes.values():
        for order in cassettes:
            replayed = CaptureSession.for_test(path, "check", writes_allowed=False)
            with replayed.intercept():
                pooled(order)()
            assert replayed.errors == []


# -- 8. an edited middle step of a growing message -------------------------------------------

SYSTEM = "Your input fields are: question, trajectory. Tools: search, finish."
HEAD = (
    "[[ ## question ## ]]\nWhich museums are open in Paris on Monday?\n\n[[ ## trajectory ## ]]\n"
)
TAIL = "\n\nRespond with the corresponding output fields, starting with `[[ ## next_thought ## ]]`."


def observation(step: int, order: tuple[str, ...]) -> str:
    return f"[[ ## observation_{step} ## ]]\n{{'open': {list(order)}, 'checked': 'monday'}}\n"


def trajectory(steps: int, rendered: dict[int, tuple[str, ...]] | None = None) -> str:
    text = HEAD
    for step in range(steps):
        order = (rendered or {}).get(step, ("Louvre", "Orsay", "Rodin"))
        text += f"[[ ## thought_{step} ## ]]\nI should look up step {step} of the plan.\n"
        text += f"[[ ## tool_name_{step} ## ]]\nsearch\n" + observation(step, order)
    return text + TAIL


def react(*messages: str, system: str = SYSTEM) -> CaptureSession:
    session = CaptureSession(upstream=answering())
    with session.intercept():
        for text in messages:
            body = {"model": "gpt-5", "messages": [{"role": "system", "content": system}]}
            body["messages"].append({"role": "user", "content": text})
            httpx2.Client().post(CHAT, content=json.dumps(body))
    return session


def test_a_middle_step_rendered_anew_before_the_next_step_breaks_the_gate() -> None:
    # step 0's observation printed from a set: another order when step 2's message is built
    edited = trajectory(3, {0: ("Rodin", "Louvre", "Orsay")})
    session = react(trajectory(1), trajectory(2), edited)
    (found,) = session.prefix_breaks()
    assert found.index == 3 and found.block == "messages"


def test_near_miss_a_growing_trajectory_and_a_new_question_after_it_keep_the_gate() -> None:
    other = trajectory(1).replace("Paris on Monday", "Rome on Sunday")
    session = react(trajectory(1), trajectory(2), trajectory(3), other)
    chain = session.prefix_chain()
    assert chain.breaks == [] and chain.judged["openai-chat"] == 2


def test_near_miss_another_module_over_the_whole_trajectory_is_another_conversation() -> None:
    # ReAct's extraction step: another signature (system prompt), the trajectory, another tail
    extract = trajectory(3).replace(TAIL, "\n\nRespond with `[[ ## reasoning ## ]]`, then answer.")
    session = react(trajectory(1), trajectory(2))
    with session.intercept():
        body = {"model": "gpt-5", "messages": [{"role": "system", "content": "Extract."}]}
        body["messages"].append({"role": "user", "content": extract})
        httpx2.Client().post(CHAT, content=json.dumps(body))
    assert session.prefix_breaks() == []
