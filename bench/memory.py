"""The large transcripts, measured in a child interpreter (see replay_child)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BigFigure:
    steps: int
    small_steps: int
    load_s: float  # loading the large fixture (apart: the floor reads no files)
    replay_s: float  # replay + check, median
    floor_s: float  # the floor loop, median
    small_replay_s: float
    small_floor_s: float
    no_gc_s: float  # one replay with the cyclic GC off (what its passes cost)
    rss_before_mib: float | None  # interpreter, imports and the loaded fixtures
    peak_mib: float  # high-water mark during the first replay (whole process if not resettable)
    replay_only: bool

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.replay_s

    @property
    def floor_ratio(self) -> float:
        """Our replay + check over the floor's time, on the large transcript."""
        return self.replay_s / self.floor_s

    @property
    def growth(self) -> float:
        """Per-step time on the large transcript over per-step time on the small one."""
        return (self.replay_s / self.steps) / (self.small_replay_s / self.small_steps)


def measure(large: Path, small: Path, rounds: int, timeout: float = 1800.0) -> BigFigure:
    done = subprocess.run(
        [sys.executable, "-m", "bench.replay_child", str(large), str(small), str(rounds)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the replay of {large} failed:\n{done.stderr[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    before = data["rss_before_kib"]
    return BigFigure(
        steps=data["steps"],
        small_steps=data["small_steps"],
        load_s=data["load_s"],
        replay_s=data["replay_s"],
        floor_s=data["floor_s"],
        small_replay_s=data["small_replay_s"],
        small_floor_s=data["small_floor_s"],
        no_gc_s=data["no_gc_s"],
        rss_before_mib=None if before is None else before / 1024,
        peak_mib=data["peak_kib"] / 1024,
        replay_only=data["peak_is_replay_only"],
    )
