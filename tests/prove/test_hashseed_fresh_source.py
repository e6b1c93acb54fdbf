"""A hash-seed proof depends on the seeds alone, never on what `__pycache__` holds.

A set literal of constants is a frozenset in the compiled code, and a `.pyc` keeps it in the order
of the process that compiled it: loaded under another seed, the set can iterate as under the
compiling one. With a `.pyc` written by a process of one seed (as the test run's own import
writes it), a racy build passed `hash_seeds=(0, 1)`: both children read the same cached order.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness import HeaderDrift, prove_stable

NAMES = '{"github", "filesystem", "jira", "slack"}'
SOURCE = f"""
SERVERS = {NAMES}


def _body(names):
    tools = [{{"name": n, "description": n, "input_schema": {{}}}} for n in names]
    return {{"model": "claude-test", "max_tokens": 256, "system": "s", "tools": tools,
            "messages": [{{"role": "user", "content": "hi"}}]}}


def build(order):
    return _body(SERVERS)  # set order: the race


def build_sorted(order):
    return _body(sorted(SERVERS))  # the fix
"""
MODULE = "hashseed_servers"


def python(folder: Path, seed: int, code: str) -> str:
    env = {"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def cached_by_a_seed_that_hides_the_race(folder: Path) -> int:
    """Write the module's `.pyc` compiled under a seed with which seeds 0 and 1, reading it, see
    one order (fresh from source they see two); the compiling seed."""
    fresh = [python(folder, seed, f"print(list({NAMES}))") for seed in (0, 1)]
    assert fresh[0] != fresh[1]  # the race is there for a fresh checkout
    read = f"import {MODULE}; print(list({MODULE}.SERVERS))"
    for seed in range(64):
        python(folder, seed, f"import py_compile; py_compile.compile('{MODULE}.py', doraise=True)")
        if python(folder, 0, read) == python(folder, 1, read):
            return seed
    raise AssertionError("no compiling seed hides the race")  # pragma: no cover


@pytest.fixture
def cached_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    cached_by_a_seed_that_hides_the_race(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return tmp_path


@pytest.mark.slow
def test_a_set_race_fails_across_hash_seeds_whatever_the_pycache_holds(
    cached_project: Path,
) -> None:
    cached = sorted((cached_project / "__pycache__").glob(f"{MODULE}.*.pyc"))
    assert cached, "the stale bytecode the children must not read"
    before = cached[0].read_bytes()
    with pytest.raises(HeaderDrift) as caught:
        prove_stable(f"{MODULE}:build", ["a", "b"], permutations=2, hash_seeds=(0, 1))
    assert caught.value.hash_seeds == (0, 1)
    assert caught.value.report is not None and caught.value.report.block == "tools"
    assert cached[0].read_bytes() == before  # the children wrote no bytecode


@pytest.mark.slow
def test_the_sorted_build_passes_with_the_same_pycache(cached_project: Path) -> None:
    result = prove_stable(f"{MODULE}:build_sorted", ["a", "b"], permutations=2, hash_seeds=(0, 1))
    assert result.hash_seeds == (0, 1)
