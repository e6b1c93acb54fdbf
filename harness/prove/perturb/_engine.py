"""One run of a build under a `RunPlan`: every ambient source of order perturbed, then undone.

`perturbed(plan, budget_s)` applies, for the length of the block: the event loops (asyncio), the
thread gate (pools, anyio's worker threads, threads the program starts), folder listings
(filesystem) and distribution discovery (entry points), and records what it saw in a `Journal`.
Holding work back to impose an order ends `budget_s` after the run started (see `_run`).
Everything is undone when the block ends, also when the build raised. The units a test hands in
and the reference runtime's load schedule are orders the caller applies itself
(`RunPlan.arrange`); they are named here for the causes.

`find_cause` answers "which source moved the bytes?": it re-runs the drifting run with one source
perturbed at a time, in the order of `SOURCES`, and names the first that moves them alone. On a
loaded machine a held-back task may be let go before its turn (the budget ran out), so one pair
of runs proves little either way: a source is named when its reversed order moves the bytes in
every one of `tries` pairs, and the reference (every source in the same order) is judged
uncontrolled only when it never agrees with itself in `tries` pairs and no source explains the
drift. The wording "a race the proof does not control" is left for that case.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from harness.prove.perturb._channels import HELPER_PROCESS, PIPE, SOCKET
from harness.prove.perturb._journal import Journal, shown
from harness.prove.perturb._listing import perturbed_entry_points, perturbed_listing
from harness.prove.perturb._loops import perturbed_asyncio
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
)
from harness.prove.perturb._run import DEFAULT_BUDGET_S, RunState, in_force
from harness.prove.perturb._thread_hooks import perturbed_threads

__all__ = ["Cause", "find_cause", "perturbed"]


@contextmanager
def perturbed(plan: RunPlan, budget_s: float = DEFAULT_BUDGET_S) -> Iterator[Journal]:
    """Apply `plan` to every ambient source of order while the block runs; hold work back for
    at most `budget_s` seconds after it starts."""
    journal = Journal()
    run = RunState(plan, journal, budget_s)
    with ExitStack() as stack:
        stack.enter_context(in_force(run))
        stack.enter_context(perturbed_threads(run))
        stack.enter_context(perturbed_asyncio())
        stack.enter_context(perturbed_listing(plan, journal))
        stack.enter_context(perturbed_entry_points(plan, journal))
        yield journal


@dataclass(frozen=True)
class Cause:
    """The source whose order alone moved the bytes, in words a user acts on."""

    source: str | None  # None: no single source; their combination
    text: str
    plan: RunPlan


def find_cause(
    plan: RunPlan,
    differs: Callable[[RunPlan, RunPlan], tuple[Journal, Journal] | None],
    *,
    in_play: Sequence[str] = SOURCES,
    orders: tuple[Sequence[str], Sequence[str]] = ((), ()),
    tries: int = 3,
) -> Cause:
    """The source whose order alone moves the bytes in `plan`'s run.

    The natural run cannot be the reference here: a real race makes it differ from itself. So
    each source is tried against a deterministic rest (`RunPlan.neutral`): `differs(reference,
    candidate)` runs both and returns their journals when the bytes differ, None otherwise.
    `orders` are the two orders of the handed-in units (or plugins), for the report. `tries`:
    how many pairs a verdict takes on a noisy machine (see the module doc).
    """
    reference = plan.neutral()
    # The reference must agree with itself at least once: else time or randomness in the build
    # moves the bytes whatever the order, and no source can be blamed.
    steady = any(differs(reference, reference) is None for _ in range(max(tries, 1)))
    if not steady:
        return Cause(None, _UNCONTROLLED, plan)
    for source in in_play:
        # The run's own order for the source first; then the canonical order reversed, which
        # differs from the reference's forward order whenever the source orders two things.
        for mode in dict.fromkeys((plan.mode, Mode.BACKWARD)):
            if mode is reference.mode_of(source) or mode is Mode.NATURAL:
                continue
            candidate = plan.neutral_except(source, mode)
            journals = _every_time(differs, reference, candidate, tries)
            if journals is not None and _used(source, journals[1]):
                return Cause(source, describe(source, *journals, orders), candidate)
    # Every perturbed order may agree with every other and still not with the program's own
    # (workers taking jobs from a queue finish in queue order once their order is imposed,
    # whichever it is): then the source whose perturbation alone moves the natural run's bytes.
    natural = RunPlan(plan.index, plan.count, plan.seed, Mode.NATURAL)
    for source in in_play:
        if source in (UNITS, LOAD_SCHEDULE):
            continue
        candidate = plan.natural_except(source, Mode.FORWARD)
        journals = _every_time(differs, natural, candidate, tries)
        if journals is not None and _used(source, journals[1]):
            return Cause(source, describe(source, *journals, orders), candidate)
    return Cause(
        None,
        "none of the perturbed sources moves the bytes alone: a combination of them, or a race"
        " the proof does not control (threads a library starts, time or randomness in the build)",
        plan,
    )


def _every_time(
    differs: Callable[[RunPlan, RunPlan], tuple[Journal, Journal] | None],
    reference: RunPlan,
    candidate: RunPlan,
    tries: int,
) -> tuple[Journal, Journal] | None:
    """The journals of the last pair when `candidate` moved the bytes against `reference` in
    every one of `tries` pairs (the first pair that agrees ends it: no), else None."""
    journals = None
    for _ in range(max(tries, 1)):
        journals = differs(reference, candidate)
        if journals is None:
            return None
    return journals


_UNCONTROLLED = (
    "a race the proof does not control: two runs with every source in the same order sent"
    " different bytes (threads a library starts, a process pool, time or randomness in the"
    " build)"
)


def _used(source: str, journal: Journal) -> bool:
    """Whether a run touched `source` at all (a source it never touched cannot be the cause)."""
    if source in (ASYNCIO, THREADS):
        return bool(journal.finished_order.get(source))
    if source in (FILESYSTEM, ENTRY_POINTS):
        return bool(journal.places.get(source))
    return True


def describe(
    source: str,
    reference: Journal,
    perturbed_journal: Journal,
    orders: tuple[Sequence[str], Sequence[str]] = ((), ()),
) -> str:
    """The cause line for `source`, quoting what a reference run and the drifting run saw."""
    if source in (UNITS, LOAD_SCHEDULE):
        what = "registration order of units" if source == UNITS else "plugin load order"
        first, second = orders
        return f"{what} ({shown(list(first))} vs {shown(list(second))})"
    if source in (ASYNCIO, THREADS):
        what = "asyncio completion order" if source == ASYNCIO else "thread completion order"
        before = reference.finished_order.get(source, [])
        after = perturbed_journal.finished_order.get(source, [])
        before, after = _differing(*_common(before, after))
        if source == ASYNCIO:
            # Tasks that wait for answers from outside (a process, a socket) are named in the
            # order they took them up: a session kept open finishes only when the
            # agent closes it, long after its tools were registered.
            firsts = [list(dict.fromkeys(j.answers)) for j in (reference, perturbed_journal)]
            answered = _differing(*_common(*firsts))
            if answered[0] or answered[1]:
                what, (before, after) = "asyncio order of answers", answered
        through = _through({*before, *after}, reference, perturbed_journal)
        if not before and not after:
            return what + through
        return f"{what} ({shown(before)} vs {shown(after)}){through}"
    places = perturbed_journal.places.get(source, [])
    if source == ENTRY_POINTS and len(places) > 1:
        places = [place for place in places if place != "installed distributions"]
    what = "filesystem listing order" if source == FILESYSTEM else "entry-point order"
    if not places:
        return what
    return f"{what} ({'; '.join(places[:3])}{'; …' if len(places) > 3 else ''})"


_THROUGH = (
    (HELPER_PROCESS, "tools from helper processes arrived in another order"),
    (SOCKET, "answers over sockets arrived in another order"),
    (PIPE, "answers over pipes arrived in another order"),
)


def _through(labels: set[str], *journals: Journal) -> str:
    """What the racing tasks waited on, when it was outside the process (`: tools from helper
    processes arrived in another order`)."""
    kinds = {
        kind
        for journal in journals
        for label in labels or set(journal.channels)
        for kind in journal.channels.get(label, ())
    }
    return next((f": {words}" for kind, words in _THROUGH if kind in kinds), "")


def _common(a: list[str], b: list[str]) -> tuple[list[str], list[str]]:
    """Both orders, keeping only what both runs finished (a client closed by the garbage
    collector in one run is not part of the race)."""
    left, right = Counter(a), Counter(b)
    shared = left & right

    def keep(items: list[str]) -> list[str]:
        budget = Counter(shared)
        kept = []
        for item in items:
            if budget[item] > 0:
                budget[item] -= 1
                kept.append(item)
        return kept

    return keep(a), keep(b)


def _differing(a: list[str], b: list[str]) -> tuple[list[str], list[str]]:
    """Both orders without their common head and tail (where the runs agree)."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    return a[start : len(a) - end], b[start : len(b) - end]
