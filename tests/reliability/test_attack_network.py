"""No silent pass, attacked again (issue 23): the other doors to the resolver, block modes and
an agent that swallows its error next to a captured request.

Before, only `socket.getaddrinfo` was guarded: a socket's own `connect(("api.anthropic.com",
443))` (which resolves in C) and `socket.gethostbyname` went past it, so an agent that sent one
request through a captured client and another through its own socket, swallowing the error,
passed green in record and check mode.
"""

from __future__ import annotations

import pytest

from tests.support.inner import inner_pytest

CONFTEST = """
import httpx2
import pytest

CHAT = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}]}


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=CHAT))
"""

TESTS = """
import socket
import threading

import pytest
import requests


def quiet(call):
    try:
        call()
    except Exception:
        return "canned"
    return "live"


def ask_captured():
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "Hi"}]}
    reply = requests.post("https://api.openai.com/v1/chat/completions", json=body)
    return reply.json()["choices"][0]["message"]["content"]


def own_socket(host):
    connection = socket.socket()
    try:
        return quiet(lambda: connection.connect((host, 443)))
    finally:
        connection.close()


@pytest.mark.header_capture
def test_captured_and_own_socket_swallowed():
    assert ask_captured() == "Hello."
    assert own_socket("api.anthropic.com") == "canned"


@pytest.mark.header_capture
def test_captured_and_connect_ex():
    assert ask_captured() == "Hello."
    connection = socket.socket()
    quiet(lambda: connection.connect_ex(("api.x.ai", 443)))
    connection.close()


@pytest.mark.header_capture
def test_captured_and_gethostbyname_in_a_thread():
    assert ask_captured() == "Hello."
    worker = threading.Thread(target=lambda: quiet(lambda: socket.gethostbyname("api.groq.com")))
    worker.start()
    worker.join()


@pytest.mark.header_capture
def test_near_miss_own_socket_to_loopback():
    assert ask_captured() == "Hello."
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    connection = socket.socket()
    connection.connect(("localhost", server.getsockname()[1]))
    connection.close()
    server.close()


@pytest.mark.header_capture(allowed_hosts=["api.anthropic.com"])
def test_near_miss_allowed_host():
    assert ask_captured() == "Hello."
    own_socket("api.anthropic.com")


@pytest.mark.header_capture(block_network="none")
def test_near_miss_block_network_none():
    assert ask_captured() == "Hello."
    own_socket("api.anthropic.com")


@pytest.mark.header_capture(block_network="all")
def test_all_blocks_a_host_no_provider_answers_on():
    assert ask_captured() == "Hello."
    own_socket("example.org")


@pytest.mark.header_capture
def test_near_miss_providers_lets_other_hosts_be():
    assert ask_captured() == "Hello."
    own_socket("example.invalid")


def test_unmarked_is_untouched():
    assert own_socket("api.anthropic.com") == "canned"
    assert socket.socket.connect.__qualname__ != "guarded"
"""


@pytest.mark.slow
def test_every_door_to_the_resolver_is_guarded_and_the_near_misses_pass(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=4, passed=5)
    out = result.stdout.str()
    for name, host in (
        ("test_captured_and_own_socket_swallowed", "api.anthropic.com"),
        ("test_captured_and_connect_ex", "api.x.ai"),
        ("test_captured_and_gethostbyname_in_a_thread", "api.groq.com"),
        ("test_all_blocks_a_host_no_provider_answers_on", "example.org"),
    ):
        assert f"FAILED test_agent.py::{name}" in out, name
        assert f"reach a provider host, {host}," in out or f"reach a host, {host}," in out, host
    assert "a raw socket call in test_agent tried to reach a provider host, api.anthropic" in out
