"""Time and peak memory of one replay, measured in a child interpreter (see replay_child)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReplayMemory:
    steps: int
    load_s: float
    replay_s: float
    no_gc_s: float  # the same replay with the cyclic GC off (for the README's explanation)
    rss_before_mib: float | None  # interpreter, imports and the loaded fixture
    peak_mib: float  # high-water mark during the replay (whole process if not resettable)
    replay_only: bool

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.replay_s


def measure(folder: Path, timeout: float = 600.0) -> ReplayMemory:
    done = subprocess.run(
        [sys.executable, "-m", "bench.replay_child", str(folder)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the replay of {folder} failed:\n{done.stderr[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    before = data["rss_before_kib"]
    return ReplayMemory(
        steps=data["steps"],
        load_s=data["load_s"],
        replay_s=data["replay_s"],
        no_gc_s=data["no_gc_s"],
        rss_before_mib=None if before is None else before / 1024,
        peak_mib=data["peak_kib"] / 1024,
        replay_only=data["peak_is_replay_only"],
    )
