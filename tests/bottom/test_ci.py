"""CI detection, modes, and the GitHub output every command and the plugin share."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import RecordMode as Mode
from harness._shared._actions import annotation, write_step_summary
from harness._shared._ci import detect_ci
from harness._shared._errors import UsageError


def test_detection_names_the_variable_it_found() -> None:
    found = detect_ci({"GITLAB_CI": "true"})
    assert found is not None and found.describe() == "GITLAB_CI=true"
    assert detect_ci({}) is None
    assert detect_ci({"CI": "false"}) is None and detect_ci({"CI": "0"}) is None


def test_an_unknown_mode_lists_the_valid_ones() -> None:
    assert Mode.parse("update-new-only") is Mode.UPDATE_NEW_ONLY
    assert Mode.RECORD.writes and not Mode.CHECK.writes
    with pytest.raises(UsageError, match="expected one of check, record, update, update-new-only"):
        Mode.parse("replay")


def test_an_annotation_cannot_be_split_or_forge_a_command() -> None:
    line = annotation(
        "drift\n::warning file=x::forged 100%", file="a,b:c.py", line=3, title="header drift"
    )
    assert "\n" not in line
    assert line == (
        "::error file=a%2Cb%3Ac.py,line=3,title=header drift"
        "::drift%0A::warning file=x::forged 100%25"
    )


def test_the_step_summary_is_written_only_under_github_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert not write_step_summary("## one") and not summary.exists()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert write_step_summary("## one") and write_step_summary("## two\n")
    assert summary.read_text() == "## one\n## two\n"
