"""A proof warns about what the build caches, never about the harness's own reads.

The harness's provider registry reads the `harness.providers` entry points, and its rules and
prices packs list their folders, the first time a captured request needs them; a client library
reads its own version (`importlib.metadata.version`) when it is first imported. Both may happen
inside the build's first run. The proof used to note them as the build's and warn that "the build
read entry points in its first run only (a cache?)" on the first proof of every process: a false
alarm on a correct program. A build that really caches entry points still gets the warning.
"""

from __future__ import annotations

import pytest

from tests.support.inner import inner_pytest
from tests.support.paths import SUPPORT

CONFTEST = """
import httpx2
import pytest
from stand_ins import anthropic_message


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=anthropic_message()))
"""

PROOF = """
import functools
import os
from importlib.metadata import entry_points

import anthropic
import pytest


@functools.cache
def installed_groups():
    return tuple(sorted(entry_points().groups))


@pytest.mark.header_capture
def test_plugins_are_stable(prove_stable):
    def build(plugins):
        if os.environ.get("CACHED_ENTRY_POINTS"):
            installed_groups()
        names = sorted(plugin + "_tool" for plugin in plugins)
        client = anthropic.Anthropic(api_key="sk-ant-test")
        client.messages.create(
            model="claude-test",
            max_tokens=32,
            tools=[{"name": n, "input_schema": {"type": "object"}} for n in names],
            messages=[{"role": "user", "content": "plan"}],
        )

    prove_stable(build, ["weather", "calendar", "maps"])
"""

STRICT = ("-p", "no:randomly", "-W", "error::harness.PerturbationWarning")


@pytest.mark.slow
def test_a_first_proof_under_capture_gives_no_warning(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_proof=PROOF)
    pytester.makepyfile(stand_ins=(SUPPORT / "stand_ins.py").read_text())
    # A fresh interpreter each time: the harness's registry and the SDK's imports are first
    # touched inside the build, as in a user's CI job.
    recorded = inner_pytest(pytester, *STRICT, "--harness-mode=record", subprocess=True)
    recorded.assert_outcomes(passed=1)
    checked = inner_pytest(pytester, *STRICT, subprocess=True)
    checked.assert_outcomes(passed=1)
    assert "1 prove_stable call(s), judged by the proof" in checked.stdout.str()


@pytest.mark.slow
def test_a_build_that_caches_entry_points_is_still_warned(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_proof=PROOF)
    pytester.makepyfile(stand_ins=(SUPPORT / "stand_ins.py").read_text())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CACHED_ENTRY_POINTS", "1")
        result = inner_pytest(
            pytester, "-p", "no:randomly", "--harness-mode=record", subprocess=True
        )
    result.assert_outcomes(passed=1)
    assert "entry points in its first run only (a cache?)" in result.stdout.str()
