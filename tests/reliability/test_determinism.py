"""The harness itself is deterministic: the same input gives the same verdicts, whatever the seed.

`harness check` is run in fresh interpreters (so `PYTHONHASHSEED` differs too) with the same and
with different `--seed`s; the plugin's collected scenarios run under pytest-randomly with
different seeds. A drifting pin is planted so the verdicts mix passes and failures.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.inner import inner_pytest
from tests.support.paths import SHIPPED, copy_project

from .conftest import tree

VERDICT_COLUMNS = ("scenario", "expect", "replay", "rebuild", "pin", "verdict")


def plant_drift(root: Path) -> None:
    """Swap the first two tools of the default pin: every scenario of that class drifts."""
    pin = root / "snapshots/headers/default/tool-schemas.expected.json"
    data = json.loads(pin.read_bytes())
    data["initial"][0], data["initial"][1] = data["initial"][1], data["initial"][0]
    pin.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def check_in_subprocess(root: Path, seed: int, hash_seed: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    command = [sys.executable, "-m", "harness.cli", "check", "fixtures", "--shuffle", "4"]
    return subprocess.Popen(
        [*command, "--seed", str(seed)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def table(stdout: str) -> dict[str, dict[str, str]]:
    lines = stdout.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    assert header[0] == "scenario" and header[-1] == "verdict", lines[0]
    rows = {}
    for line in lines[2:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(header), line
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


@pytest.mark.slow
def test_harness_check_gives_the_same_verdicts_every_run_and_every_seed(tmp_path: Path) -> None:
    root = copy_project(tmp_path)
    plant_drift(root)  # so the verdicts mix "ok", "DRIFT" and "caught (expected unstable)"
    before = tree(root)
    runs = [(1, 0), (1, 1), (987654, 2)]  # (--seed, PYTHONHASHSEED), run in parallel
    processes = [check_in_subprocess(root, seed, hash_seed) for seed, hash_seed in runs]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        results.append((process.returncode, out.decode(), err.decode()))

    assert [code for code, _, _ in results] == [1, 1, 1], results[0]
    assert all(err == "" for _, _, err in results), results
    # the same seed: byte-identical output (table, findings, drift reports)
    assert results[0][1] == results[1][1]
    # another seed: the same verdict for every scenario
    verdicts = [
        {name: [row[c] for c in VERDICT_COLUMNS] for name, row in table(out).items()}
        for _, out, _ in results
    ]
    assert sorted(verdicts[0]) == SHIPPED
    assert verdicts[2] == verdicts[1] == verdicts[0]
    final = {name: v[-1] for name, v in verdicts[0].items()}
    assert final["text-turn"] == final["resume"] == "DRIFT"
    assert final["multi-step"] == "ok" and final["racy-listener"].startswith("caught")
    assert tree(root) == before  # check never writes


OUTCOME = re.compile(r"^(fixtures/\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)", re.M)


def verdicts_under(pytester: pytest.Pytester, seed: int) -> tuple[dict[str, str], list[str]]:
    result = inner_pytest(
        pytester, "-v", "-p", "randomly", f"--randomly-seed={seed}", "--harness-shuffle=4"
    )
    out = result.stdout.str()
    assert f"seed {seed} (from pytest-randomly)" in out
    summary = out[out.index("= header drift =") :].splitlines()
    drift_lines = sorted(line for line in summary if "drift" in line and "seed" not in line)
    return dict(OUTCOME.findall(out)), drift_lines


@pytest.mark.slow
def test_collected_scenarios_get_the_same_verdicts_under_any_randomly_seed(
    pytester: pytest.Pytester,
) -> None:
    copy_project(pytester.path)
    plant_drift(pytester.path)
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")

    first, drift_first = verdicts_under(pytester, 1)
    again, drift_again = verdicts_under(pytester, 1)
    other, drift_other = verdicts_under(pytester, 2)

    assert len(first) == len(SHIPPED)
    assert "FAILED" in first.values() and "PASSED" in first.values()
    assert again == first and other == first
    assert drift_again == drift_first
    assert len(drift_other) == len(drift_first)
