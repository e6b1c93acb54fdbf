"""Perturbing a program's own sources of order, seeded and undone: the engine of the proofs.

Real agents race where a test cannot hand in a list: loaders that finish in latency order
(asyncio tasks waiting on sleeps, threads, helper processes, sockets, MCP servers), thread pool
jobs and threads, folders listed in filesystem order, entry points in discovery order. A proof
runs the build under `plans(count, seed)`: run 0 natural, run 1 reversed, run 2 forward, the
rest seeded random; `perturbed(plan, budget_s)` applies a run to every ambient source, making
the program's sibling tasks and thread jobs finish in the run's order whatever their latencies,
and records what it saw; `find_cause` names the source that moved the bytes.

- `plan`: the runs, and the order each source takes in each; `run`: the run in force, its
  budget and the deadlines that bound holding work back;
- `loops`: every event loop the build runs is ours; `aio`: what such a loop holds back;
  `order`: which held task wake-up goes next; `channels`: answers due from processes and
  sockets; `program`: whose code a task or thread runs, and its label;
- `threads`, `thread_hooks`: thread pool jobs, anyio's worker threads, the program's threads;
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
