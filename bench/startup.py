"""What the plugin adds to pytest's startup: a run of 0 tests with it, minus one without.

Both runs are the same `python -m pytest` in an empty project (a `pytest.ini` and nothing to
collect), with plugin autoloading off so that only pytest itself and, in one of them, the
harness plugin (`-p harness.plugin`) load: the difference is the plugin's own cost, imports it
shares with other plugins included (an upper bound). The runs alternate in pairs, which run in
either order, and the figure is the median of the per-pair differences in the child's CPU time
(user + system): on a shared machine wall time mostly measures the neighbours.

Python caches compiled modules (and pytest its assertion-rewritten ones) as usual: a warm-up
run of each kind fills the caches first. `PYTHONDONTWRITEBYTECODE` is removed from the runs'
environment: with it set, every run recompiles every module it imports (pytest rewrites the
plugin's modules again each time), which measures the compiler, not the plugin.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StartupFigure:
    pairs: int
    with_s: float  # median CPU time of a run with the plugin
    without_s: float
    added_s: float  # median of the per-pair differences

    @property
    def added_ms(self) -> float:
        return self.added_s * 1000


def _run(folder: Path, plugin: bool) -> float:
    """The CPU seconds of one pytest run in `folder`."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if plugin:
        command += ["-p", "harness.plugin"]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as output:
        child = subprocess.Popen(command, cwd=folder, env=env, stdout=output, stderr=output)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in (0, 5):  # 5: no tests collected
            output.seek(0)
            raise RuntimeError(f"pytest failed to start:\n{output.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def measure(pairs: int) -> StartupFigure:
    with tempfile.TemporaryDirectory(prefix="harness-startup-") as name:
        folder = Path(name)
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        _run(folder, True)  # warm the file cache and pytest's rewritten-module cache
        _run(folder, False)
        withs, withouts, added = [], [], []
        for number in range(pairs):
            first = number % 2 == 0
            a = _run(folder, first)
            b = _run(folder, not first)
            with_s, without_s = (a, b) if first else (b, a)
            withs.append(with_s)
            withouts.append(without_s)
            added.append(with_s - without_s)
    return StartupFigure(
        pairs,
        statistics.median(withs),
        statistics.median(withouts),
        statistics.median(added),
    )
