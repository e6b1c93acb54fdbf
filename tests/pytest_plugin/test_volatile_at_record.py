"""A volatile value in the cached prefix fails the recording (issue 34, item 7).

Before, a timestamp in the system prompt was a warning: the recording passed green and wrote the
cassette, and only the next replay failed. Now a test that records fails on it and writes
nothing; `volatile_in_prefix="warn"` in `harness_capture_config` records anyway, and a replay
(check mode) keeps it a warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

# Imported once here: an in-process inner run drops what it imported, and would import it again.
openai = pytest.importorskip("openai")

CONFTEST = r"""
import os

import pytest

from harness.upstream import StandIn


@pytest.fixture
def harness_upstream():
    return StandIn(["Done."])


@pytest.fixture
def harness_capture_config():
    return {"volatile_in_prefix": os.environ.get("VOLATILE", "fail")}
"""

TESTS = r"""
import os

import openai
import pytest


@pytest.mark.header_capture
def test_agent():
    system = os.environ.get("SYSTEM", "Be brief.")
    openai.OpenAI(api_key="sk-test-not-a-key").responses.create(
        model="gpt-5", input=[{"role": "system", "content": system},
                              {"role": "user", "content": "What is on today?"}])
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    for name in ("CI", "VOLATILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SYSTEM", "Be brief. Today is Thursday, 3 December 2026.")
    return pytester


def cassettes(project: pytest.Pytester) -> list[Path]:
    return sorted(Path(project.path).rglob("fixtures/**/*.json"))


@pytest.mark.slow  # inner pytest runs
def test_recording_a_volatile_prefix_fails_and_writes_nothing(project: pytest.Pytester) -> None:
    result = inner_pytest(project, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*a volatile value in the cached prefix refuses the recording, nothing is written*",
            '*volatile-in-prefix*looks like a date: "Thursday, 3 December 2026" at /input/0*',
        ]
    )
    assert cassettes(project) == []


@pytest.mark.slow  # inner pytest runs
def test_a_stable_prefix_records_and_warn_records_anyway_and_replay_only_warns(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSTEM", "Be brief. Give dates like 2026-01-31, e.g. 2026-01-31.")
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    assert len(cassettes(project)) == 1  # the near miss: an example of a format is not volatile
    for path in cassettes(project):
        path.unlink()
    monkeypatch.setenv("SYSTEM", "Be brief. Today is Thursday, 3 December 2026.")
    monkeypatch.setenv("VOLATILE", "warn")
    inner_pytest(project, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    assert len(cassettes(project)) == 1
    monkeypatch.delenv("VOLATILE")  # replaying, the finding stays a warning
    replayed = inner_pytest(project, "-p", "no:randomly")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*warning volatile-in-prefix*"])
