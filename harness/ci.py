"""Modes, CI detection, and the one writer of GitHub Actions output.

- `Mode`: what a run may do with recordings. `check` replays and compares and never writes;
  `record` records anew; `update` rewrites what changed; `update-new-only` records only what is
  missing. The writing modes are refused under CI.
- `detect_ci()`: whether this is a CI run, and which variable said so. CI never writes.
- `GitHub`: annotations (`::error ...`, escaped as GitHub documents, so content read from a file
  cannot forge a workflow command) and the step summary (`$GITHUB_STEP_SUMMARY`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from harness.errors import UsageError

__all__ = [
    "CI_VARIABLES",
    "MODES",
    "WRITING_MODES",
    "CiRun",
    "Mode",
    "annotation",
    "detect_ci",
    "on_github_actions",
    "write_step_summary",
    "writes_allowed",
]


class Mode(StrEnum):
    CHECK = "check"
    RECORD = "record"
    UPDATE = "update"
    UPDATE_NEW_ONLY = "update-new-only"

    @property
    def writes(self) -> bool:
        return self is not Mode.CHECK

    @classmethod
    def parse(cls, value: str, *, what: str = "mode") -> Mode:
        """The mode named `value`; a UsageError listing the valid ones otherwise."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(mode.value for mode in cls)
            raise UsageError(f"unknown {what} {value!r}; expected one of {valid}") from None


MODES: Final = tuple(mode.value for mode in Mode)
WRITING_MODES: Final = tuple(mode.value for mode in Mode if mode.writes)

CI_VARIABLES: Final = (
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "CIRCLECI",
    "TF_BUILD",
    "JENKINS_URL",
)
_NOT_SET: Final = ("0", "false", "no")


@dataclass(frozen=True)
class CiRun:
    """The variable that made this a CI run, and its value."""

    variable: str
    value: str

    def describe(self) -> str:
        return f"{self.variable}={self.value}"


def detect_ci(environ: Mapping[str, str] | None = None) -> CiRun | None:
    """The first CI variable set (and not "0", "false" or "no"), or None outside CI."""
    env = os.environ if environ is None else environ
    for name in CI_VARIABLES:
        value = env.get(name)
        if value and value.lower() not in _NOT_SET:
            return CiRun(name, value)
    return None


def writes_allowed() -> bool:
    """CI never writes: any of the usual CI variables set forbids it."""
    return detect_ci() is None


# -- GitHub Actions -----------------------------------------------------------------------------


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


def write_step_summary(markdown: str) -> bool:
    """Append `markdown` to the GitHub step summary; False when there is none to write to."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path or not on_github_actions():
        return False
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return True
