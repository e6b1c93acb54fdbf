"""No silent pass (issue 23): a client the capture does not see, and a marked test that captured
nothing, fail (or warn) instead of passing green.

The agents here are a user's: one opens a raw socket to the provider, one swallows its network
error and falls back to a canned answer (the worst case: its test body passes), one sends nothing.
Nothing reaches the network: the guard refuses the host before any connection is made.
"""

from __future__ import annotations

import pytest

from tests.support.inner import inner_pytest

TESTS = """
import socket
import httpx2
import pytest


def canned_agent():  # its own HTTP over a raw socket, and a canned answer when that fails
    try:
        with socket.create_connection(("api.anthropic.com", 443), timeout=1) as connection:
            connection.sendall(b"POST /v1/messages HTTP/1.1\\r\\n\\r\\n")
        return "live"
    except Exception:
        return "Sunny (canned)"


@pytest.mark.header_capture
def test_raw_socket_to_the_provider():
    socket.create_connection(("api.openai.com", 443), timeout=1)


@pytest.mark.header_capture
def test_agent_swallows_its_network_error():
    assert canned_agent() == "Sunny (canned)"


@pytest.mark.header_capture
def test_sends_nothing():
    assert 1 + 1 == 2


@pytest.mark.header_capture(no_requests="ignore")
def test_sends_nothing_on_purpose():
    assert True


@pytest.mark.header_capture(block_network="none", no_requests="ignore")
def test_unguarded_near_miss():
    assert "localhost" in {"localhost"}


def test_unmarked_socket_is_left_alone():
    assert socket.getaddrinfo.__module__ == "socket"
"""


@pytest.mark.slow
def test_uncaptured_clients_and_empty_tests_fail_in_check_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_agent=TESTS)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=check")
    result.assert_outcomes(failed=3, passed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_raw_socket_to_the_provider*",
            "*a raw socket call in test_agent tried to reach a provider host, api.openai.com,"
            " through a client the capture does not see*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*a raw socket call in test_agent tried to reach a provider host, api.anthropic.com*"]
    )
    result.stdout.fnmatch_lines(["*marked header_capture but captured no request*"])
    result.stdout.fnmatch_lines(
        [
            "*1 test(s) marked header_capture captured no request:",
            "*test_agent.py::test_sends_nothing (failed)",
        ]
    )


@pytest.mark.slow
def test_an_empty_marked_test_is_warned_about_while_recording(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_agent=TESTS)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record", "-k", "nothing")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*NoRequestsWarning*captured no request*"])
    result.stdout.fnmatch_lines(["*test_agent.py::test_sends_nothing (warned)"])
    assert "test_sends_nothing_on_purpose (" not in result.stdout.str()


FAKE_RESOLVER = """
import socket

REAL = socket.getaddrinfo


def fake(host, *args, **kwargs):  # no DNS in tests: every host is "resolved" to loopback
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 443))]


def pytest_runtest_setup(item):
    socket.getaddrinfo = fake


def pytest_runtest_logfinish(nodeid, location):
    socket.getaddrinfo = REAL
"""

CI_TESTS = """
import socket

import pytest


@pytest.mark.header_capture(no_requests="ignore")
def test_any_host():
    socket.getaddrinfo("example.org", 443)


@pytest.mark.header_capture(no_requests="ignore", allowed_hosts=["example.org"])
def test_allowed_host():
    socket.getaddrinfo("example.org", 443)
    socket.getaddrinfo("localhost", 80)
"""


@pytest.mark.slow
def test_in_ci_every_host_is_guarded_but_loopback_and_allowed_hosts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(FAKE_RESOLVER)
    pytester.makepyfile(test_ci=CI_TESTS)
    monkeypatch.setenv("CI", "true")
    result = inner_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*test_any_host*", "*tried to reach a host, example.org*"])
    monkeypatch.delenv("CI")  # the near miss: locally, a host no provider answers on is let be
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=2)
