"""The harness pytest plugin: the hooks. Registered through the `pytest11` entry point as
`harness`; disable with `-p no:harness`.

This module holds the hooks (options, configuration, markers, the call-phase gate, the end of the
run) and registers what its wing's modules define: the fixtures (`_fixtures`), recorded scenarios
as tests (`_collect`), the run's one state object (`_state`: settings and seeding), the
controller that acts on reports (`_controller`), the `pytest_harness_configure` hook (`_hooks`),
and every summary line (`_summary`).

Writing: only `record`, `update` and `update-new-only` write, never under CI, and always on the
controller process: a test hands the files it wants written to its teardown report (an attribute
of its own, never `user_properties`, which `--junitxml` writes), and the controller writes them
atomically, so `-n 2` cannot interleave a file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness._shared import _printer
from harness._shared._ci import detect_ci
from harness._shared._errors import HarnessError
from harness._shared._paths import FIXTURES
from harness._shared._record_mode import RecordMode
from harness.pytest_plugin._api import (
    MESSAGES_ATTRIBUTE,
    PROP_MOVES,
    AgentHarness,
    RegistrationShuffle,
    fail,
    messages_of,
    moves_header_only,
    moves_header_reason,
    send,
)
from harness.pytest_plugin._budget import BUDGET
from harness.pytest_plugin._capture import SESSION as CAPTURE_SESSION
from harness.pytest_plugin._capture import drift_first, gate

# Registered with this module (pytest finds hooks and fixtures on the plugin module itself).
from harness.pytest_plugin._collect import pytest_collect_file as pytest_collect_file
from harness.pytest_plugin._controller import Controller
from harness.pytest_plugin._fixtures import _harness_intercept as _harness_intercept
from harness.pytest_plugin._fixtures import agent_harness as agent_harness
from harness.pytest_plugin._fixtures import harness_capture_config as harness_capture_config
from harness.pytest_plugin._fixtures import harness_settings as harness_settings
from harness.pytest_plugin._fixtures import harness_upstream as harness_upstream
from harness.pytest_plugin._fixtures import header_capture as header_capture
from harness.pytest_plugin._fixtures import header_snapshot as header_snapshot
from harness.pytest_plugin._fixtures import prove_stable as prove_stable
from harness.pytest_plugin._fixtures import registration_shuffle as registration_shuffle
from harness.pytest_plugin._hooks import Registrar
from harness.pytest_plugin._state import CALL_PASSED, DEFAULT_SHUFFLE, STATE, RunState, state_from
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
        "harness_fail_on",
        "cache rules whose findings fail a captured test, besides the errors (too-many-breakpoints,"
        " ttl-order); 'all' for every rule (harness lint --fail-on)",
        type="args",
        default=[],
    )
    parser.addini(
        "harness_rules",
        "the project's rules file (rows added to the rules pack, fail_on, severity); default"
        " harness-rules.json at the rootdir, when there is one",
        default="",
    )
    parser.addini(
        "harness_cache_budget",
        "the default cache budget of every captured test (max_usd=0.50 min_hit_rate=0.6"
        " model=...); @pytest.mark.cache_budget(...) overrides it key by key",
        default="",
    )
    parser.addini(
        "harness_collect",
        "collect every recorded scenario under harness_fixtures as a test (replay, rebuild, "
        "shuffle, pins); a corrupt file is then a collection error",
        type="bool",
        default=False,
    )


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
        "moves_header(reason, only=None): this test's request header is expected to change; only="
        " (a block, a verdict, a JSON pointer or a predicate) waives just that move; the reason is "
        "mandatory and every use is listed in the header drift summary",
    )
    config.addinivalue_line(
        "markers",
        "header_capture(**config): every httpx/httpx2 client this test uses sends provider "
        "requests through its capture session (its cassette); keyword arguments override "
        "harness_capture_config for this test",
    )
    config.addinivalue_line(
        "markers",
        "cache_budget(max_usd=None, min_hit_rate=None, model=None): fail this captured test when"
        " a conversation it sent costs more than max_usd (simulated at list price, or the"
        " project's prices) or hits the cache for less than min_hit_rate of its input",
    )
    settings = state_from(config)
    _printer.reset()  # a new run: the words of an earlier in-process run are not this project's
    if config.getoption("harness_delete_unused") and not settings.mode.writes:
        raise pytest.UsageError(
            f"harness: {DELETE_FLAG} deletes files, and --harness-mode={settings.mode} never"
            " writes; run it with --harness-mode=update"
        )
    _refuse_snapshot_update_under_ci(config)
    config.stash[STATE] = settings
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
        settings = node.config.stash[STATE]
        node.workerinput["harness_seed"] = settings.seed
        node.workerinput["harness_seed_source"] = settings.seed_source

    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        node.config.stash[STATE].collected.update(ids)


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = config.stash[STATE]
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
    only = moves_header_only(item) if reason is not None else None
    if reason is None:
        return
    if only is None:
        send(item, PROP_MOVES, reason)
        return
    from harness.capture._waivers import waiver

    problem = None
    try:
        waived = waiver(reason, only, source=f"@pytest.mark.moves_header on {item.nodeid}")
    except HarnessError as error:
        problem = str(error)
    if problem is not None:
        fail(problem)  # outside the except: pytest would chain the error's own report to it
    send(item, PROP_MOVES, f"{reason} (only {waived.describe()})")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "teardown":  # the controller's messages ride here (see `_api.send`)
        messages = messages_of(item)
        if messages:
            setattr(report, MESSAGES_ATTRIBUTE, messages)
    if report.when == "call":
        item.stash[CALL_PASSED] = report.passed  # skipped and xfailed calls did not pass
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
        gate(item, session, item.config.stash[STATE])
    elif item.get_closest_marker(BUDGET) is not None:  # a budget nothing enforces: no silent pass
        fail(
            f"harness: @pytest.mark.{BUDGET} prices the conversation a captured test records,"
            " and this test captures none: mark it @pytest.mark.header_capture (or use the"
            " header_capture fixture)"
        )
    return result


# -- the summary ---------------------------------------------------------------------------------


@pytest.hookimpl(trylast=True)  # after syrupy's, which deletes unused snapshots
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        return
    settings = config.stash[STATE]
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
        config.stash[STATE],
        verdict,
        done,
        asked=bool(config.getoption("harness_delete_unused")),
        refused=_refused_deletions(),
    )
