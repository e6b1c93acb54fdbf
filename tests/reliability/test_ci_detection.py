"""CI detection names what it found, knows the usual services, and reads `CI=false` as written.

Defect 12 of the reliability issue: detection missed TeamCity, AWS CodeBuild, Bamboo and others,
and a refusal did not say which variable made the run a CI run. Decision 0010: a service's own
variable counts with any value; the generic `CI` (and `CONTINUOUS_INTEGRATION`) with any value
but "false", "0", "no" or "off".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._shared._ci import CI_VARIABLES, detect_ci
from harness._shared._errors import WriteRefused
from harness._shared._files import write_atomic
from tests.support.inner import inner_pytest

from .conftest import Cli, one_line, tree

SERVICES = {
    "TEAMCITY_VERSION": "2025.03",
    "CODEBUILD_BUILD_ID": "project:1f2e3d",
    "bamboo_buildKey": "PROJ-PLAN-JOB1",
    "GITHUB_ACTIONS": "true",
    "GITLAB_CI": "true",
    "TF_BUILD": "True",
    "JENKINS_URL": "https://ci.example/",
    "BITBUCKET_BUILD_NUMBER": "12",
    "CIRCLECI": "true",
    "BUILDKITE": "true",
    "TRAVIS": "true",
    "APPVEYOR": "True",
    "DRONE": "true",
    "SEMAPHORE": "true",
    "BUILDER_OUTPUT": "/builder/outputs",
}


@pytest.mark.parametrize("variable", list(SERVICES))
def test_each_ci_service_is_detected_and_named(variable: str) -> None:
    found = detect_ci({variable: SERVICES[variable]})
    assert found is not None
    assert found.variable == variable and found.describe() == f"{variable}={SERVICES[variable]}"
    assert found.service  # the service's own name, for people


@pytest.mark.parametrize("value", ["false", "False", "FALSE", "0", "no", "off", " false ", ""])
def test_ci_false_and_ci_0_are_not_ci(value: str) -> None:
    assert detect_ci({"CI": value}) is None
    assert detect_ci({"CONTINUOUS_INTEGRATION": value}) is None


@pytest.mark.parametrize("value", ["true", "1", "yes", "woodpecker", "anything"])
def test_any_other_value_of_ci_is_ci(value: str) -> None:
    found = detect_ci({"CI": value})
    assert found is not None and found.describe() == f"CI={value}"


def test_a_service_variable_wins_over_ci_false() -> None:
    """`CI=false` set by hand inside a real CI job does not make it a local run."""
    found = detect_ci({"CI": "false", "GITHUB_ACTIONS": "true"})
    assert found is not None and found.variable == "GITHUB_ACTIONS"


def test_every_variable_detected_is_one_the_test_suite_clears() -> None:
    """The root conftest removes CI_VARIABLES for the session: a new one must be in it."""
    assert {"TEAMCITY_VERSION", "CODEBUILD_BUILD_ID", "bamboo_buildKey", "CI"} <= set(CI_VARIABLES)


@pytest.mark.parametrize("variable", ["TEAMCITY_VERSION", "CODEBUILD_BUILD_ID", "bamboo_buildKey"])
def test_the_cli_refuses_to_write_and_names_the_variable(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, SERVICES[variable])
    before = tree(project)
    for command in ("record", "refresh"):
        code, _, err = cli(command, "fixtures/text-turn")
        assert code == 2
        line = one_line(err)
        assert f"refusing to write under CI ({variable}={SERVICES[variable]})" in line
    assert tree(project) == before


def test_ci_false_lets_the_cli_write(
    project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "false")
    code, out, err = cli("record", "fixtures/text-turn")
    assert code == 0, err
    assert "text-turn: recorded" in out


def test_a_write_under_ci_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBUILD_BUILD_ID", "build:42")
    with pytest.raises(WriteRefused, match=r"under CI \(CODEBUILD_BUILD_ID=build:42\)"):
        write_atomic(tmp_path / "x.json", b"{}\n")
    assert not (tmp_path / "x.json").exists()


def test_the_plugin_refuses_a_writing_mode_and_names_the_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("bamboo_buildKey", "PROJ-PLAN-JOB1")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "this is a CI run (bamboo_buildKey=PROJ-PLAN-JOB1)" in result.stderr.str()
