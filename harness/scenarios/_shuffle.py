"""The registration shuffle: the same scenario under many load orders must send the same bytes.

It runs on the proofs' engine (`harness.prove.perturb`): run k of the shuffle is run k of the plans
(natural, reversed, forward, then seeded random), and the reference runtime's `LoadSchedule` is
that run's order for the load-schedule source: the order the plugin tasks start and how many
scheduling points each plugin's import step takes, which together fix the completion
(registration) order. The identity and the reversed schedule always run; the rest come from a
`random.Random(seed)` of their own, never the global one, so a seed reproduces every order
exactly. The asyncio scheduling of each run is perturbed as well, like any other program's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from harness._shared._views import CacheView, view_of_header, view_of_request
from harness.agent._context import LoadSchedule
from harness.agent._header import header_bytes, header_equals
from harness.agent._llm import ScriptedAdapter, ScriptedReply
from harness.drift._compare import compare, compare_values
from harness.drift._parts import Reproduce
from harness.drift._report import DriftReport
from harness.prove.perturb._engine import perturbed
from harness.prove.perturb._plan import LOAD_SCHEDULE, RunPlan, plans
from harness.scenarios._formats import Fixture, RecordedRequest, Scenario
from harness.scenarios._run import Run, owners_of, run_sync

T = TypeVar("T")

SHUFFLE_SESSION = "shuffle-session"  # one id for every run, so requests compare byte for byte


def schedules(names: Sequence[str], count: int, seed: int) -> list[LoadSchedule]:
    """`count` schedules: identity, reversed, then seeded random ones (fewer if `count` < 2)."""
    rng = random.Random(seed)
    found = [LoadSchedule(tuple(names)), LoadSchedule(tuple(reversed(names)))]
    while len(found) < count:
        found.append(LoadSchedule.shuffled(names, rng))
    return found[: max(count, 1)]


@dataclass(frozen=True)
class ShuffleResult:
    scenario: str
    seed: int
    runs: int
    report: DriftReport | None  # the first drift found, None when every order gave the same bytes
    message: str = ""

    @property
    def stable(self) -> bool:
        return self.report is None and not self.message


def _same_bytes(base: Run, other: Run) -> bool:
    """Whether both runs logged the same header bytes and dispatched the same request bytes.

    The recorder keeps every dispatched request as the requests file does: its fields, and its
    messages as their count and SHA-256, carried forward message by message as the conversation
    grows (`scenarios._run.MessagesDigester`). So a request is compared by its digest and its
    other fields, a field's encoding only when the two are not the same object (runs of one
    scenario share the rendered system text and the frozen tool copies): per step, the cost is
    what that step adds, never the whole conversation again.
    """
    base_headers, other_headers = base.headers, other.headers
    if len(base_headers) != len(other_headers):
        return False
    if not all(
        header_equals(a, b) for (_, a), (_, b) in zip(base_headers, other_headers, strict=True)
    ):
        return False
    base_requests, other_requests = base.recorder.dispatched, other.recorder.dispatched
    if len(base_requests) != len(other_requests):
        return False
    return all(_same_request(a, b) for a, b in zip(base_requests, other_requests, strict=True))


def _same_request(a: RecordedRequest, b: RecordedRequest) -> bool:
    if a is b:
        return True
    fields = zip(msgspec.structs.astuple(a), msgspec.structs.astuple(b), strict=True)
    return all(
        x is y or (_present(x) and _present(y) and _encode(x) == _encode(y)) for x, y in fields
    )


def _present(value: object) -> bool:
    return value is not msgspec.UNSET


_encode = msgspec.json.Encoder().encode


def _first_differing(
    pairs: Iterable[tuple[T, T]], encode: Callable[[T], bytes], view: Callable[[T], CacheView]
) -> tuple[CacheView, CacheView] | None:
    """The views of the first pair whose encodings differ."""
    for a, b in pairs:
        if encode(a) != encode(b):
            return view(a), view(b)
    return None


def _first_drift(
    base: Run,
    other: Run,
    reproduce: Reproduce,
    owners: dict[str, str | None],
    *,
    digested: bool = False,
) -> DriftReport | None:
    """The report of the first request (or header) the runs differ in; `digested`: from the
    requests as the recorder digested them (when the runs made again no longer differ)."""
    recorder_a, recorder_b = base.recorder, other.recorder
    base_requests: Sequence[object] = (
        recorder_a.dispatched if digested else recorder_a.full_requests
    )
    other_requests: Sequence[object] = (
        recorder_b.dispatched if digested else recorder_b.full_requests
    )
    base_headers, other_headers = base.headers, other.headers
    found = _first_differing(
        zip(base_requests, other_requests, strict=False), msgspec.json.encode, view_of_request
    ) or _first_differing(
        ((a, b) for (_, a), (_, b) in zip(base_headers, other_headers, strict=False)),
        header_bytes,
        view_of_header,
    )
    if found is not None:
        return compare(
            *found, owners=owners, reproduce=reproduce, label_a="order A", label_b="order B"
        )
    if len(base_requests) != len(other_requests) or len(base_headers) != len(other_headers):
        return compare_values(
            {"requests": len(base_requests), "headers": [r for r, _ in base_headers]},
            {"requests": len(other_requests), "headers": [r for r, _ in other_headers]},
            label_a="order A",
            label_b="order B",
        )
    return None


def _run(
    scenario: Scenario,
    answers: Sequence[ScriptedReply],
    plan: RunPlan,
    schedule: LoadSchedule,
    *,
    whole: bool = False,
) -> Run:
    """One run of the shuffle: its requests digested (`whole`: kept whole, for a report)."""
    with perturbed(plan):
        return run_sync(
            scenario,
            ScriptedAdapter(answers, keep_requests=whole),
            schedule=schedule,
            rebuild=False,
            session_id=SHUFFLE_SESSION,
            keep_requests=whole,
            share_conversation=not whole,
        )


def shuffle_scenario(
    scenario: Scenario,
    answers: Sequence[ScriptedReply],
    *,
    count: int = 16,
    seed: int = 0,
    command: str | None = None,
) -> ShuffleResult:
    """Run `scenario` under `count` load schedules and compare every run with the first.

    Runs keep their requests as digests; when two differ, both runs are made again keeping their
    requests whole (a run is a function of its plan and schedule), for the report to say what
    moved and where.
    """
    names = [plugin.name for plugin in scenario.plugins]
    owners = owners_of(scenario)
    load_orders = schedules(names, count, seed)
    base: tuple[Run, RunPlan, LoadSchedule] | None = None
    runs = 0
    for plan in plans(count, seed):
        schedule = load_orders[plan.index] if plan.perturbs(LOAD_SCHEDULE) else load_orders[0]
        run = _run(scenario, answers, plan, schedule)
        runs += 1
        if base is None:
            base = (run, plan, schedule)
            continue
        if _same_bytes(base[0], run):
            continue
        reproduce = Reproduce(
            seed=seed,
            order_a=tuple(base[0].registration_order),
            order_b=tuple(run.registration_order),
            command=command,
        )
        whole_base = _run(scenario, answers, base[1], base[2], whole=True)
        whole_run = _run(scenario, answers, plan, schedule, whole=True)
        report = _first_drift(whole_base, whole_run, reproduce, owners) or _first_drift(
            base[0], run, reproduce, owners, digested=True
        )
        message = (
            "" if report is not None else "the runs differ but no header or request drift was found"
        )
        return ShuffleResult(scenario.name, seed, runs, report, message)
    return ShuffleResult(scenario.name, seed, runs, None)


def shuffle_fixture(fixture: Fixture, *, count: int = 16, seed: int = 0) -> ShuffleResult:
    answers = fixture.answers.answers if fixture.answers else fixture.scenario.script
    return shuffle_scenario(fixture.scenario, answers, count=count, seed=seed)
