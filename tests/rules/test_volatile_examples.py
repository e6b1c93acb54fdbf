"""`volatile-in-prefix` and the examples of a format (issue 35): a value is an example only where
every place it stands follows a cue ("e.g.", "like ", "for example"...) within 24 characters;
stated once as the current value it fires, whichever comes first. A macOS temporary folder
(`/var/folders/...`) is generated whatever its names; a bare temporary path with no generated
name stays silent. Each through `harness lint` on an Anthropic body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main

NOW = "2026-12-03T10:15:00Z"


def volatile(tmp_path: Path, capsys: pytest.CaptureFixture[str], system: str) -> list[str]:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 9,
        "system": system,
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"url": "https://api.anthropic.com/v1/messages", "body": body}))
    main(["lint", str(path), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return [f["message"] for f in found if f["rule"] == "volatile-in-prefix"]


@pytest.mark.parametrize(
    "system",
    [
        f"Now: {NOW}. Timestamps look like {NOW}.",  # the value first, then as an example
        f"Timestamps look like {NOW}. Now: {NOW}.",
        # between two examples: every place is read, not the first and the last
        f"Timestamps look like {NOW}. Now: {NOW}. Another example: {NOW}.",
    ],
)
def test_a_value_stated_once_outside_an_example_fires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], system: str
) -> None:
    found = volatile(tmp_path, capsys, system)
    assert found and f'looks like a timestamp: "{NOW}"' in found[0]


def test_a_value_given_only_as_examples_stays_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert volatile(tmp_path, capsys, f"Timestamps, e.g. {NOW} or e.g. {NOW}.") == []
    assert volatile(tmp_path, capsys, "Times like 10:15:00 are local.") == []
    assert volatile(tmp_path, capsys, "Started at 10:15:00.")  # near miss: no cue


def test_a_cue_counts_within_24_characters_before_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "e.g " then filler: the cue starts 24 characters before the value, then 25
    assert volatile(tmp_path, capsys, "e.g " + "x" * 19 + " " + NOW) == []
    assert volatile(tmp_path, capsys, "e.g " + "x" * 20 + " " + NOW)


def test_a_macos_temporary_folder_is_generated_whatever_its_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = volatile(tmp_path, capsys, "Scratch files go in /var/folders/ab/cd/T/ during a run.")
    assert found and 'looks like a temporary path: "/var/folders/ab/cd/T/"' in found[0]
    # near miss: the same names under /tmp are no generated name
    assert volatile(tmp_path, capsys, "Scratch files go in /tmp/ab/cd/ during a run.") == []
