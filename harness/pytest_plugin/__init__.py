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

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness._ci import detect_ci
from harness._distribution import install_command
from harness._errors import FixtureError, HarnessError
from harness._paths import FIXTURES
from harness._record_mode import RecordMode
from harness.pytest_plugin._api import (
    PROP_MOVES,
    AgentHarness,
    RegistrationShuffle,
    fail,
    moves_header_reason,
    report_drift,
    shown,
)
from harness.pytest_plugin._capture import (
    MARKER,
    drift_first,
    finish,
    gate,
    intercepting,
    session_for,
)
from harness.pytest_plugin._capture import (
    SESSION as CAPTURE_SESSION,
)
from harness.pytest_plugin._controller import Controller
from harness.pytest_plugin._hooks import Registrar
from harness.pytest_plugin._state import DEFAULT_SHUFFLE, RunState, state_from
from harness.pytest_plugin._unused import DELETE_FLAG, Verdict, after_run

__all__ = ["AgentHarness", "RegistrationShuffle", "RunState", "moves_header_reason"]

# -- options -------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "harness: prove request headers are byte-stable")
    group.addoption(
        "--harness-mode",
        choices=RecordMode.values(),
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
    group.addoption(
        "--harness-delete-unused",
        action="store_true",
        default=False,
        help="with --harness-mode=update (or record): delete the recordings no test used, after a "
        "run that collected the whole project and in which every test passed; without it "
        "unused recordings are only listed",
    )
    parser.addini("harness_mode", "default --harness-mode", default=RecordMode.CHECK.value)
    parser.addini("harness_shuffle", "default --harness-shuffle", default=str(DEFAULT_SHUFFLE))
    parser.addini("harness_seed", "default --harness-seed", default="")
    parser.addini("harness_fixtures", "default --harness-fixtures", default=FIXTURES)
    parser.addini(
        "harness_collect",
        "collect every recorded scenario under harness_fixtures as a test (replay, rebuild, "
        "shuffle, pins); a corrupt file is then a collection error",
        type="bool",
        default=False,
    )


SETTINGS = pytest.StashKey[RunState]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from harness.pytest_plugin import _hooks

    pluginmanager.add_hookspecs(_hooks)


REGISTRAR = pytest.StashKey[Registrar]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every conftest is loaded now: let them register providers and matchers for the run."""
    hook = session.config.hook.pytest_harness_configure
    if not hook.get_hookimpls():
        return
    registrar = session.config.stash.setdefault(REGISTRAR, Registrar())
    hook(config=session.config, harness=registrar)


def pytest_unconfigure(config: pytest.Config) -> None:
    registrar = config.stash.get(REGISTRAR, None)
    if registrar is not None:
        registrar.undo()


@pytest.hookimpl(trylast=True)  # after pytest-randomly has resolved its seed
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "moves_header(reason): this test's request header is expected to change; the reason is "
        "mandatory and every use is listed in the header drift summary",
    )
    config.addinivalue_line(
        "markers",
        "header_capture(**config): every httpx/httpx2 client this test uses sends provider "
        "requests through its capture session (its cassette); keyword arguments override "
        "harness_capture_config for this test",
    )
    settings = state_from(config)
    if config.getoption("harness_delete_unused") and not settings.mode.writes:
        raise pytest.UsageError(
            f"harness: {DELETE_FLAG} deletes files, and --harness-mode={settings.mode} never"
            " writes; run it with --harness-mode=update"
        )
    _refuse_snapshot_update_under_ci(config)
    config.stash[SETTINGS] = settings
    snapshot = sys.modules.get(
        "harness.pytest_plugin._snapshot"
    )  # a previous in-process run's refusals
    if snapshot is not None:
        snapshot.refused_deletions.clear()
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Controller(settings), "harness-controller")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(), "harness-xdist")


_NOT_SEARCHED = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})


def _refuse_snapshot_update_under_ci(config: pytest.Config) -> None:
    """Under CI, `--snapshot-update` would let syrupy write header snapshots and delete those it
    finds unused (a file no extension of the run claims, it unlinks itself): refused outright
    when the project has header snapshots."""
    found = detect_ci()
    if found is None or not getattr(config.option, "update_snapshots", False):
        return
    for folder, names, files in os.walk(config.rootpath):
        names[:] = [n for n in names if not n.startswith(".") and n not in _NOT_SEARCHED]
        if Path(folder).name == "__snapshots__" or "__snapshots__" in Path(folder).parts:
            held = next((f for f in files if f.endswith(".header.json")), None)
            if held is not None:
                raise pytest.UsageError(
                    f"harness: --snapshot-update would let syrupy write and delete header"
                    f" snapshots ({Path(folder, held)}), and this is a CI run"
                    f" ({found.describe()}): CI never writes; update them locally and commit"
                    " them"
                )


class _XdistHooks:
    """Registered only when pytest-xdist is present: hand the resolved seed to every worker, and
    learn which tests the workers collected."""

    def pytest_configure_node(self, node: Any) -> None:
        settings = node.config.stash[SETTINGS]
        node.workerinput["harness_seed"] = settings.seed
        node.workerinput["harness_seed_source"] = settings.seed_source

    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        node.config.stash[SETTINGS].collected.update(ids)


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = config.stash[SETTINGS]
    lines = [
        f"harness: mode {s.mode}, {s.shuffle} registration orders per scenario, "
        f"seed {s.seed} (from {s.seed_source}), fixtures {s.fixtures}"
    ]
    if s.shuffle < 3:
        lines.append(
            f"harness: --harness-shuffle={s.shuffle} skips the forward and reversed runs that"
            " make a race's detection certain: races are caught by luck"
        )
    return lines


# -- the marker ----------------------------------------------------------------------------------


def pytest_runtest_setup(item: pytest.Item) -> None:
    try:
        reason = moves_header_reason(item)
    except pytest.UsageError as error:
        fail(str(error))
    if reason is not None:
        item.user_properties.append((PROP_MOVES, reason))


# -- recorded scenarios as tests ---------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if not config.getini("harness_collect"):
        return None
    from harness._paths import LOG_FILE, SCENARIO_FILE

    if file_path.name not in (SCENARIO_FILE, LOG_FILE):
        return None
    fixtures = config.stash[SETTINGS].fixtures.resolve()
    if fixtures not in file_path.resolve().parents:
        return None
    if file_path.name == LOG_FILE:  # a recording whose scenario.json was renamed or deleted
        if (file_path.parent / SCENARIO_FILE).exists():
            return None
        return OrphanRecording.from_parent(parent, path=file_path)
    return ScenarioFile.from_parent(parent, path=file_path)


class OrphanRecording(pytest.File):
    """A recording without its scenario.json: a collection error, not a scenario skipped."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness._paths import LOG_FILE, SCENARIO_FILE

        raise self.CollectError(
            f"harness: {self.path.parent}: holds {LOG_FILE} but no {SCENARIO_FILE} (was it"
            " renamed or deleted? restore it from git, or remove the folder)"
        )


class ScenarioFile(pytest.File):
    """A recorded scenario folder; its files are decoded strictly when collected."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.scenarios._formats import load_fixture

        settings = self.config.stash[SETTINGS]
        try:
            fixture = load_fixture(self.path.parent, scenario_only=settings.mode.writes)
        except FixtureError as error:
            raise self.CollectError(shown(f"harness: {error}")) from None
        yield ScenarioItem.from_parent(self, name=fixture.scenario.name)


class ScenarioItem(pytest.Item):
    """Replay, rebuild, shuffle and pin-check one recorded scenario."""

    def runtest(self) -> None:
        AgentHarness(self.config.stash[SETTINGS], self).check(self.path.parent)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.name}"


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def harness_settings(request: pytest.FixtureRequest) -> RunState:
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
        if report.failed and call.excinfo is not None and not item.config.option.fulltrace:
            text = drift_first(call.excinfo)  # the report before the SDK's stack frames
            if text is not None:
                report.longrepr = text
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    result = yield  # a test that failed has failed already: no gate on top
    session = item.stash.get(CAPTURE_SESSION, None)
    if session is not None:
        gate(item, session, item.config.stash[SETTINGS])
    return result


@pytest.fixture
def harness_upstream() -> Any:
    """Where `header_capture` forwards in record and update modes: None is the network.

    Override it in a conftest to record against a stand-in (an `httpx2.MockTransport`).
    """
    return None


@pytest.fixture
def harness_capture_config() -> Any:
    """The project's capture settings, like pytest-recording's `vcr_config`: override it in a
    conftest to return a dict (see `harness.capture.CaptureConfig` for the keys)."""
    return {}


@pytest.fixture
def header_capture(
    request: pytest.FixtureRequest, harness_upstream: Any, harness_capture_config: Any
) -> Iterator[Any]:
    """A capture session for SDK clients: replays the test's cassette, or records it.

    Every captured test is gated on the prefix chain: each request must extend the cached
    prefix of the request it continues, unless the test is marked `moves_header(reason=...)`.
    """
    settings = request.config.stash[SETTINGS]
    item = request.node
    session = session_for(item, settings, upstream=harness_upstream, config=harness_capture_config)
    yield session
    finish(item, session, settings, failed=item.stash.get(_CALL_FAILED, False))


@pytest.fixture(autouse=True)
def _harness_intercept(request: pytest.FixtureRequest) -> Iterator[None]:
    """`@pytest.mark.header_capture`: every client the test uses sends through its session."""
    if request.node.get_closest_marker(MARKER) is None:
        yield
        return
    with intercepting(request.getfixturevalue("header_capture")):
        yield


@pytest.fixture
def prove_stable(request: pytest.FixtureRequest, header_capture: Any) -> Callable[..., Any]:
    """`prove_stable(build, units=None, permutations=None, hash_seeds=None)`, seeded for this
    test: `build` runs under perturbed asyncio, thread, filesystem and entry-point orders (and
    the units in new orders, when given); a drift fails the test with its cause."""
    from harness.prove._run_diff import HeaderDrift
    from harness.prove._stable import make_prove_stable_fixture

    settings = request.config.stash[SETTINGS]
    item = request.node
    seed = settings.seed_for(item.nodeid)
    inner = make_prove_stable_fixture(
        seed, settings.shuffle, settings.reproduce(item.nodeid), header_capture
    )

    def prove(
        build: Any,
        units: Sequence[Any] | None = None,
        permutations: int | None = None,
        hash_seeds: Sequence[int] | int | None = None,
        **options: Any,
    ) -> Any:
        __tracebackhide__ = True
        try:
            return inner(build, units, permutations, hash_seeds, **options)
        except HeaderDrift as drift:
            report_drift(item, drift, seed)
            raise
        except HarnessError as error:  # a build that returned no header, a bad argument...
            if isinstance(error, AssertionError):
                raise
            notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", ()))
            fail(f"harness: {error}{notes}")

    return prove


@pytest.fixture
def header_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot`, storing a header's exact bytes in one binary file per snapshot."""
    try:
        from harness.pytest_plugin._snapshot import HeaderSnapshotExtension
    except ImportError:  # pragma: no cover - syrupy is in the pytest extra
        pytest.fail(
            f"harness: header_snapshot needs syrupy: {install_command('pytest')}", pytrace=False
        )
    found = detect_ci()
    if found is not None and request.config.getoption("update_snapshots", False):
        pytest.fail(
            f"harness: --snapshot-update writes and deletes header snapshots, and this is a CI"
            f" run ({found.describe()}): CI never writes; update them locally and commit them",
            pytrace=False,
        )
    return request.getfixturevalue("snapshot").use_extension(HeaderSnapshotExtension)


# -- the summary ---------------------------------------------------------------------------------


@pytest.hookimpl(trylast=True)  # after syrupy's, which deletes unused snapshots
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        return
    settings = config.stash[SETTINGS]
    if settings.unwritten and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a recording that was not saved
    if _refused_deletions() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # syrupy was asked to delete under CI
    config.stash[_UNUSED] = after_run(
        session, settings, settings.fixtures, writing=settings.mode.writes
    )


def _refused_deletions() -> list[tuple[str, str]]:
    snapshot = sys.modules.get(
        "harness.pytest_plugin._snapshot"
    )  # imported only when header_snapshot is used
    return list(getattr(snapshot, "refused_deletions", []))


_UNUSED = pytest.StashKey[tuple[Verdict, list[str]]]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    from harness.pytest_plugin._summary import (
        write_summary,  # the secret scan loads at the end, not at start
    )

    verdict, done = config.stash.get(_UNUSED, (Verdict([], False, False, []), []))
    write_summary(
        terminalreporter,
        config.stash[SETTINGS],
        verdict,
        done,
        asked=bool(config.getoption("harness_delete_unused")),
        refused=_refused_deletions(),
    )
