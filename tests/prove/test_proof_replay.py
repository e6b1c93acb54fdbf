"""prove_stable under a capture session also compares what was sent with the recording.

A header can be stable under every registration order and still differ from what was recorded
(a tool renamed since): the shuffle alone passes it, and replaying must not. The mismatch is kept
in the session's errors (the shuffle's drift, which names the cause, wins when there is one), and
the plugin fails the test on it after the test body.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.capture import CaptureSession, CassetteMismatch
from harness.prove._stable import make_prove_stable_fixture
from tests.support.inner import inner_pytest
from tests.support.paths import SUPPORT
from tests.support.stand_ins import anthropic_message

PLUGINS = ("weather", "calendar", "maps")


def upstream() -> httpx2.MockTransport:
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=anthropic_message()))


def build_for(session: CaptureSession, rename: str | None = None) -> Any:
    def build(plugins: list[str]) -> None:
        names = sorted(f"{plugin}_tool" for plugin in plugins)  # sorted: stable under orders
        if rename is not None:
            names = [rename if name == "maps_tool" else name for name in names]
        client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
        client.messages.create(
            model="claude-test",
            max_tokens=32,
            tools=[{"name": n, "input_schema": {"type": "object"}} for n in names],  # type: ignore[misc]
            messages=[{"role": "user", "content": "plan"}],
        )

    return build


def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "proof.json"
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream())
    prove = make_prove_stable_fixture(seed=3, permutations=4, command=None, capture=session)
    prove(build_for(session), PLUGINS)
    path.write_bytes(session.finish().files[0][1])
    return path


def test_a_stable_build_that_matches_the_recording_passes(tmp_path: Path) -> None:
    session = CaptureSession.for_test(recorded(tmp_path), "check", writes_allowed=False)
    prove = make_prove_stable_fixture(seed=3, permutations=4, command=None, capture=session)
    result = prove(build_for(session), PLUGINS)
    assert len(result.orders) == 4 and len(set(result.header_bytes)) == 1
    assert session.errors == []


def test_a_stable_build_that_differs_from_the_recording_fails_on_replay(tmp_path: Path) -> None:
    session = CaptureSession.for_test(recorded(tmp_path), "check", writes_allowed=False)
    prove = make_prove_stable_fixture(seed=3, permutations=4, command=None, capture=session)
    prove(build_for(session, rename="map_tool"), PLUGINS)  # stable under every order
    (error,) = session.errors
    assert isinstance(error, CassetteMismatch)
    assert "does not match prove_stable call 1's exchange 1 of cassette" in str(error)
    assert error.report is not None and error.report.verdict == "tools_changed"
    assert session.finish().files == []


@pytest.mark.slow
def test_through_the_plugin_the_test_fails_on_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import httpx2
import pytest
from stand_ins import anthropic_message


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=anthropic_message()))
"""
    )
    pytester.makepyfile(
        test_proof="""
import os

import anthropic


def test_plugins_are_stable(prove_stable, header_capture):
    def build(plugins):
        names = sorted(plugin + "_tool" for plugin in plugins)
        if os.environ.get("RENAME"):
            names[0] = "renamed_tool"
        http = header_capture.httpx2_client()
        client = anthropic.Anthropic(api_key="sk-ant-test", http_client=http)
        client.messages.create(
            model="claude-test",
            max_tokens=32,
            tools=[{"name": n, "input_schema": {"type": "object"}} for n in names],
            messages=[{"role": "user", "content": "plan"}],
        )

    prove_stable(build, ["weather", "calendar", "maps"])
"""
    )
    pytester.syspathinsert(SUPPORT)
    args = ("-p", "no:randomly")
    inner_pytest(pytester, *args, "--harness-mode=record").assert_outcomes(passed=1)
    inner_pytest(pytester, *args).assert_outcomes(passed=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RENAME", "1")
        result = inner_pytest(pytester, *args)
    result.assert_outcomes(failed=1)
    assert "does not match prove_stable call 1's exchange 1" in result.stdout.str()


def test_update_mode_rewrites_the_proof_instead(tmp_path: Path) -> None:
    path = recorded(tmp_path)
    session = CaptureSession.for_test(path, "update", writes_allowed=True)
    prove = make_prove_stable_fixture(seed=3, permutations=4, command=None, capture=session)
    prove(build_for(session, rename="map_tool"), PLUGINS)
    (written,) = session.finish().files
    assert b"map_tool" in written[1]
