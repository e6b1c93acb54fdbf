"""Replay one fixture in a fresh interpreter and report time and memory as JSON on stdout.

A fresh process gives a clean peak: the resident set before the replay (interpreter, imports,
the loaded fixture) and its high-water mark during the replay alone (Linux resets it through
/proc/self/clear_refs; elsewhere the peak covers the whole process).

Usage: python -m bench.replay_child FIXTURE_FOLDER
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import time
from pathlib import Path


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def main(argv: list[str]) -> int:
    from bench.timing import timed
    from harness.fixture import load_fixture
    from harness.replay import replay_fixture

    folder = Path(argv[0])
    load_s, fixture = timed(lambda: load_fixture(folder))
    gc.collect()
    rss_before = _status_kib("VmRSS")
    reset = _reset_peak()
    start = time.perf_counter()
    result = replay_fixture(fixture)
    replay_s = time.perf_counter() - start
    peak = _status_kib("VmHWM") if reset else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    # The same replay with the cyclic garbage collector off, only to show what its passes over
    # the growing conversation cost (the harness itself never turns it off).
    ok = result.ok
    del result
    gc.collect()
    gc.disable()
    start = time.perf_counter()
    again = replay_fixture(fixture)
    no_gc_s = time.perf_counter() - start
    gc.enable()
    print(
        json.dumps(
            {
                "steps": again.steps,
                "ok": ok and again.ok,
                "no_gc_s": no_gc_s,
                "load_s": load_s,
                "replay_s": replay_s,
                "rss_before_kib": rss_before,
                "peak_kib": peak,
                "peak_is_replay_only": reset,
            }
        )
    )
    return 0 if ok and again.ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
