"""A recording is written only by a test that passed, attacked again (issue 24's defect 5, with
variations): a fixture whose teardown raises, a finalizer that raises, a setup that raises,
`pytest.skip()` and `pytest.xfail()` midway, a failure under `@pytest.mark.xfail`, a strict xfail
that passes, and a plain failure midway, in `record` and in `update` mode: each keeps the complete
two-turn cassette it had, byte for byte.
"""

from __future__ import annotations

import pytest

from tests.support.inner import inner_pytest

CONFTEST = r"""
import httpx2
import pytest

ANSWER = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "Hello."}}]}

@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))

@pytest.fixture
def harness_capture_config():
    return {}

import os

@pytest.fixture
def bad_teardown():
    yield
    if os.environ.get("MODE") == "teardown":
        raise RuntimeError("teardown broke")

@pytest.fixture
def bad_setup():
    if os.environ.get("MODE") == "setup":
        raise RuntimeError("setup broke")
"""

TESTS = r"""
import os
import openai
import pytest

MODE = os.environ.get("MODE", "")

def turn(client, messages):
    client.chat.completions.create(model="gpt-4o", messages=messages)
    answer = {"role": "assistant", "content": "Hello."}
    return messages + [answer, {"role": "user", "content": "And?"}]

def converse(stop=None):
    client = openai.OpenAI(api_key="not-a-key")
    messages = [{"role": "user", "content": "Paris?"}]
    messages = turn(client, messages)
    if stop:
        stop()
    turn(client, messages)

@pytest.mark.header_capture
def test_teardown(bad_teardown):
    converse()

@pytest.mark.header_capture
def test_setup(bad_setup):
    converse()

@pytest.mark.header_capture
def test_skip_midway():
    converse((lambda: pytest.skip("no more")) if MODE == "skip" else None)

@pytest.mark.header_capture
def test_xfail_midway():
    converse((lambda: pytest.xfail("known")) if MODE == "xfail" else None)

@pytest.mark.header_capture
@pytest.mark.xfail(condition=os.environ.get("MODE") == "xfailmark", reason="flaky", strict=False)
def test_under_xfail():
    converse((lambda: 1 / 0) if MODE == "xfailmark" else None)

@pytest.mark.header_capture
def test_finalizer(request):
    if MODE == "finalizer":
        request.addfinalizer(lambda: 1 / 0)
    converse()

@pytest.mark.header_capture
@pytest.mark.xfail(condition=os.environ.get("MODE") == "xpass", reason="x", strict=True)
def test_xpass_strict():
    converse((lambda: None) if MODE == "xpass" else None)

@pytest.mark.header_capture
def test_fails_midway():
    converse((lambda: pytest.fail("stop")) if MODE == "fail" else None)
"""

MODES = ["teardown", "setup", "skip", "xfail", "xfailmark", "finalizer", "xpass", "fail"]


@pytest.mark.slow
def test_no_way_of_not_passing_overwrites_a_complete_cassette(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MODE", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_part=TESTS)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=8)
    folder = pytester.path / "fixtures" / "cassettes" / "test_part"
    complete = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert len(complete) == 8
    for mode in MODES:
        monkeypatch.setenv("MODE", mode)
        for harness_mode in ("record", "update"):
            inner_pytest(pytester, "-p", "no:randomly", f"--harness-mode={harness_mode}")
            now = {path.name: path.read_bytes() for path in folder.iterdir()}
            assert now == complete, (mode, harness_mode)
