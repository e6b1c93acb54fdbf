"""`harness init` on odd folders (defect 12 of issue 24).

Before: an unreadable `pyproject.toml` or `tox.ini` gave a traceback and exit 1; when the second
file could not be written, the message said "nothing was changed" after `pytest.ini` had been
written; and a project path holding a space was printed unquoted in the "next:" commands, which
then ran on two paths. Now an unreadable configuration is one line and exit 2, a failed write
takes back what the run wrote (all or nothing, so the message is true), and every path in a
command is quoted as the shell needs it.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from .conftest import Cli, one_line


def files_of(project: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize(
    ("name", "text"),
    [("pyproject.toml", '[project]\nname = "acme"\n'), ("tox.ini", "[tox]\nenvlist = py311\n")],
)
def test_an_unreadable_configuration_is_one_line_and_exit_2(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    config = tmp_path / name
    config.write_text(text)
    if os.geteuid() != 0:
        config.chmod(0)
    else:  # root reads every file: fail the read as a permission problem would
        real = Path.read_text

        def read_text(self: Path, *args: object, **kwargs: object) -> str:
            if self == config:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Path, "read_text", read_text)
    code, out, err = cli("init", str(tmp_path))
    assert code == 2, out + err
    line = one_line(err)
    assert name in line and "cannot be read" in line
    assert "Traceback" not in out + err
    assert not (tmp_path / "tests").exists() and not (tmp_path / "pytest.ini").exists()


def test_a_write_that_fails_halfway_takes_back_what_was_written(tmp_path: Path, cli: Cli) -> None:
    """`tests` is a file here, so `tests/conftest.py` cannot be written after `pytest.ini` was."""
    (tmp_path / "tests").write_text("not a folder\n")
    before = files_of(tmp_path)
    code, out, err = cli("init", str(tmp_path))
    assert code == 2, out + err
    line = one_line(err)
    assert "tests/conftest.py" in line and "nothing was changed" in line
    assert files_of(tmp_path) == before  # pytest.ini was taken back: the message is true
    assert "wrote" not in out.replace("would write", "")


def test_a_project_path_with_spaces_is_quoted_in_the_next_commands(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "my agent's project"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("init", str(project.name))
    assert code == 0
    commands = out.split("\nnext:\n", 1)[1].splitlines()
    proof, record, check = (line.strip().split("  #")[0] for line in commands)
    assert shlex.split(proof) == ["pytest", f"{project.name}/tests/test_prompt_cache.py"]
    assert shlex.split(record) == ["pytest", "--harness-mode=record", project.name]
    assert shlex.split(check) == ["harness", "check", project.name]


def test_a_plain_path_is_printed_as_it_is(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The near miss: nothing to quote, nothing quoted."""
    (tmp_path / "acme").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("init", "acme")
    assert code == 0
    assert "  pytest acme/tests/test_prompt_cache.py  #" in out
    assert "  harness check acme  #" in out
