"""`harness check` reads each cassette once and analyses each request once.

The audit (format, redaction, prefix chain), the cache rules and the cost model's agreement all
look at the same cassettes; they share one read of each file and one analysis of each request.
Counted through the functions that do the work, on a project of three cassettes.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness._shared import _files
from harness.cache import _analysis
from harness.cli import main
from harness.cli._main import COMMANDS, resolve
from tests.support.bodies import claude, record_cassette


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cassettes = tmp_path / "fixtures" / "cassettes"
    for name in ("test_a", "test_b", "test_c"):
        record_cassette(cassettes / f"{name}.json", *(claude(1100, turns=n) for n in (1, 2, 3)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_each_cassette_is_read_once_and_each_request_analysed_once(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reads: Counter[str] = Counter()
    analysed: Counter[int] = Counter()
    read_checked, analyse = _files.read_checked, _analysis.analyse

    def counted_read(path: Path, *args: Any, **kwargs: Any) -> bytes:
        reads[Path(path).name] += 1
        return read_checked(path, *args, **kwargs)

    def counted_analyse(request: _analysis.LintRequest) -> object:
        analysed[id(request)] += 1
        return analyse(request)

    for command in COMMANDS:  # the CLI imports a command's modules when it runs: import them
        resolve(command.run)  # now, or they would keep the counting functions for good
    for module in ("harness._shared._files", "harness.capture._cassette"):
        monkeypatch.setattr(f"{module}.read_checked", counted_read)
    for module in list(sys.modules.values()):  # every module that holds `analyse`, by any name
        for name, value in list(vars(module).items()) if module is not None else ():
            if value is analyse and module is not _analysis:
                monkeypatch.setattr(module, name, counted_analyse)
    assert main(["check", "--shuffle", "0"]) == 0, capsys.readouterr().out
    assert reads == {"test_a.json": 1, "test_b.json": 1, "test_c.json": 1}
    assert len(analysed) == 9 and set(analysed.values()) == {1}
    assert "3 cassettes, no finding" in capsys.readouterr().out


def test_what_is_shared_still_finds_a_broken_cassette(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The near miss: sharing one read does not skip a cassette's audit or its rules."""
    record_cassette(
        project / "fixtures" / "cassettes" / "test_d.json",
        claude(1100, turns=1),
        claude(1200, turns=2),  # the system prompt grew: the prefix breaks
    )
    code = main(["check", "--shuffle", "0"])
    out = capsys.readouterr().out
    assert code == 1
    assert "test_d.json: 1 finding(s) in 2 requests" in out
    assert "1 of 4 cassettes with findings" in out
