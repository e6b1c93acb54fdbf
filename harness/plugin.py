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
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.ci import (
    MODES,
    WRITING_MODES,
    annotation,
    on_github_actions,
    write_step_summary,
    writes_allowed,
)
from harness.distribution import install_command
from harness.errors import FixtureError, HarnessError
from harness.pytest_api import (
    DEFAULT_SHUFFLE,
    PROP_CHAIN,
    PROP_DRIFT,
    PROP_MOVES,
    PROP_USED,
    PROP_WRITE,
    AgentHarness,
    RegistrationShuffle,
    Settings,
    moves_header_reason,
    report_drift,
    settings_from,
)
from harness.pytest_capture import (
    MARKER,
    drift_first,
    finish,
    gate,
    intercepting,
    moves_line,
    session_for,
    summary_lines,
    take_chain,
)
from harness.pytest_capture import (
    SESSION as CAPTURE_SESSION,
)

__all__ = ["AgentHarness", "RegistrationShuffle", "Settings", "moves_header_reason"]

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
    parser.addini("harness_shuffle", "default --harness-shuffle", default=str(DEFAULT_SHUFFLE))
    parser.addini("harness_seed", "default --harness-seed", default="")
    parser.addini("harness_fixtures", "default --harness-fixtures", default="fixtures")
    parser.addini(
        "harness_collect",
        "collect every recorded scenario under harness_fixtures as a test (replay, rebuild, "
        "shuffle, pins); a corrupt file is then a collection error",
        type="bool",
        default=False,
    )


SETTINGS = pytest.StashKey[Settings]()


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
    settings = settings_from(config)
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
        pytest.fail(str(error), pytrace=False)
    if reason is not None:
        item.user_properties.append((PROP_MOVES, reason))


# -- talking to the controller -------------------------------------------------------------------


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
                    from harness.files import write_atomic

                    if write_atomic(path, base64.b64decode(value["data"])):
                        settings.written.append(path)
                except (HarnessError, OSError) as error:  # a twin made meanwhile, a full disk...
                    settings.unwritten.append(f"{path}: {error}")
            elif key == PROP_DRIFT:
                settings.drifts.append(value)
            elif key == PROP_USED:
                settings.used.add(value)
            elif key == PROP_MOVES:
                settings.moves.append((report.nodeid, value))
            elif key == PROP_CHAIN:
                take_chain(settings, report.nodeid, value)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.settings.deselected += len(items)


# -- recorded scenarios as tests ---------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if not config.getini("harness_collect"):
        return None
    from harness.fixture import SCENARIO_FILE  # the runtime and the codec load when needed

    if file_path.name != SCENARIO_FILE:
        return None
    fixtures = config.stash[SETTINGS].fixtures.resolve()
    if fixtures not in file_path.resolve().parents:
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


class ScenarioFile(pytest.File):
    """A recorded scenario folder; its files are decoded strictly when collected."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.fixture import load_fixture

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
    from harness.stability import HeaderDrift, make_prove_stable_fixture

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
            pytest.fail(f"harness: {error}{notes}", pytrace=False)

    return prove


@pytest.fixture
def header_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot`, storing a header's exact bytes in one binary file per snapshot."""
    try:
        from harness.snapshot import HeaderSnapshotExtension
    except ImportError:  # pragma: no cover - syrupy is in the pytest extra
        pytest.fail(
            f"harness: header_snapshot needs syrupy: {install_command('pytest')}", pytrace=False
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
    from harness.fixture import SCENARIO_FILE

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
            write(f"  {moves_line(nodeid, reason, s)}")
    for line in summary_lines(s):
        write(line)
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
    if on_github_actions():
        _github(s, write)


def _github(settings: Settings, write: Callable[[str], None]) -> None:
    for drift in settings.drifts:
        write(
            annotation(
                drift["message"], file=drift["file"], line=drift["line"], title="header drift"
            )
        )
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
        lines += [f"- {moves_line(nodeid, reason, settings)}" for nodeid, reason in settings.moves]
    lines += ["", *summary_lines(settings)] if settings.chain_tests else []
    write_step_summary("\n".join(lines))
