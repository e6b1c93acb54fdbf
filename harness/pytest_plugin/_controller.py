"""The plugin's controller: the one process (no xdist, or xdist's main one) that acts on reports.

Tests talk to it through an attribute of their teardown reports (`_api.send`: plain data, it
crosses xdist; taken off the report first, so `--junitxml` and other report writers never see
it): files to write, drift found, recordings used, `moves_header` reasons, the prefix chain's
coverage, and the words the worker's printer redacts. It writes atomically, and only in a
writing mode outside CI, and only for a test whose setup, call and teardown all passed (a test
stopped halfway holds a partial recording: its files are withheld, and the summary says so);
two tests asking for different bytes in one file (two scenarios owning one pin) keep the first
and report the second. It also keeps in the run state what decides which recordings the run
proved unused (`harness.pytest_plugin._unused`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness._shared import _printer
from harness._shared._ci import writes_allowed
from harness._shared._errors import HarnessError
from harness.pytest_plugin._api import (
    MESSAGES_ATTRIBUTE,
    PROP_CHAIN,
    PROP_DRIFT,
    PROP_EMPTY,
    PROP_FINDINGS,
    PROP_MOVES,
    PROP_PRINTED,
    PROP_USED,
    PROP_WRITE,
)
from harness.pytest_plugin._chain import take_chain
from harness.pytest_plugin._state import RunState
from harness.pytest_plugin._unused import collectable

__all__ = ["Controller"]


class Controller:
    """Registered on the controller only (no xdist, or xdist's main process): acts on reports."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)  # before junitxml and report logs see the report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        messages = report.__dict__.pop(MESSAGES_ATTRIBUTE, None) or ()
        state.outcome(report.nodeid, report.when, report.outcome, hasattr(report, "wasxfail"))
        clean = state.writes_of(report.nodeid) if report.when == "teardown" else False
        value: Any
        for key, value in messages:  # only a teardown report carries them
            if key == PROP_PRINTED:
                _printer.imported(value)
            elif key == PROP_WRITE and not clean:
                state.withheld.append(f"{value['path']}: {report.nodeid} did not pass")
            elif key == PROP_WRITE and state.mode.writes and writes_allowed():
                self._write(Path(value["path"]), base64.b64decode(value["data"]), report.nodeid)
            elif key == PROP_DRIFT:
                state.drifts.append(value)
            elif key == PROP_USED:
                state.used.add(str(Path(value).resolve()))
            elif key == PROP_MOVES:
                state.moves.append((report.nodeid, value))
            elif key == PROP_CHAIN:
                take_chain(state, report.nodeid, value)
            elif key == PROP_FINDINGS:
                state.findings.extend(value)
            elif key == PROP_EMPTY:
                state.no_requests.append((report.nodeid, str(value)))

    def _write(self, path: Path, data: bytes, nodeid: str) -> None:
        digest = hashlib.sha256(data).digest()
        earlier = self.state.digests.setdefault(path, digest)
        if earlier != digest:  # two tests, two contents, one file: two owners of one pin
            self.state.unwritten.append(
                f"{path}: {nodeid} would write other bytes than an earlier test of this run"
                " wrote to it (two scenarios owning one pin?); kept the first"
            )
            return
        from harness._shared._files import write_atomic  # the codec loads with the first write
        from harness._shared._paths import refuse_link_out

        try:
            refuse_link_out(path, self.state.project)  # a link made after the test's check
            if write_atomic(path, data):
                self.state.written.append(path)
        except (HarnessError, OSError) as error:  # a twin made meanwhile, a full disk...
            self.state.unwritten.append(f"{path}: {error}")

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.state.deselected += len(items)
        self.state.deselected_ids.update(item.nodeid for item in items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state.collection_errors += 1
        elif report.skipped:  # importorskip, skip(allow_module_level=True): none of it ran
            self.state.skipped_modules.append(report.nodeid)
        self.state.found.update(
            item.nodeid for item in report.result or () if isinstance(item, pytest.Item)
        )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.state.collected.update(item.nodeid for item in session.items)

    @pytest.hookimpl(wrapper=True)
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> Any:
        ignored = yield
        if ignored and collectable(collection_path, config.getini("python_files")):
            self.state.left_out.append(str(collection_path))
        return ignored
