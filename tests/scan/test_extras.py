"""Without the `scan` extra (or the `dask` extra for `--engine dask`), `harness scan` says which
extra to install, in one line, exit 2; `harness --help` and every other command need neither."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cli import main
from tests.scan.traces import run, session_lines, write_lines


@pytest.mark.parametrize(
    ("missing", "args", "extra"),
    [
        ("duckdb", (), "scan"),
        ("pyarrow", (), "scan"),
        ("dask", ("--engine", "dask"), "dask"),
    ],
)
def test_a_missing_library_is_one_line_naming_the_extra(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    missing: str,
    args: tuple[str, ...],
    extra: str,
) -> None:
    path = write_lines(tmp_path / "t.jsonl", session_lines("s"))
    for name in list(sys.modules):
        if name == missing or name.startswith(missing + "."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)  # import raises ImportError
    code, out, err = run(capsys, str(path), *args)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert f"pip install 'prompt-cache-harness[{extra}]'" in err


def test_the_help_needs_no_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("duckdb", "pyarrow", "numpy"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(SystemExit) as stopped:
        main(["scan", "--help"])
    assert stopped.value.code == 0
    assert "--session-key" in capsys.readouterr().out
