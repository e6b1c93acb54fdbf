"""The scan benchmark's code paths at toy sizes, so `bench/scan.py` cannot rot: the synthetic
traces hold the breaks they say they planted (in both tiers), and the whole run renders its
table. Structure, never timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scan as bench_scan
from bench.scan_data import write_digests, write_jsonl
from tests.scan.traces import run


def test_both_tiers_find_exactly_the_planted_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = write_jsonl(tmp_path / "b.jsonl", 400)
    assert write_digests(tmp_path / "d.parquet", 400) == planted > 0
    for name in ("b.jsonl", "d.parquet"):
        code, out, _ = run(capsys, str(tmp_path / name), "--format", "json")
        totals = json.loads(out)["totals"]
        assert (code, totals["errors"], totals["requests"]) == (1, planted, 400)


# One run for the whole table and the baseline's rows: each run starts a Dask cluster and a
# dozen processes (two runs took 130 s of one CI worker's wall clock).
@pytest.mark.slow
def test_a_toy_run_renders_its_table_and_a_baseline_tree_runs_in_turns_with_this_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    here = str(Path(bench_scan.__file__).resolve().parents[1])
    assert bench_scan.main(["--sizes", "200,400", "--repeat", "1", "--baseline", here]) == 0
    out = capsys.readouterr().out
    # at the smaller size: both floors, both tiers here and on the baseline tree, Dask
    assert out.count("\n| 200 |") == 7 and out.count("\n| 400 |") == 4
    assert "the digest tier takes" in out and "peak RSS" in out
    assert "each request past 200 costs the byte tier" in out
    assert "the byte tier reads" in out and "the baseline tree" in out
