"""A digest table whose sessions already stand together in time order is judged as it streams,
with no sort (`harness.scan._grouped`): it must print exactly what the sorted query prints, and
any table out of that order must go to the sorted query."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.scan_data import write_digests
from harness.scan import _engines
from harness.scan._extras import pyarrow, pyarrow_parquet
from harness.scan._grouped import grouped
from tests.scan.traces import run

ROWS = 400  # 20 sessions of 20 requests, 4 planted breaks or so


def original(tmp_path: Path) -> Any:
    write_digests(tmp_path / "d.parquet", ROWS)
    return pyarrow_parquet().read_table(tmp_path / "d.parquet")


def written(table: Any, path: Path) -> Path:
    pyarrow_parquet().write_table(table, path)
    return path


def is_grouped(path: Path) -> bool:
    return grouped([(path, 0, frozenset(pyarrow_parquet().read_schema(path).names))])


def scanned(capsys: pytest.CaptureFixture[str], path: Path) -> Any:
    """The scan's JSON, each finding without its `source` (the file and row: another table)."""
    code, out, _ = run(capsys, str(path), "--format", "json")
    assert code == 1  # the planted breaks
    found = json.loads(out)
    for finding in found["findings"]:
        finding.pop("source")
    return found


def _rows(order: list[int]) -> Callable[[Any], Any]:
    return lambda table: table.take(order)


def sessions_reversed(table: Any) -> Any:  # still grouped: the order between sessions is free
    return table.take(np.arange(ROWS).reshape(-1, 20)[::-1].ravel())


def session_comes_back(table: Any) -> Any:  # session 0's last ten requests at the very end
    order = [*range(10), *range(20, ROWS), *range(10, 20)]
    return table.take(order)


def rows_shuffled(table: Any) -> Any:
    return table.take(np.random.default_rng(3).permutation(ROWS))


def two_requests_swapped(table: Any) -> Any:  # within one session: later time first
    order = list(range(ROWS))
    order[5], order[6] = order[6], order[5]
    return table.take(order)


def tie_broken_backwards(table: Any) -> Any:  # equal times, the higher seq first
    time = table["time"].to_numpy().copy()
    time[6] = time[5]
    table = table.set_column(table.schema.get_field_index("time"), "time", pyarrow().array(time))
    return two_requests_swapped(table)


def null_time_first(table: Any) -> Any:  # a request with no time before timed ones
    time = table["time"].to_pylist()
    time[0] = None
    order = [0, *range(1, ROWS)]
    table = table.set_column(
        table.schema.get_field_index("time"), "time", pyarrow().array(time, pyarrow().float64())
    )
    return table.take(order)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (sessions_reversed, True),
        (session_comes_back, False),
        (rows_shuffled, False),
        (two_requests_swapped, False),
        (tie_broken_backwards, False),
        (null_time_first, False),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_only_a_table_in_the_sorted_querys_order_streams_unsorted(
    tmp_path: Path, edit: Callable[[Any], Any], expected: bool
) -> None:
    table = original(tmp_path)
    assert is_grouped(tmp_path / "d.parquet")  # the near miss: the bench's own table streams
    assert is_grouped(written(edit(table), tmp_path / "e.parquet")) is expected


@pytest.mark.parametrize(
    "edit", [sessions_reversed, session_comes_back, rows_shuffled], ids=lambda f: f.__name__
)
def test_a_streamed_table_prints_what_the_sorted_query_prints(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[Any], Any],
) -> None:
    monkeypatch.setattr(_engines, "_ROWS", 50)  # many fetches: a session can straddle two
    table = original(tmp_path)
    sorted_first = scanned(capsys, tmp_path / "d.parquet")
    assert scanned(capsys, written(edit(table), tmp_path / "e.parquet")) == sorted_first
