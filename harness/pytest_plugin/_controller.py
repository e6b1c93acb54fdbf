"""The plugin's controller: the one process (no xdist, or xdist's main one) that acts on reports.

Tests talk to it through their reports' `user_properties` (plain data, it crosses xdist): files
to write, drift found, recordings used, `moves_header` reasons, the prefix chain's coverage. It
writes atomically, and only in a writing mode outside CI; two tests asking for different bytes
in one file (two scenarios owning one pin) keep the first and report the second. It also keeps
the `RunRecord` that decides which recordings the run proved unused
(`harness.pytest_plugin._unused`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness._ci import writes_allowed
from harness._errors import HarnessError
from harness.pytest_plugin._api import (
    PROP_CHAIN,
    PROP_DRIFT,
    PROP_MOVES,
    PROP_USED,
    PROP_WRITE,
    Settings,
)
from harness.pytest_plugin._capture import take_chain
from harness.pytest_plugin._unused import RunRecord, collectable

__all__ = ["Controller"]


class Controller:
    """Registered on the controller only (no xdist, or xdist's main process): acts on reports."""

    def __init__(self, settings: Settings, run: RunRecord) -> None:
        self.settings = settings
        self.run = run
        self.written: dict[Path, bytes] = {}  # what this run wrote where (one path, one content)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.run.outcome(report.nodeid, report.when, report.outcome, hasattr(report, "wasxfail"))
        if report.when != "teardown":  # the teardown report carries every property of the test
            return
        settings = self.settings
        value: Any
        for key, value in report.user_properties:
            if key == PROP_WRITE and settings.mode.writes and writes_allowed():
                self._write(Path(value["path"]), base64.b64decode(value["data"]), report.nodeid)
            elif key == PROP_DRIFT:
                settings.drifts.append(value)
            elif key == PROP_USED:
                settings.used.add(value)
                self.run.used.add(str(Path(value).resolve()))
            elif key == PROP_MOVES:
                settings.moves.append((report.nodeid, value))
            elif key == PROP_CHAIN:
                take_chain(settings, report.nodeid, value)

    def _write(self, path: Path, data: bytes, nodeid: str) -> None:
        digest = hashlib.sha256(data).digest()
        earlier = self.written.setdefault(path, digest)
        if earlier != digest:  # two tests, two contents, one file: two owners of one pin
            self.settings.unwritten.append(
                f"{path}: {nodeid} would write other bytes than an earlier test of this run"
                " wrote to it (two scenarios owning one pin?); kept the first"
            )
            return
        from harness._files import write_atomic  # the codec loads with the first write

        try:
            if write_atomic(path, data):
                self.settings.written.append(path)
        except (HarnessError, OSError) as error:  # a twin made meanwhile, a full disk...
            self.settings.unwritten.append(f"{path}: {error}")

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.settings.deselected += len(items)
        self.run.deselected += len(items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.run.collection_errors += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.run.collected.update(item.nodeid for item in session.items)

    @pytest.hookimpl(wrapper=True)
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> Any:
        ignored = yield
        if ignored and collectable(collection_path, config.getini("python_files")):
            self.run.left_out.append(str(collection_path))
        return ignored
