"""The cache budget of a captured test: `@pytest.mark.cache_budget(max_usd=..., min_hit_rate=...,
model=...)`, or the `harness_cache_budget` ini default (`max_usd=0.50 min_hit_rate=0.6`).

After the test body passed and the prefix-chain gate let it through, each conversation the test
sent (per endpoint; each `prove_stable` call's run one of its own) is simulated and priced by the
cost model (`harness.cost`: the rules pack, the price pack with the project's rows first:
`harness_capture_config`'s `prices`, then `harness-prices.json` at the rootdir). A conversation
that costs more than `max_usd`, or whose cache hit rate is under `min_hit_rate`, fails the test
with its breakdown. `model` prices it under another model's rules and prices (the one the
project will run in production). The marker's keys override the ini default's, one by one
(`max_usd=None`, `min_hit_rate=None`: no limit for this test).

No silent pass: a budget value that is not a finite number in its range (NaN, infinity, a
negative) is a usage error in one line, found when the test's capture starts (the test errors);
a budgeted test that sent nothing the cost model can price fails, in every mode and whatever
`no_requests` says: nothing would enforce its budget.

`cost_delta`: what a drift costs, the recording's conversations against the replay's, for the
failure, the `header drift` summary and the GitHub step summary.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

import pytest

from harness._shared._errors import HarnessError
from harness.pytest_plugin._api import fail
from harness.pytest_plugin._state import RunState

if TYPE_CHECKING:
    from harness.capture._session import CaptureSession
    from harness.rules._engine import Session

__all__ = ["BUDGET", "budget_of", "check_budget", "cost_delta"]

BUDGET: Final = "cache_budget"
_KEYS: Final = ("max_usd", "min_hit_rate", "model")
_HOW: Final = (
    "takes max_usd=<dollars per conversation, 0 or more>, min_hit_rate=<0 to 1> and"
    " model=<a model id>"
)
_LIMITS: Final = ("max_usd", "min_hit_rate")
_INI: Final = "harness_cache_budget"


def _parse(value: Any, key: str, where: str) -> Any:
    if key == "model":
        if value is None or isinstance(value, str):
            return value
        raise HarnessError(f"{where}: model takes a model id, not {value!r}")
    if value is None and where != _INI:  # the marker lifts the ini default's limit
        return None
    if isinstance(value, bool):  # float(True) is 1.0: a flag is no amount
        raise HarnessError(
            f"{where}: {key}={value!r} is not a finite number in its range; it {_HOW}"
        )
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise HarnessError(f"{where}: {key} takes a number, not {value!r}") from None
    # NaN compares false with everything: a budget of NaN (or infinity) could never fail
    if not math.isfinite(number) or number < 0 or (key == "min_hit_rate" and number > 1):
        raise HarnessError(
            f"{where}: {key}={value!r} is not a finite number in its range; it {_HOW}"
        )
    return number


def budget_of(item: pytest.Item, settings: RunState) -> dict[str, Any]:
    """The test's budget: the ini default's keys, then the marker's."""
    found: dict[str, Any] = {}
    for part in settings.budget.replace(",", " ").split():
        key, _, value = part.partition("=")
        if key not in _KEYS or not value:
            raise HarnessError(f"{_INI}: {part!r}: the ini value {_HOW}")
        found[key] = _parse(value, key, _INI)
    marker = item.get_closest_marker(BUDGET)
    if marker is not None:
        where = f"@pytest.mark.{BUDGET}"
        if marker.args:
            raise HarnessError(f"{where} {_HOW} (keywords only)")
        for key, value in marker.kwargs.items():
            if key not in _KEYS:
                raise HarnessError(f"{where}: unknown key {key!r}; it {_HOW}")
            found[key] = _parse(value, key, where)
    return {key: value for key, value in found.items() if value is not None}


def check_budget(
    item: pytest.Item, session: CaptureSession, settings: RunState, sessions: list[Session]
) -> None:
    """Fail the test when a conversation exceeds its budget (see the module doc)."""
    __tracebackhide__ = True
    try:
        budget = budget_of(item, settings)
    except HarnessError as error:
        fail(f"harness: {error}")
    if "max_usd" not in budget and "min_hit_rate" not in budget:
        return
    from harness.cost._cost import cost_of, prices_used
    from harness.cost._prices import overlay_prices, project_prices
    from harness.cost._simulate import conversations
    from harness.cost._text import breakdown, money, percent

    try:
        rows = [*session.config.prices, *project_prices(settings.rootdir)]
    except HarnessError as error:
        fail(f"harness: {error}")
    with overlay_prices(rows):  # the costs and the names of their prices, under the same rows
        found = [
            (conversation, cost_of(conversation), prices_used(conversation))
            for lint_session in sessions
            for conversation in conversations(lint_session, budget.get("model"))
        ]
    problems: list[str] = []
    if not found:  # nothing priced: the budget would pass whatever the code sends
        limits = ", ".join(f"{key}={budget[key]}" for key in _LIMITS if key in budget)
        fail(
            f"harness: the cache budget ({limits}) cannot be enforced: the test sent no request"
            " the cost model could price (a captured provider request with a body); send one,"
            f" or lift the limit for this test (@pytest.mark.{BUDGET}(max_usd=None,"
            " min_hit_rate=None))"
        )
    for conversation, cost, prices in found:
        where = f"{conversation.endpoint} ({cost.requests} request(s))"
        limit = budget.get("max_usd")
        if conversation.unknown_model:  # no minimum known: an estimate could pass falsely
            named = cost.model or "a request without a model"
            problems.append(
                f"{where}: the rules know no minimum for {named} ({cost.provider}), so what it"
                " caches cannot be judged; add a minimum row (harness-rules.json or"
                " harness_capture_config's rules)"
            )
            continue
        said = breakdown(cost, conversation, prices)
        if limit is not None and cost.usd is None:
            problems.append(f"{where}: {said}")
        elif limit is not None and cost.usd is not None and cost.usd > limit:
            problems.append(
                f"{where} costs {money(cost.usd)}, over the budget of {money(limit)}: {said}"
            )
        rate = budget.get("min_hit_rate")
        if rate is not None and cost.hit_rate < rate:
            problems.append(
                f"{where} hits the cache for {percent(cost.hit_rate)} of its input, under the"
                f" budget's {percent(rate)}: {said}"
            )
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        fail(f"harness: the cache budget failed ({len(problems)} problem(s)):\n{lines}")


def cost_delta(
    session: CaptureSession, settings: RunState, sessions: list[Session], report: Any = None
) -> str:
    """What the drift costs: the recording's conversations and the replay's, simulated and
    priced ("$0.0420 -> $0.1100 per conversation at claude-sonnet-4-5 list price, prices checked
    2026-12-04; cause tools_changed at /tools/3, plugin mcp-github"); "" when there is nothing to
    price (no recording, no price row)."""
    from harness.cost._cost import cost_of
    from harness.cost._prices import overlay_prices, project_prices
    from harness.cost._simulate import conversations
    from harness.cost._text import money
    from harness.rules._engine import Session
    from harness.rules._inputs import sessions_of

    cassette = session.cassette
    if cassette is None or not cassette.is_file():
        return ""
    try:
        rows = [*session.config.prices, *project_prices(settings.rootdir)]
        recorded = sessions_of([cassette])
        # a replay that stopped at a mismatch is compared with as many recorded requests
        short = [
            Session(old.file, old.requests[: len(new.requests)], offset=old.offset)
            if len(new.requests) < len(old.requests)
            else old
            for old, new in zip(recorded, sessions, strict=False)
        ]
        cut = sum(len(new.requests) for new in sessions)
        with overlay_prices(rows):
            before = [cost_of(c) for s in short for c in conversations(s)]
            after = [cost_of(c) for s in sessions for c in conversations(s)]
    except HarnessError:
        return ""  # a bad prices file fails the budget, with its own line
    priced = [c for c in [*before, *after] if c.usd is not None]
    if not before or not after or len(priced) < len(before) + len(after):
        return ""
    was = sum(c.usd or 0.0 for c in before) / len(before)
    now = sum(c.usd or 0.0 for c in after) / len(after)
    first = after[0]
    line = (
        f"{money(was)} -> {money(now)} per conversation at {first.model} list price, prices"
        f" checked {first.prices_checked_on}"
    )
    # the shape stays whole; a replay that stopped early says so after it
    scope = (
        ""
        if cut >= sum(len(old.requests) for old in recorded)
        else f"; priced over the first {cut} request(s), where the replay stopped"
    )
    if report is not None and getattr(report, "verdict", None):
        cause = f"; cause {report.verdict}"
        pointer = getattr(report, "raw_pointer", "")
        cause += f" at {pointer}" if pointer else ""
        provenance = getattr(report, "raw_provenance", None)
        cause += f", {provenance}" if provenance else ""
        line += cause
    return line + scope
