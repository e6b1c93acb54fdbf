"""CI detection, and the one writer of GitHub Actions output.

- `detect_ci()`: whether this is a CI run, and which variable said so (a CI service's own variable,
  or the generic `CI`; `CI=false` and `CI=0` are not CI: decision 0010). CI never writes, and
  every refusal names the variable.
- GitHub Actions: annotations (`::error ...`, escaped as GitHub documents, so content read from a
  file cannot forge a workflow command), `actions_safe` for any other printed text (wrapped in
  `::stop-commands::` when a line of it would read as a command), and the step summary
  (`$GITHUB_STEP_SUMMARY`), cut to GitHub's 1 MiB limit with a line saying what was cut.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from harness._errors import WriteRefused

__all__ = [
    "CI_GENERIC",
    "CI_OPT_OUT",
    "CI_SERVICES",
    "CI_VARIABLES",
    "STEP_SUMMARY_LIMIT",
    "CiRun",
    "actions_safe",
    "annotation",
    "bounded_summary",
    "detect_ci",
    "on_github_actions",
    "reads_as_command",
    "refuse_writes_under_ci",
    "write_step_summary",
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


# -- GitHub Actions -----------------------------------------------------------------------------

# GitHub's cap on one step's summary; past it the summary is dropped (with an error) in the job.
STEP_SUMMARY_LIMIT: Final = 1024 * 1024
_COMMAND_START: Final = ("::", "##[")


def on_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    message: str, *, file: str | None = None, line: int | None = None, title: str | None = None
) -> str:
    """An `::error` workflow command, with its message and properties escaped."""
    properties = []
    if file is not None:
        properties.append(f"file={_property(file)}")
    if line is not None:
        properties.append(f"line={line}")
    if title is not None:
        properties.append(f"title={_property(title)}")
    head = "::error " + ",".join(properties) if properties else "::error"
    return f"{head}::{_data(message)}"


def reads_as_command(text: str) -> bool:
    """Whether a line of `text` would be taken for a workflow command (`::...` or `##[...`)."""
    return any(line.lstrip().startswith(_COMMAND_START) for line in text.splitlines())


def actions_safe(text: str, *, github: bool | None = None) -> str:
    """`text` as it may be printed to a GitHub Actions log: as it is, unless one of its lines
    would be read as a workflow command; then it is wrapped in `::stop-commands::<token>` and
    `::<token>::`, as GitHub documents for untrusted output. The token is the SHA-256 of the text,
    so output stays deterministic and the text cannot hold its own token. Outside Actions (or
    with `github=False`) the text is unchanged."""
    if not (on_github_actions() if github is None else github) or not reads_as_command(text):
        return text
    token = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"::stop-commands::{token}\n{text}\n::{token}::"


def bounded_summary(markdown: str, room: int = STEP_SUMMARY_LIMIT) -> str:
    """`markdown` cut to fit `room` bytes (UTF-8), with a last line saying what was cut."""
    data = markdown.encode("utf-8", "surrogatepass")
    if len(data) <= room:
        return markdown
    note_room = 200  # the closing fence and the note below
    if room < note_room:
        return ""  # the summary is full: the job log has it all
    kept = data[: room - note_room].decode("utf-8", "ignore")
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else ""
    cut = len(data) - len(kept.encode("utf-8", "surrogatepass"))
    fence = "\n```\n" if kept.count("```") % 2 else ""  # close a code block cut in the middle
    return (
        f"{kept}{fence}\n> **Cut:** {cut:,} more bytes did not fit GitHub's"
        f" {STEP_SUMMARY_LIMIT // 1024:,} KiB step summary limit; the full reports are in the job"
        " log.\n"
    )


def write_step_summary(markdown: str) -> bool:
    """Append `markdown` to the GitHub step summary, cut to what fits GitHub's 1 MiB limit (the
    summary may already hold other output); False when there is none to write to."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path or not on_github_actions():
        return False
    try:
        used = os.stat(path).st_size
    except OSError:
        used = 0
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    text = bounded_summary(text, max(STEP_SUMMARY_LIMIT - used, 0))
    if text:
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
    return True
