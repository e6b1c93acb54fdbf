"""What the plugin adds to pytest's startup: a run of 0 tests with it, minus one without.

Both runs are the same pytest session in a fresh interpreter, in an empty project (a
`pytest.ini` and nothing to collect), with plugin autoloading off and one plugin named with `-p`:
the harness plugin in one run, an empty module (`bench.empty_plugin`) in the other, so that both
pay pytest's own cost of looking a `-p` name up among the installed entry points. The difference
is the plugin's own cost (imports it would share with other plugins included: an upper bound).

Each run reports its CPU time from `import pytest` to the end of `pytest.main` (the interpreter's
own start is the same in both and only adds noise); the runs alternate in pairs, in either order,
and the figure is the median of the per-pair differences. On a shared machine wall time mostly
measures the neighbours.

Python caches compiled modules (and pytest its assertion-rewritten ones) as usual: a warm-up run
of each kind fills the caches first. `PYTHONDONTWRITEBYTECODE` is removed from the runs'
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

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "harness.pytest_plugin"
EMPTY = "bench.empty_plugin"
_RUN = """
import contextlib, io, sys, time
start = time.process_time()
import pytest
with contextlib.redirect_stdout(io.StringIO()):
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", sys.argv[1]])
print(int(code), time.process_time() - start)
"""


@dataclass(frozen=True)
class StartupFigure:
    pairs: int
    with_s: float  # median CPU time of a run with the plugin
    without_s: float
    added_s: float  # median of the per-pair differences

    @property
    def added_ms(self) -> float:
        return self.added_s * 1000


def _run(folder: Path, plugin: str) -> float:
    """The CPU seconds of one pytest session in `folder` with `plugin` loaded."""
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-c", _RUN, plugin],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 2 or fields[0] not in ("0", "5"):  # 5: no tests
        raise RuntimeError(f"pytest failed to start:\n{(done.stdout + done.stderr)[-2000:]}")
    return float(fields[1])


def measure(pairs: int) -> StartupFigure:
    with tempfile.TemporaryDirectory(prefix="harness-startup-") as name:
        folder = Path(name)
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        _run(folder, PLUGIN)  # warm the bytecode and the rewritten-module caches
        _run(folder, EMPTY)
        withs, withouts, added = [], [], []
        for number in range(pairs):
            first = number % 2 == 0
            a = _run(folder, PLUGIN if first else EMPTY)
            b = _run(folder, EMPTY if first else PLUGIN)
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
