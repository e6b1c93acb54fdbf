"""What the harness's pytest fixtures hand a test, and how a test talks to the controller.

- `RunState`: the run's mode, shuffle count, seed and fixtures folder, and what the controller
  collects from the tests' reports (drift, written files, used recordings).
- `AgentHarness` (`agent_harness`): check a scenario on the reference runtime through the one
  orchestration (`harness.scenarios._check`), hand the files it wants written to the
  controller, and fail the test with the drift report.
- `RegistrationShuffle` (`registration_shuffle`): seeded orders for this test, and
  `assert_stable(build, units)`.

Tests never write files: they hand what they want written to the controller (`send`), which
writes it atomically. The messages ride on the test's teardown report as one attribute
(`MESSAGES_ATTRIBUTE`: plain data, so pytest-xdist carries it), never in `user_properties`,
which `--junitxml` writes into the user's report (decision 0017); the controller takes the
attribute off the report before any other plugin sees it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import pytest

from harness._shared import _actions, _printer
from harness._shared._errors import HarnessError
from harness.pytest_plugin._state import RunState

if TYPE_CHECKING:
    from harness._shared._files import FileContents
    from harness.agent._context import LoadSchedule
    from harness.prove._stable import StabilityResult
    from harness.scenarios._check import ScenarioCheck
    from harness.scenarios._formats import Scenario

U = TypeVar("U")

# Message keys: how tests talk to the controller (plain data, it crosses xdist)
PROP_WRITE: Final = "harness_write"
PROP_DRIFT: Final = "harness_drift"
PROP_USED: Final = "harness_fixture_used"
PROP_MOVES: Final = "harness_moves_header"
PROP_CHAIN: Final = "harness_prefix_chain"  # a captured test's gate: coverage, moves, exemption
PROP_FINDINGS: Final = "harness_rule_findings"  # a captured test's cache-rule findings
PROP_EMPTY: Final = "harness_no_requests"  # a marked test that captured nothing: warn or fail
PROP_PRINTED: Final = "harness_printed"  # the worker printer's words (`_printer.exported`)
# The teardown report's attribute that carries a test's messages to the controller.
MESSAGES_ATTRIBUTE: Final = "harness_messages"
MESSAGES = pytest.StashKey[list[tuple[str, Any]]]()  # on an item: its messages so far


def send(item: pytest.Item, key: str, value: Any) -> None:
    """Hand the controller a message about this test (it reads them from the teardown report)."""
    item.stash.setdefault(MESSAGES, []).append((key, value))


def messages_of(item: pytest.Item) -> list[list[Any]]:
    """The test's messages as the teardown report carries them, with the printer's words when
    this process learnt any (the controller's printer must redact what the worker's did)."""
    messages = [[key, value] for key, value in item.stash.get(MESSAGES, [])]
    words = _printer.exported()
    if any(words.values()):
        messages.append([PROP_PRINTED, words])
    return messages


shown = _actions.shown  # a message as a test failure prints it


def fail(message: str) -> NoReturn:
    """Fail the test with `message` (redacted, safe to print), without a traceback."""
    __tracebackhide__ = True
    pytest.fail(shown(message), pytrace=False)


def moves_header_reason(item: pytest.Item) -> str | None:
    """The reason of the test's `moves_header` marker; a UsageError when it has none."""
    marker = item.get_closest_marker("moves_header")
    if marker is None:
        return None
    reason = marker.kwargs.get("reason", marker.args[0] if marker.args else None)
    if not isinstance(reason, str) or not reason.strip():
        raise pytest.UsageError(
            f'{item.nodeid}: @pytest.mark.moves_header needs reason="..." saying why this '
            "test's header is expected to change"
        )
    return reason


def moves_header_only(item: pytest.Item) -> object | None:
    """The `only=` of the test's `moves_header` marker (None: the marker waives the whole test)."""
    marker = item.get_closest_marker("moves_header")
    return None if marker is None else marker.kwargs.get("only")


def queue_write(item: pytest.Item, files: Sequence[FileContents]) -> None:
    """Hand files to the controller to write (it writes only in a writing mode, never in CI)."""
    from harness._shared._paths import refuse_case_twin

    for path, _ in files:
        try:
            refuse_case_twin(Path(path))  # the test fails here, before the controller is asked
        except HarnessError as error:
            fail(str(error))
    for path, data in files:
        send(item, PROP_WRITE, {"path": str(path), "data": base64.b64encode(data).decode("ascii")})


def queue_drift(item: pytest.Item, message: str, markdown: str, seed: int, cost: str = "") -> None:
    """Tell the controller this test found drift (for the summary and CI annotations), and what
    it costs (`_budget.cost_delta`), when that is known."""
    path, line, _ = item.location
    send(
        item,
        PROP_DRIFT,
        {
            "nodeid": item.nodeid,
            "message": _printer.redact(message),
            "markdown": _printer.redact(markdown),
            "seed": seed,
            "cost": _printer.redact(cost),
            "file": path,
            "line": (line or 0) + 1,
        },
    )


class AgentHarness:
    """Boot a scenario on the reference runtime, record or replay it, shuffle it, check its pins."""

    def __init__(self, settings: RunState, item: pytest.Item) -> None:
        self.settings = settings
        self.item = item
        self.seed = settings.seed_for(item.nodeid)

    def folder_for(self, scenario: Scenario) -> Path:
        from harness._shared._paths import safe_component

        return self.settings.fixtures / safe_component(scenario.name)

    def check(
        self, scenario: Scenario | str | Path, *, shuffle: int | None = None
    ) -> ScenarioCheck:
        """Replay (or record) the scenario, shuffle its registration order, and fail on drift."""
        from harness.scenarios._check import check_scenario

        count = shuffle if shuffle is not None else self.settings.shuffle
        try:
            folder, declared = self._resolve(scenario)
            send(self.item, PROP_USED, str(folder.resolve()))
            checked = check_scenario(
                folder,
                declared,
                self.settings.mode,
                shuffle=count if count > 1 else 0,
                seed=self.seed,
                command=self.settings.reproduce(self.item.nodeid),
                moves_header=moves_header_reason(self.item),
            )
        except HarnessError as error:
            fail(f"harness: {error}")
        queue_write(self.item, checked.files)
        if checked.findings:
            self._fail(checked)
        return checked

    def _resolve(self, scenario: Scenario | str | Path) -> tuple[Path, Scenario]:
        from harness._shared._paths import safe_component
        from harness.scenarios._formats import Scenario, load_fixture

        if isinstance(scenario, Scenario):
            if scenario.pin is not None:
                safe_component(scenario.pin.name)
            return self.folder_for(scenario), scenario
        folder = Path(scenario)
        if not folder.is_absolute() and not folder.exists():
            folder = self.settings.fixtures / folder
        return folder, load_fixture(folder, scenario_only=True).scenario

    def _fail(self, checked: ScenarioCheck) -> None:
        failing = checked.findings
        text = "\n\n".join(f.to_text() for f in failing)
        markdown = "\n\n".join(
            f"**{f.kind}**: {f.message}\n\n" + (f.report.to_markdown() if f.report else "")
            for f in failing
        )
        message = (
            f"harness: scenario {checked.scenario!r} drifted (seed {self.seed}; "
            f"reproduce: {self.settings.reproduce(self.item.nodeid)})"
        )
        queue_drift(self.item, failing[0].message, markdown, self.seed)
        fail(f"{message}\n\n{text}")


class RegistrationShuffle:
    """Seeded permutations for this test, and the assertion that headers do not move under them."""

    def __init__(self, settings: RunState, item: pytest.Item) -> None:
        self.settings = settings
        self.item = item
        self.seed = settings.seed_for(item.nodeid)
        self.count = settings.shuffle

    def orders(self, units: Sequence[U]) -> list[list[U]]:
        from harness.prove._stable import orders_of

        return orders_of(units, self.count, self.seed)

    def schedules(self, plugin_names: Sequence[str]) -> list[LoadSchedule]:
        from harness.scenarios._shuffle import schedules

        return schedules(plugin_names, self.count, self.seed)

    def assert_stable(
        self,
        build: Callable[[list[U]], Any],
        units: Sequence[U],
        *,
        permutations: int | None = None,
        owners: dict[str, str | None] | None = None,
    ) -> StabilityResult[U]:
        from harness.prove._run_diff import HeaderDrift
        from harness.prove._stable import prove_stable

        __tracebackhide__ = True
        try:
            return prove_stable(
                build,
                units,
                permutations=permutations or self.count,
                seed=self.seed,
                owners=owners,
                command=self.settings.reproduce(self.item.nodeid),
            )
        except HeaderDrift as drift:
            report_drift(self.item, drift, self.seed)
            raise


def report_drift(item: pytest.Item, drift: Any, seed: int) -> None:
    """Queue a `HeaderDrift` for the summary: its first line, and its report as Markdown."""
    markdown = drift.report.to_markdown() if drift.report is not None else str(drift)
    headline = getattr(drift, "headline", None) or str(drift).splitlines()[0]
    queue_drift(item, headline, markdown, seed)
