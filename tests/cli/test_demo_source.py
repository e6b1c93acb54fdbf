"""Which scenarios each command reads: `harness demo` the shipped ones (and says which copy),
every other command the project's own `fixtures/` or its PATHs, never the shipped ones.

A gate that falls back to the demo's scenarios when the project has none passes on the demo's
recordings: a false green. `tests/project/test_wheel.py` repeats the empty-folder cases from the
wheel.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness._shared._errors import FixtureError
from harness.cli import main
from harness.scenarios._demo import demo_source
from tests.support.paths import ROOT, SHIPPED


def test_demo_in_an_empty_folder_reads_the_shipped_scenarios_and_says_where_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--shuffle", "2"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    # an editable install (this suite's): the repository's copy, named as such
    assert first == (
        f"harness demo: {len(SHIPPED)} shipped scenarios from {ROOT / 'fixtures'}, "
        "the repository's copy (an editable install)"
    )
    assert list(tmp_path.iterdir()) == [], "the demo writes nothing"


def test_demo_ignores_a_fixtures_folder_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fixtures").mkdir()  # the project's recordings (none yet) are not the demo
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--shuffle", "0"]) == 0
    out = capsys.readouterr().out
    assert f"shipped scenarios from {ROOT / 'fixtures'}" in out
    assert all(name in out for name in SHIPPED)


@pytest.mark.parametrize(
    "command",
    [["check"], ["replay"], ["refresh"], ["show"], ["record", SHIPPED[0]]],
    ids=lambda command: command[0],
)
def test_other_commands_never_fall_back_to_the_shipped_scenarios(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shipped = {p: p.read_bytes() for p in (ROOT / "fixtures").rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    out, err = capsys.readouterr()
    assert not any(name in out for name in SHIPPED), "nothing of the demo was read"
    assert err.count("\n") == 1
    if command[0] == "record":  # a name is looked up under the project's fixtures/ only
        assert f"{SHIPPED[0]}: " in err
    else:
        assert err.startswith(f"harness {command[0]}: {tmp_path / 'fixtures'}: does not exist")
        assert "pass the recordings' folder; harness demo runs the shipped scenarios" in err
    assert {p: p.read_bytes() for p in (ROOT / "fixtures").rglob("*") if p.is_file()} == shipped


def test_without_a_path_commands_read_the_projects_own_fixtures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = SHIPPED[0]
    shutil.copytree(ROOT / "fixtures" / name, tmp_path / "fixtures" / name)
    shutil.copytree(ROOT / "snapshots", tmp_path / "snapshots")
    monkeypatch.chdir(tmp_path)
    assert main(["replay"]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == [name]
    assert main(["check", "--shuffle", "2"]) == 0
    out = capsys.readouterr().out
    assert name in out and not any(other in out for other in SHIPPED if other != name)


def test_demo_source_prefers_the_packaged_copy(tmp_path: Path) -> None:
    packaged = tmp_path / "site-packages/harness/_demo/fixtures"
    packaged.mkdir(parents=True)
    source = demo_source(packaged=packaged, repository=ROOT)
    assert source.folder == packaged
    assert source.origin.startswith("the copy packaged with prompt-cache-harness")


def test_a_folder_merely_called_fixtures_beside_the_package_is_not_the_demo(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site-packages"
    (site / "fixtures").mkdir(parents=True)  # another distribution's, or a stray folder
    (site / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
    with pytest.raises(FixtureError) as raised:
        demo_source(packaged=site / "harness/_demo/fixtures", repository=site)
    message = str(raised.value)
    assert "\n" not in message
    assert "has no demo scenarios" in message and "harness demo PATH" in message
