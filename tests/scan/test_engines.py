"""One judge, two engines: DuckDB (embedded) and Dask (a real `dask.distributed` cluster, local
processes or a scheduler given by address) print byte-identical JSON on the same input; a batch
cut anywhere between sessions, or handed over in any row order, is judged the same."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from harness.scan import _engines
from harness.scan._engines import judge_batch
from harness.scan._read import Options, Tally, read_file
from tests.scan.traces import START, run, session_lines, write_lines
from tests.support.paths import EXAMPLES


def mixed_input(folder: Path) -> list[str]:
    """Several files, sessions spread across them, breaks and stable sessions, grouped ones."""

    def reorder(turn: int, body: dict[str, Any]) -> None:
        if turn >= 3:
            body["tools"] = list(reversed(body["tools"]))

    one = session_lines("a", turns=5) + session_lines("b", edit=reorder, start=START + 500)
    two = session_lines("c", turns=3) + session_lines(None, edit=reorder, start=START + 900)
    spread = session_lines("d", turns=6, edit=reorder, start=START + 1300)
    return [
        str(write_lines(folder / "one.jsonl", one + spread[:3])),
        str(write_lines(folder / "two.jsonl", two + spread[3:])),
        str(EXAMPLES / "traces" / "otel.json"),
        str(EXAMPLES / "traces" / "langfuse.json"),
    ]


@pytest.mark.slow
def test_duckdb_and_a_local_dask_cluster_print_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = mixed_input(tmp_path)
    code, duck, _ = run(capsys, *paths, "--format", "json")
    assert code == 1 and '"tools_changed"' in duck
    code_dask, dask, err = run(
        capsys, *paths, "--format", "json", "--engine", "dask", "--workers", "2"
    )
    assert err == ""
    assert (code_dask, dask) == (code, duck)


@pytest.mark.slow
def test_dask_by_scheduler_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dask.distributed import LocalCluster

    paths = mixed_input(tmp_path)
    _, duck, _ = run(capsys, *paths, "--format", "json")
    with LocalCluster(
        n_workers=1, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        _, dask, _ = run(
            capsys, *paths, "--format", "json", "--engine", "dask", "--scheduler", address
        )
    assert dask == duck


def test_sessions_cut_across_duckdb_fetches_are_judged_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = mixed_input(tmp_path)
    _, whole, _ = run(capsys, *paths, "--format", "json")
    monkeypatch.setattr(_engines, "_ROWS", 3)  # every fetch ends inside a session
    _, cut, _ = run(capsys, *paths, "--format", "json")
    assert cut == whole


def test_the_judge_is_a_function_of_the_rows_not_their_order(tmp_path: Path) -> None:
    import pyarrow as pa

    paths = mixed_input(tmp_path)
    batches = [
        batch
        for number, path in enumerate(paths)
        for batch in read_file(Path(path), number, Options(), Tally())
    ]
    table = pa.Table.from_batches(batches)
    order = list(range(table.num_rows))
    random.Random(3).shuffle(order)
    first = judge_batch(table)
    again = judge_batch(table.take(order))
    assert first.findings.to_pylist() == again.findings.to_pylist()
    assert (
        first.sessions.sort_by("session").to_pylist()
        == again.sessions.sort_by("session").to_pylist()
    )
    assert first.findings.num_rows >= 3


def test_duckdb_out_of_memory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = mixed_input(tmp_path)
    monkeypatch.setattr(_engines, "_MEMORY", "1MB")  # less than DuckDB can sort anything in
    code, out, err = run(capsys, *paths, "--format", "json")
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert "DuckDB ran out of the 1MB" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import dask
    import dask.distributed

    # distributed's defaults in dask's configuration before `set`: entered without them, `set`
    # records the whole `distributed` key as its own and deletes it on exit, with the defaults
    # the scan's import put there, and every later Dask test of the process fails with
    # `KeyError: 'distributed'` (seen in CI, by test order).
    paths = mixed_input(tmp_path)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err = run(capsys, *paths, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "cannot reach a Dask scheduler there" in err
    assert "comm" in dask.config.get("distributed")  # the defaults are still there
