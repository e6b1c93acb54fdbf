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


def test_each_request_is_split_once_and_each_link_judged_once(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit takes the rules' split of each request and their verdict on each link: only a
    link that broke is judged again, for the audit's own report."""
    from harness.cache import _verdict
    from harness.providers import _registry

    record_cassette(
        project / "fixtures" / "cassettes" / "test_d.json",
        claude(1100, turns=1),
        claude(1200, turns=2),  # the system prompt grew: the prefix breaks
    )
    splits: Counter[int] = Counter()
    judged: Counter[tuple[int, int]] = Counter()
    split, judge = _registry.split_by_provider, _verdict.judge

    def counted_split(body: Any, *args: Any) -> Any:
        splits[id(body)] += 1
        return split(body, *args)

    def counted_judge(a: Any, b: Any, **kwargs: Any) -> Any:
        judged[(a.number, b.number)] += 1
        return judge(a, b, **kwargs)

    for command in COMMANDS:
        resolve(command.run)
    for module in list(sys.modules.values()):
        for name, value in list(vars(module).items()) if module is not None else ():
            if value is split and module is not _registry:
                monkeypatch.setattr(module, name, counted_split)
            if value is judge and module is not _verdict:
                monkeypatch.setattr(module, name, counted_judge)
    assert main(["check", "--shuffle", "0"]) == 1
    assert "test_d.json: 1 finding(s) in 2 requests" in capsys.readouterr().out
    assert len(splits) == 11 and set(splits.values()) == {1}  # 3 + 3 + 3 + 2 requests
    # 2 + 2 + 2 + 1 links judged for the rules; the one that broke, again for the audit
    assert sum(judged.values()) == 8 and judged[(1, 2)] == 5


def test_the_audit_says_what_it_says_alone(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The near miss of sharing the rules' verdicts: the audit's report of a broken cassette is
    word for word the one it makes judging every link itself."""
    from harness.capture import _audit

    cassettes = project / "fixtures" / "cassettes"
    record_cassette(
        cassettes / "test_d.json",
        claude(1100, turns=1),
        claude(1100, turns=2),
        claude(1200, turns=3),  # the system grew: a break
        claude(1200, turns=4),
        claude(1200, turns=5, model="claude-opus-4-5"),  # the model changed: another
    )
    code = main(["check", "--shuffle", "0", "--format", "json"])
    shared = capsys.readouterr().out
    alone = _audit.audit_cassette

    def judging_every_link(path: Any, redaction: Any = None, judged: Any = None) -> Any:
        return alone(path, redaction)

    monkeypatch.setattr("harness.cli._check.audit_cassette", judging_every_link)
    assert main(["check", "--shuffle", "0", "--format", "json"]) == code == 1
    assert capsys.readouterr().out == shared
    assert shared.count("system_changed") >= 1 and "model_changed" in shared
