"""Perturbing a program's own sources of order, seeded and undone: the engine of the proofs.

Real agents race where a test cannot hand in a list: loaders that finish in latency order
(asyncio, thread pools), folders listed in filesystem order, entry points in discovery order.
A proof runs the build under `plans(count, seed)`: run 0 natural, run 1 reversed, run 2 forward,
the rest seeded random; `perturbed(plan)` applies a run to every ambient source and records
what it saw; `find_cause` names the source that moved the bytes.

- `plan`: the runs, and the order each source takes in each;
- `aio`: asyncio ready tasks and sleep timers; `threads`: thread pool jobs;
- `listing`: folder listings and entry points;
- `journal`: what each run saw; `engine`: applying a run, and finding a cause.
"""

from harness.prove.perturb._engine import Cause, describe, find_cause, perturbed
from harness.prove.perturb._journal import Journal
from harness.prove.perturb._plan import (
    ASYNCIO,
    ENTRY_POINTS,
    FILESYSTEM,
    LOAD_SCHEDULE,
    SOURCES,
    THREADS,
    UNITS,
    Mode,
    RunPlan,
    plans,
)

__all__ = [
    "ASYNCIO",
    "ENTRY_POINTS",
    "FILESYSTEM",
    "LOAD_SCHEDULE",
    "SOURCES",
    "THREADS",
    "UNITS",
    "Cause",
    "Journal",
    "Mode",
    "RunPlan",
    "describe",
    "find_cause",
    "perturbed",
    "plans",
]
