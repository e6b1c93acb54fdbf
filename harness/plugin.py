"""The harness pytest plugin: registration shuffles, record and update modes, header pins, CI gate.

Registered through the `pytest11` entry point as `harness`; disable with `-p no:harness`.

Seeding: each test's shuffle seed is `crc32("<run seed>:<node id>")`, computed without touching
the global `random`. The run seed is pytest-randomly's (`--randomly-seed`) when that plugin is
active; an explicit `--harness-seed` on the command line wins over it; with pytest-randomly absent
or disabled it is `--harness-seed` (or the `harness_seed` ini value), and otherwise a fresh one.
`--harness-seed=last` reuses the previous run's seed from the pytest cache. The seed is printed in
the report header and in every failure, with the command that reproduces it.

Writing: only `record`, `update` and `update-new-only` write, never under CI, and always on the
controller process: a test hands the files it wants written to its report (`user_properties`), and
the controller writes them atomically, so `-n 2` cannot interleave a file.
"""

from __future__ import annotations

import base64
import os
import random
import shlex
import shutil
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import pytest

from harness.fixture import (
    ANSWERS_FILE,
    LOG_FILE,
    REQUESTS_FILE,
    SCENARIO_FILE,
    AnswersFile,
    FileContents,
    Fixture,
    FixtureError,
    LogFile,
    RequestsFile,
    Scenario,
    decode,
    encode,
    load_fixture,
    write_atomic,
    writes_allowed,
)
from harness.paths import UnsafeName, refuse_case_twin, safe_component
from harness.secrets import refuse_secrets

if TYPE_CHECKING:  # the rest of the harness is imported when a fixture first needs it
    from harness.agent.context import LoadSchedule
    from harness.pins import Pin
    from harness.replay import Finding, ReplayResult
    from harness.scenario import Run
    from harness.shuffle import ShuffleResult
    from harness.stability import StabilityResult

U = TypeVar("U")
T = TypeVar("T")

MODES = ("check", "record", "update", "update-new-only")
WRITING_MODES = ("record", "update", "update-new-only")
CACHE_KEY = "harness/seed"

# user_properties keys: how tests talk to the controller (they cross xdist as plain data)
PROP_WRITE = "harness_write"
PROP_DRIFT = "harness_drift"
PROP_USED = "harness_fixture_used"
PROP_MOVES = "harness_moves_header"


# -- options -------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "harness: prove request headers are byte-stable")
    group.addoption(
        "--harness-mode",
        choices=MODES,
        default=None,
        help="check (default): replay and compare, never write; record: record every scenario "
        "anew; update: rewrite what changed; update-new-only: record only missing scenarios. "
        "The writing modes are refused under CI. [ini: harness_mode]",
    )
    group.addoption(
        "--harness-shuffle",
        type=int,
        default=None,
        metavar="N",
        help="registration orders per scenario, always including identity and reversed "
        "(default 8; 1 disables the shuffle). [ini: harness_shuffle]",
    )
    group.addoption(
        "--harness-seed",
        default=None,
        metavar="SEED|last",
        help="shuffle seed when pytest-randomly is absent or disabled (or to override it); "
        "'last' reuses the previous run's. [ini: harness_seed]",
    )
    group.addoption(
        "--harness-fixtures",
        default=None,
        metavar="DIR",
        help="folder of recorded scenarios, relative to the rootdir (default fixtures). "
        "[ini: harness_fixtures]",
    )
    parser.addini("harness_mode", "default --harness-mode", default="check")
    parser.addini("harness_shuffle", "default --harness-shuffle", default="8")
    parser.addini("harness_seed", "default --harness-seed", default="")
    parser.addini("harness_fixtures", "default --harness-fixtures", default="fixtures")
    parser.addini(
        "harness_collect",
        "collect every recorded scenario under harness_fixtures as a test (replay, rebuild, "
        "shuffle, pins); a corrupt file is then a collection error",
        type="bool",
        default=False,
    )


@dataclass
class Settings:
    mode: str
    shuffle: int
    seed: int
    seed_source: str  # "pytest-randomly", "--harness-seed", "last run", "random"
    fixtures: Path
    randomly_installed: bool
    drifts: list[dict[str, Any]] = field(default_factory=list)
    moves: list[tuple[str, str]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    written: list[Path] = field(default_factory=list)
    unwritten: list[str] = field(default_factory=list)  # writes the controller could not make
    deselected: int = 0

    def seed_for(self, nodeid: str) -> int:
        return zlib.crc32(f"{self.seed}:{nodeid}".encode())

    def reproduce(self, nodeid: str) -> str:
        if self.seed_source == "pytest-randomly":
            flags = f"-p randomly --randomly-seed={self.seed}"
        elif self.randomly_installed:
            flags = f"-p no:randomly --harness-seed={self.seed}"
        else:
            flags = f"--harness-seed={self.seed}"
        return f"pytest {shlex.quote(nodeid)} {flags}"


SETTINGS = pytest.StashKey[Settings]()


def _option(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"harness_{name}")
    return value if value is not None else config.getini(f"harness_{name}")


def _resolve_seed(config: pytest.Config) -> tuple[int, str]:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "harness_seed" in workerinput:
        return int(workerinput["harness_seed"]), str(workerinput["harness_seed_source"])
    explicit = config.getoption("harness_seed")
    randomly = getattr(config.option, "randomly_seed", None)
    if (
        explicit is None
        and config.pluginmanager.hasplugin("randomly")
        and isinstance(randomly, int)
    ):
        return randomly, "pytest-randomly"
    value = explicit if explicit is not None else config.getini("harness_seed")
    cache = getattr(config, "cache", None)
    if value == "last":
        previous = cache.get(CACHE_KEY, None) if cache is not None else None
        if isinstance(previous, int):
            return previous, "last run"
        return random.Random().getrandbits(32), "random (no previous run)"
    if value:
        try:
            return int(value), "--harness-seed"
        except ValueError:
            raise pytest.UsageError(
                f"harness: --harness-seed takes an integer or 'last', not {value!r}"
            ) from None
    return random.Random().getrandbits(32), "random"


@pytest.hookimpl(trylast=True)  # after pytest-randomly has resolved its seed
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "moves_header(reason): this test's request header is expected to change; the reason is "
        "mandatory and every use is listed in the header drift summary",
    )
    mode = str(_option(config, "mode"))
    if mode not in MODES:
        raise pytest.UsageError(
            f"harness: harness_mode must be one of {', '.join(MODES)}, not {mode!r}"
        )
    if mode in WRITING_MODES and not writes_allowed():
        raise pytest.UsageError(
            f"harness: --harness-mode={mode} writes fixtures, and this is a CI run (CI or a CI "
            "provider's variable is set). CI never writes: run `pytest --harness-mode=update` "
            "locally, review the diff, and commit the files."
        )
    try:
        shuffle = int(_option(config, "shuffle"))
    except ValueError:
        raise pytest.UsageError("harness: --harness-shuffle takes a whole number") from None
    if shuffle < 1:
        raise pytest.UsageError("harness: --harness-shuffle must be at least 1")
    seed, source = _resolve_seed(config)
    cache = getattr(config, "cache", None)
    if cache is not None and not hasattr(config, "workerinput"):
        cache.set(CACHE_KEY, seed)
    fixtures = Path(str(_option(config, "fixtures")))
    if not fixtures.is_absolute():
        fixtures = config.rootpath / fixtures
    settings = Settings(
        mode, shuffle, seed, source, fixtures, config.pluginmanager.hasplugin("randomly")
    )
    config.stash[SETTINGS] = settings
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Controller(settings), "harness-controller")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "harness-xdist")


class _XdistHooks:
    """Registered only when pytest-xdist is present: hand the resolved seed to every worker."""

    def pytest_configure_node(self, node: Any) -> None:
        settings = node.config.stash[SETTINGS]
        node.workerinput["harness_seed"] = settings.seed
        node.workerinput["harness_seed_source"] = settings.seed_source


def pytest_report_header(config: pytest.Config) -> str:
    s = config.stash[SETTINGS]
    return (
        f"harness: mode {s.mode}, {s.shuffle} registration orders per scenario, "
        f"seed {s.seed} (from {s.seed_source}), fixtures {s.fixtures}"
    )


# -- the marker ----------------------------------------------------------------------------------


def moves_header_reason(item: pytest.Item) -> str | None:
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


def pytest_runtest_setup(item: pytest.Item) -> None:
    try:
        reason = moves_header_reason(item)
    except pytest.UsageError as error:
        pytest.fail(str(error), pytrace=False)
    if reason is not None:
        item.user_properties.append((PROP_MOVES, reason))


# -- talking to the controller -------------------------------------------------------------------


def _queue_write(item: pytest.Item, files: Sequence[FileContents]) -> None:
    for path, _ in files:
        try:
            refuse_case_twin(Path(path))  # the test fails here, before the controller is asked
        except UnsafeName as error:
            pytest.fail(str(error), pytrace=False)
    for path, data in files:
        item.user_properties.append(
            (PROP_WRITE, {"path": str(path), "data": base64.b64encode(data).decode("ascii")})
        )


def _queue_drift(item: pytest.Item, message: str, markdown: str, seed: int) -> None:
    path, line, _ = item.location
    item.user_properties.append(
        (
            PROP_DRIFT,
            {
                "nodeid": item.nodeid,
                "message": message,
                "markdown": markdown,
                "seed": seed,
                "file": path,
                "line": (line or 0) + 1,
            },
        )
    )


class _Controller:
    """Registered on the controller only (no xdist, or xdist's main process): acts on reports."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":  # the teardown report carries every property of the test
            return
        settings = self.settings
        value: Any
        for key, value in report.user_properties:
            if key == PROP_WRITE and settings.mode in WRITING_MODES and writes_allowed():
                path = Path(value["path"])
                try:
                    if write_atomic(path, base64.b64decode(value["data"])):
                        settings.written.append(path)
                except (UnsafeName, OSError) as error:  # a twin made meanwhile, a full disk...
                    settings.unwritten.append(f"{path}: {error}")
            elif key == PROP_DRIFT:
                settings.drifts.append(value)
            elif key == PROP_USED:
                settings.used.add(value)
            elif key == PROP_MOVES:
                settings.moves.append((report.nodeid, value))

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.settings.deselected += len(items)


# -- recorded scenarios as tests ---------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if file_path.name != SCENARIO_FILE or not config.getini("harness_collect"):
        return None
    fixtures = config.stash[SETTINGS].fixtures.resolve()
    if fixtures not in file_path.resolve().parents:
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


class ScenarioFile(pytest.File):
    """A recorded scenario folder; its files are decoded strictly when collected."""

    def collect(self) -> Iterator[pytest.Item]:
        settings = self.config.stash[SETTINGS]
        try:
            fixture = load_fixture(self.path.parent, scenario_only=settings.mode in WRITING_MODES)
        except FixtureError as error:
            raise self.CollectError(f"harness: {error}") from None
        yield ScenarioItem.from_parent(self, name=fixture.scenario.name)


class ScenarioItem(pytest.Item):
    """Replay, rebuild, shuffle and pin-check one recorded scenario."""

    def runtest(self) -> None:
        AgentHarness(self.config.stash[SETTINGS], self).check(self.path.parent)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.name}"


# -- fixtures ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What `agent_harness.check` found; raised as a failure when it is not ok."""

    scenario: str
    result: ReplayResult | None
    shuffle: ShuffleResult | None
    findings: list[Finding]
    moved: list[Finding]

    @property
    def ok(self) -> bool:
        return not self.findings


class AgentHarness:
    """Boot a scenario on the reference runtime, record or replay it, shuffle it, check its pins."""

    def __init__(self, settings: Settings, item: pytest.Item) -> None:
        self.settings = settings
        self.item = item
        self.seed = settings.seed_for(item.nodeid)

    def folder_for(self, scenario: Scenario) -> Path:
        return self.settings.fixtures / safe_component(scenario.name)

    def check(self, scenario: Scenario | str | Path, *, shuffle: int | None = None) -> Outcome:
        """Replay (or record) the scenario, shuffle its registration order, and fail on drift."""
        from harness.replay import replay_fixture
        from harness.shuffle import shuffle_scenario

        folder, declared = self._resolve(scenario)
        self.item.user_properties.append((PROP_USED, str(folder.resolve())))
        mode = self.settings.mode
        recorded = (folder / LOG_FILE).exists()
        staged: Pin | None = None
        if mode == "record" or (mode == "update-new-only" and not recorded):
            fixture, staged = self._record(folder, declared)
        elif not recorded:
            pytest.fail(
                f"harness: no recording for scenario {declared.name!r} in {folder}; record it "
                "locally with `pytest --harness-mode=record` (or update-new-only) and commit it. "
                "Nothing was written.",
                pytrace=False,
            )
        else:
            fixture = self._load(folder, declared)
        writing = mode in WRITING_MODES
        result = replay_fixture(fixture, pin=staged, missing_pin_ok=writing)
        if mode == "update" and not result.ok:
            fixture, staged = self._update(folder, fixture, result)
            result = replay_fixture(fixture, pin=staged, missing_pin_ok=True)
        count = shuffle if shuffle is not None else self.settings.shuffle
        shuffled = None
        if count > 1:
            answers = fixture.answers.answers if fixture.answers else declared.script
            shuffled = shuffle_scenario(
                fixture.scenario,
                answers,
                count=count,
                seed=self.seed,
                command=self.settings.reproduce(self.item.nodeid),
            )
        return self._judge(fixture, result, shuffled)

    # -- steps ---------------------------------------------------------------------------------
    def _resolve(self, scenario: Scenario | str | Path) -> tuple[Path, Scenario]:
        if isinstance(scenario, Scenario):
            try:
                if scenario.pin is not None:
                    safe_component(scenario.pin.name)
                return self.folder_for(scenario), scenario
            except UnsafeName as error:
                pytest.fail(f"harness: {error}", pytrace=False)
        folder = Path(scenario)
        if not folder.is_absolute() and not folder.exists():
            folder = self.settings.fixtures / folder
        try:
            return folder, load_fixture(folder, scenario_only=True).scenario
        except FixtureError as error:
            pytest.fail(f"harness: {error}", pytrace=False)

    def _load(self, folder: Path, declared: Scenario) -> Fixture:
        try:
            fixture = load_fixture(folder)
        except FixtureError as error:
            pytest.fail(f"harness: {error}", pytrace=False)
        if encode(fixture.scenario) != encode(declared):
            if self.settings.mode == "update":
                return msgspec.structs.replace(fixture, scenario=declared)
            pytest.fail(
                f"harness: the scenario {declared.name!r} in this test differs from "
                f"{folder / SCENARIO_FILE}; re-record it with `pytest --harness-mode=update`",
                pytrace=False,
            )
        return fixture

    def _record(self, folder: Path, scenario: Scenario) -> tuple[Fixture, Pin | None]:
        from harness.agent.llm import ScriptedAdapter
        from harness.record import recording_files
        from harness.scenario import run_sync

        run = run_sync(scenario, ScriptedAdapter(scenario.script))
        files = [(folder / SCENARIO_FILE, encode(scenario)), *recording_files(folder, run)]
        refuse_secrets(files[:1])  # recording_files scanned the rest
        _queue_write(self.item, files)
        return self._staged(folder, scenario, files, run)

    def _update(
        self, folder: Path, fixture: Fixture, result: ReplayResult
    ) -> tuple[Fixture, Pin | None]:
        """Refresh from the replay when the answers still fit; re-record from the script if not."""
        from harness.record import recording_files

        run = result.run
        if run is None or any(f.kind in ("error", "answers") for f in result.findings):
            return self._record(folder, fixture.scenario)
        files = [
            (folder / SCENARIO_FILE, encode(fixture.scenario)),
            *recording_files(folder, run, answers=False),
        ]
        refuse_secrets(files[:1])
        _queue_write(self.item, files)
        staged, pin = self._staged(folder, fixture.scenario, files, run)
        return msgspec.structs.replace(staged, answers=fixture.answers), pin

    @staticmethod
    def _staged(
        folder: Path, scenario: Scenario, files: list[FileContents], run: Run
    ) -> tuple[Fixture, Pin | None]:
        """The fixture and pin the queued files will make, before the controller writes them."""
        from harness.pins import pin_from_headers

        data = {path.name: (path, raw) for path, raw in files if path.parent == folder}

        log = decode(data[LOG_FILE][1], LogFile, data[LOG_FILE][0])
        requests = decode(data[REQUESTS_FILE][1], RequestsFile, data[REQUESTS_FILE][0])
        answers = (
            decode(data[ANSWERS_FILE][1], AnswersFile, data[ANSWERS_FILE][0])
            if ANSWERS_FILE in data
            else None
        )
        fixture = Fixture(str(folder), scenario, log, requests, answers)
        owns = scenario.pin is not None and scenario.pin.owner and run.headers
        return fixture, pin_from_headers(run.headers) if owns else None

    def _judge(
        self, fixture: Fixture, result: ReplayResult, shuffled: ShuffleResult | None
    ) -> Outcome:
        from harness.replay import Finding

        findings = list(result.findings)
        if shuffled is not None and not shuffled.stable:
            findings.append(
                Finding(
                    "shuffle", _shuffle_message(shuffled, self.settings, self.item), shuffled.report
                )
            )
        moved: list[Finding] = []
        reason = moves_header_reason(self.item)
        if reason is not None:
            moved = [f for f in findings if f.kind in ("pin", "log", "requests")]
            findings = [f for f in findings if f not in moved]
        unstable = fixture.scenario.expect == "unstable"
        caught = any(f.kind in ("rebuild", "shuffle") for f in findings)
        failing = (
            (
                []
                if caught
                else [Finding("error", "expected unstable, but replay and shuffle caught nothing")]
            )
            if unstable
            else findings
        )
        outcome = Outcome(fixture.scenario.name, result, shuffled, failing, moved)
        if failing:
            text = "\n\n".join(f.to_text() for f in failing)
            markdown = "\n\n".join(
                f"**{f.kind}**: {f.message}\n\n" + (f.report.to_markdown() if f.report else "")
                for f in failing
            )
            message = (
                f"harness: scenario {fixture.scenario.name!r} drifted (seed {self.seed}; "
                f"reproduce: {self.settings.reproduce(self.item.nodeid)})"
            )
            _queue_drift(self.item, failing[0].message, markdown, self.seed)
            pytest.fail(f"{message}\n\n{text}", pytrace=False)
        return outcome


def _shuffle_message(shuffled: ShuffleResult, settings: Settings, item: pytest.Item) -> str:
    report = shuffled.report
    orders = ""
    if report is not None and report.reproduce is not None:
        orders = (
            f"\n  order A: {', '.join(report.reproduce.order_a)}"
            f"\n  order B: {', '.join(report.reproduce.order_b)}"
        )
    return (
        f"registration shuffle: header bytes moved between registration orders "
        f"(seed {shuffled.seed}, run {shuffled.runs} of the shuffle){orders}\n"
        f"  reproduce: {settings.reproduce(item.nodeid)}"
    )


class RegistrationShuffle:
    """Seeded permutations for this test, and the assertion that headers do not move under them."""

    def __init__(self, settings: Settings, item: pytest.Item) -> None:
        self.settings = settings
        self.item = item
        self.seed = settings.seed_for(item.nodeid)
        self.count = settings.shuffle

    def orders(self, units: Sequence[U]) -> list[list[U]]:
        from harness.stability import orders_of

        return orders_of(units, self.count, self.seed)

    def schedules(self, plugin_names: Sequence[str]) -> list[LoadSchedule]:
        from harness.shuffle import schedules

        return schedules(plugin_names, self.count, self.seed)

    def assert_stable(
        self,
        build: Callable[[list[U]], Any],
        units: Sequence[U],
        *,
        permutations: int | None = None,
        owners: dict[str, str | None] | None = None,
    ) -> StabilityResult[U]:
        from harness.stability import HeaderDrift, prove_stable

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
            markdown = drift.report.to_markdown() if drift.report is not None else str(drift)
            _queue_drift(self.item, str(drift).splitlines()[0], markdown, self.seed)
            raise


@pytest.fixture
def harness_settings(request: pytest.FixtureRequest) -> Settings:
    return request.config.stash[SETTINGS]


@pytest.fixture
def agent_harness(request: pytest.FixtureRequest) -> AgentHarness:
    """Record, replay, rebuild, shuffle and pin-check scenarios on the reference runtime."""
    return AgentHarness(request.config.stash[SETTINGS], request.node)


@pytest.fixture
def registration_shuffle(request: pytest.FixtureRequest) -> RegistrationShuffle:
    """This test's seeded registration orders, and `assert_stable(build, units)`."""
    return RegistrationShuffle(request.config.stash[SETTINGS], request.node)


_CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


@pytest.fixture
def harness_upstream() -> Any:
    """Where `header_capture` forwards in record and update modes: None is the network.

    Override it in a conftest to record against a stand-in (an `httpx2.MockTransport`).
    """
    return None


@pytest.fixture
def header_capture(request: pytest.FixtureRequest, harness_upstream: Any) -> Iterator[Any]:
    """A capture session for SDK clients: replays the test's cassette, or records it."""
    from harness.capture import CaptureSession, cassette_path_for

    settings = request.config.stash[SETTINGS]
    item = request.node
    try:
        session = CaptureSession.for_test(
            cassette_path_for(settings.fixtures / "cassettes", item.nodeid),
            settings.mode,
            writes_allowed=writes_allowed(),
            upstream=harness_upstream,
            record_hint="record it locally: pytest --harness-mode=update-new-only",
        )
    except FixtureError as error:
        pytest.fail(f"harness: {error}", pytrace=False)
    session.moves_header = moves_header_reason(item)
    item.user_properties.append((PROP_USED, str(session.cassette)))
    yield session
    files, breaks = session.finish()  # SecretLeak propagates: the test errors, nothing is written
    _queue_write(item, files)
    if item.stash.get(_CALL_FAILED, False):
        return  # the test already failed; a teardown error would only repeat it
    if session.errors:  # replay errors that the code under test may have swallowed
        pytest.fail("\n\n".join(map(str, session.errors)), pytrace=False)
    if breaks and session.moves_header is None:
        text = "\n\n".join(b.to_text() for b in breaks)
        _queue_drift(item, text.splitlines()[0], text, settings.seed_for(item.nodeid))
        pytest.fail(text, pytrace=False)


@pytest.fixture
def prove_stable(request: pytest.FixtureRequest, header_capture: Any) -> Callable[..., Any]:
    """`prove_stable(build, units, permutations=None, hash_seeds=None)`, seeded for this test."""
    from harness.stability import HeaderDrift, make_prove_stable_fixture

    settings = request.config.stash[SETTINGS]
    item = request.node
    seed = settings.seed_for(item.nodeid)
    inner = make_prove_stable_fixture(
        seed, settings.shuffle, settings.reproduce(item.nodeid), header_capture
    )

    def prove(
        build: Any,
        units: Sequence[Any],
        permutations: int | None = None,
        hash_seeds: Sequence[int] | None = None,
        **options: Any,
    ) -> Any:
        __tracebackhide__ = True
        try:
            return inner(build, units, permutations, hash_seeds, **options)
        except HeaderDrift as drift:
            markdown = drift.report.to_markdown() if drift.report is not None else str(drift)
            _queue_drift(item, str(drift).splitlines()[0], markdown, seed)
            raise

    return prove


@pytest.fixture
def header_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot`, storing a header's exact bytes in one binary file per snapshot."""
    try:
        from harness.snapshot import HeaderSnapshotExtension
    except ImportError:  # pragma: no cover - syrupy is in the pytest extra
        pytest.fail(
            "harness: header_snapshot needs syrupy: pip install 'harness[pytest]'", pytrace=False
        )
    return request.getfixturevalue("snapshot").use_extension(HeaderSnapshotExtension)


# -- the summary ---------------------------------------------------------------------------------


def _full_run(session: pytest.Session, settings: Settings) -> bool:
    options = session.config.option
    if settings.deselected or options.keyword or options.markexpr:
        return False
    if (
        getattr(options, "lf", False)
        or getattr(options, "failedfirst", False)
        or getattr(options, "stepwise", False)
    ):
        return False
    return all(Path(arg).is_dir() for arg in session.config.args)


def _unused(settings: Settings) -> list[Path]:
    if not settings.fixtures.is_dir() or not settings.used:
        return []
    return sorted(
        folder
        for folder in (p.parent for p in settings.fixtures.glob(f"*/{SCENARIO_FILE}"))
        if str(folder.resolve()) not in settings.used
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        return
    settings = config.stash[SETTINGS]
    if settings.unwritten and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a recording that was not saved
    settings_unused = _unused(settings) if _full_run(session, settings) else []
    config.stash[_UNUSED] = settings_unused
    if (
        settings_unused
        and settings.mode == "update"
        and writes_allowed()
        and not session.testsfailed
    ):
        for folder in settings_unused:
            shutil.rmtree(folder)


_UNUSED = pytest.StashKey[list[Path]]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    s = config.stash[SETTINGS]
    unused = config.stash.get(_UNUSED, [])
    write = terminalreporter.write_line
    terminalreporter.section("header drift")
    write(
        f"harness: mode {s.mode}, seed {s.seed} (from {s.seed_source}), "
        f"{s.shuffle} orders per scenario"
    )
    if s.drifts:
        write(f"{len(s.drifts)} test(s) found header drift:")
        for drift in s.drifts:
            write(f"  {drift['nodeid']}: {drift['message']}")
    else:
        write("no header drift")
    if s.moves:
        write(f"{len(s.moves)} test(s) marked moves_header:")
        for nodeid, reason in s.moves:
            write(f"  {nodeid}: {reason}")
    for path in s.written:
        write(f"wrote {path}")
    for problem in s.unwritten:
        write(f"could not write {problem}", red=True)
    if unused:
        deleted = s.mode == "update" and writes_allowed()
        write(f"{len(unused)} unused recorded scenario(s){' deleted' if deleted else ''}:")
        for folder in unused:
            write(f"  {folder}")
        if not deleted:
            write("  (run with --harness-mode=update to delete them)")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        _github(s, write)


def _github(settings: Settings, write: Callable[[str], None]) -> None:
    for drift in settings.drifts:
        message = drift["message"].replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        write(f"::error file={drift['file']},line={drift['line']},title=header drift::{message}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return
    lines = [
        "## Header drift",
        "",
        f"Seed `{settings.seed}` ({settings.seed_source}), mode `{settings.mode}`.",
        "",
    ]
    if not settings.drifts:
        lines.append("No header drift.")
    for drift in settings.drifts:
        lines += [f"### `{drift['nodeid']}`", "", drift["markdown"], ""]
    if settings.moves:
        lines += ["", "Tests marked `moves_header`:", ""]
        lines += [f"- `{nodeid}`: {reason}" for nodeid, reason in settings.moves]
    with open(summary, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
