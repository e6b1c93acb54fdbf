"""A recording's files grow with its steps, so they are read up to their own limit (256 MiB, a
100,000-step recording is about 100 MB of log), and the recorder refuses, in one line and before
writing anything, a recording the reader would refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness._shared._files
from bench import transcript
from harness._shared._errors import FixtureError
from harness._shared._paths import LOG_FILE, SCENARIO_FILE
from harness.scenarios._formats import LogFile, load_fixture


def _record(root: Path, steps: int = 12) -> Path:
    return transcript.record(transcript.Shape(steps, 10, 5, 500), root)


def test_a_log_over_the_shared_limit_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _record(tmp_path, steps=60)
    limit = (folder / SCENARIO_FILE).stat().st_size + 1
    assert (folder / LOG_FILE).stat().st_size > limit
    # the shared limit below this log (as 64 MiB is below a 100,000-step log): it still loads
    monkeypatch.setattr(harness._shared._files, "MAX_FILE_BYTES", limit)
    assert load_fixture(folder).log is not None


def test_the_recorder_refuses_a_log_the_reader_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _record(tmp_path / "small", steps=2)
    limit = (small / LOG_FILE).stat().st_size + 100  # a 2-step log fits, a 12-step one does not
    monkeypatch.setattr(LogFile, "MAX_BYTES", limit)
    assert load_fixture(_record(tmp_path / "again", steps=2)).log is not None  # the near miss
    with pytest.raises(
        FixtureError, match=rf"log\.json: would be [\d,]+ bytes, over the {limit:,}"
    ):
        _record(tmp_path / "large")
    assert not (tmp_path / "large" / "fixtures" / "bench-12-steps" / LOG_FILE).exists()
