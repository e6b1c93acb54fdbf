"""CI detection: whether this is a CI run, and which variable said so.

`detect_ci()` reads a CI service's own variable, or the generic `CI`; `CI=false` and `CI=0` are
not CI (decision 0010). CI never writes, and every refusal names the variable. What is printed on
GitHub Actions (annotations, the step summary) is `harness._shared._actions`'.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from harness._shared._errors import WriteRefused

__all__ = [
    "CI_GENERIC",
    "CI_OPT_OUT",
    "CI_SERVICES",
    "CI_VARIABLES",
    "CiRun",
    "detect_ci",
    "refuse_writes_under_ci",
    "writes_allowed",
]


# The service's own variable: the CI service sets it, so any non-empty value means that service
# (a job on GitHub Actions is CI whatever `CI` says). Most-specific first, so a message names the
# service rather than the generic `CI` when both are set.
CI_SERVICES: Final = (
    ("GITHUB_ACTIONS", "GitHub Actions"),
    ("GITLAB_CI", "GitLab CI"),
    ("BUILDKITE", "Buildkite"),
    ("CIRCLECI", "CircleCI"),
    ("TF_BUILD", "Azure Pipelines"),
    ("JENKINS_URL", "Jenkins"),
    ("HUDSON_URL", "Hudson"),
    ("TEAMCITY_VERSION", "TeamCity"),
    ("CODEBUILD_BUILD_ID", "AWS CodeBuild"),
    ("bamboo_buildKey", "Bamboo"),
    ("BITBUCKET_BUILD_NUMBER", "Bitbucket Pipelines"),
    ("TRAVIS", "Travis CI"),
    ("APPVEYOR", "AppVeyor"),
    ("DRONE", "Drone"),
    ("SEMAPHORE", "Semaphore"),
    ("CIRRUS_CI", "Cirrus CI"),
    ("BUILDER_OUTPUT", "Google Cloud Build"),
    ("CF_BUILD_ID", "Codefresh"),
    ("GO_PIPELINE_NAME", "GoCD"),
    ("HEROKU_TEST_RUN_ID", "Heroku CI"),
    ("NETLIFY", "Netlify"),
    ("CM_BUILD_ID", "Codemagic"),
    ("BUDDY_WORKSPACE_ID", "Buddy"),
    ("SCREWDRIVER", "Screwdriver"),
    ("JB_SPACE_EXECUTION_NUMBER", "JetBrains Space"),
    ("EAS_BUILD", "Expo EAS"),
)
# Generic variables, set by most services and often by hand: an explicit "false", "0", "no" or
# "off" means "not CI" (decision 0010; inline-snapshot reads any non-empty value as CI).
CI_GENERIC: Final = ("CI", "CONTINUOUS_INTEGRATION")
CI_VARIABLES: Final = (*(name for name, _ in CI_SERVICES), *CI_GENERIC)
CI_OPT_OUT: Final = ("0", "false", "no", "off")
_SERVICE_NAMES: Final = dict(CI_SERVICES)


@dataclass(frozen=True)
class CiRun:
    """The variable that made this a CI run, and its value."""

    variable: str
    value: str

    @property
    def service(self) -> str | None:
        """The CI service the variable belongs to; None for a generic one (`CI`)."""
        return _SERVICE_NAMES.get(self.variable)

    def describe(self) -> str:
        value = self.value if len(self.value) <= 40 else self.value[:39] + "…"
        return f"{self.variable}={value}"


def detect_ci(environ: Mapping[str, str] | None = None) -> CiRun | None:
    """The CI variable that is set, or None outside CI.

    A service's own variable counts with any non-empty value; a generic one (`CI`,
    `CONTINUOUS_INTEGRATION`) unless its value is "false", "0", "no" or "off" (any case).
    """
    env = os.environ if environ is None else environ
    for name in CI_VARIABLES:
        value = env.get(name)
        if not value or not value.strip():
            continue
        if name in CI_GENERIC and value.strip().lower() in CI_OPT_OUT:
            continue
        return CiRun(name, value)
    return None


def writes_allowed() -> bool:
    """CI never writes: any of the usual CI variables set forbids it."""
    return detect_ci() is None


def refuse_writes_under_ci(what: str, fix: str = "run it locally and commit the result") -> None:
    """`WriteRefused` naming the CI variable found, when this is a CI run; else nothing."""
    found = detect_ci()
    if found is not None:
        raise WriteRefused(
            f"refusing to {what} under CI ({found.describe()}): CI never writes; {fix}"
        )
