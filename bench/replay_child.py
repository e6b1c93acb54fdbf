"""The large transcripts in a fresh interpreter: memory, the floor ratio, per-step growth.

A fresh process gives a clean peak: the resident set before the replay (interpreter, imports,
the loaded fixtures) and its high-water mark during the first replay alone (Linux resets it
through /proc/self/clear_refs; elsewhere the peak covers the whole process). Then, side by side
and interleaved (medians): our replay + check and the floor loop on the large transcript, and
our replay + check on the one ten times smaller, for the per-step growth. Loading is timed apart
and billed to neither: the floor reads no files. Last, one replay with the cyclic garbage
collector off shows what its passes cost (the harness itself never turns it off).

Usage: python -m bench.replay_child LARGE_FOLDER SMALL_FOLDER ROUNDS (JSON on stdout)
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
    from bench.contest import Entrant, interleaved, whole
    from bench.floor import floor_check, verify
    from bench.pipeline import replay_ok, steps_of
    from bench.timing import timed
    from harness._shared._paths import pins_root
    from harness.scenarios._formats import load_fixture
    from harness.scenarios._pins import load_pin

    large, small, rounds = Path(argv[0]), Path(argv[1]), int(argv[2])
    load_s, fixture = timed(lambda: load_fixture(large))
    small_fixture = load_fixture(small)
    pins = [load_pin(pins_root(folder), "bench") for folder in (large, small)]
    assert pins[0] is not None and pins[1] is not None
    verify(fixture, pins[0])
    verify(small_fixture, pins[1])
    gc.collect()
    rss_before = _status_kib("VmRSS")
    reset = _reset_peak()
    start = time.perf_counter()
    replay_ok(fixture)
    first_s = time.perf_counter() - start
    peak = _status_kib("VmHWM") if reset else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    entrants = [
        Entrant("ours", whole(replay_ok, fixture)),
        Entrant("floor", whole(floor_check, fixture, pins[0])),
        Entrant("ours small", whole(replay_ok, small_fixture)),
        Entrant("floor small", whole(floor_check, small_fixture, pins[1])),
    ]
    interleaved(entrants, rounds)
    gc.collect()
    gc.disable()
    start = time.perf_counter()
    replay_ok(fixture)
    no_gc_s = time.perf_counter() - start
    gc.enable()
    medians = {entrant.name: entrant.median for entrant in entrants}
    print(
        json.dumps(
            {
                "steps": steps_of(fixture),
                "small_steps": steps_of(small_fixture),
                "load_s": load_s,
                "first_replay_s": first_s,
                "replay_s": medians["ours"],
                "floor_s": medians["floor"],
                "small_replay_s": medians["ours small"],
                "small_floor_s": medians["floor small"],
                "no_gc_s": no_gc_s,
                "rss_before_kib": rss_before,
                "peak_kib": peak,
                "peak_is_replay_only": reset,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
