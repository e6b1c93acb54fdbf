"""Writes are atomic: a temp file in the same folder, then `os.replace`.

A write interrupted at any point (an exception, or SIGKILL between write and rename) leaves the old
file byte-identical; what it leaves behind is a hidden `.name.XXXX.tmp` file that no reader ever
takes for a fixture. Concurrent writers and xdist workers never produce an interleaved file.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from harness._shared._errors import FixtureError
from harness._shared._files import decode, encode, write_atomic
from harness.agent import ScriptedReply
from harness.scenarios._formats import (
    AnswersFile,
    LogFile,
    RequestsFile,
    Scenario,
    ToolSchemasPin,
    find_fixtures,
    load_fixture,
)
from tests.support.inner import inner_pytest
from tests.support.paths import copy_project

from .conftest import SCENARIO_IMPORTS, Cli, scenario_source, temp_leftovers, tree

LOG = "fixtures/text-turn/log.json"

KILLER = r"""
import os, signal, sys
from pathlib import Path

import harness._shared._files as files

path, data, where = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), sys.argv[3]


def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


if where == "before-rename":  # the temp file is complete and synced; the rename never happens
    os.replace = die
elif where == "before-fsync":  # written but not synced
    os.fsync = die
elif where == "mid-write":  # half the bytes reached the temp file
    real_fdopen = os.fdopen

    class Half:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

        def write(self, chunk):
            self.handle.write(chunk[: len(chunk) // 2])
            self.handle.flush()
            die()

    os.fdopen = lambda fd, *args, **kwargs: Half(real_fdopen(fd, *args, **kwargs))
files.write_atomic(path, data)
print("the write was not interrupted")
"""


def new_log_bytes(old: bytes) -> bytes:
    """A valid, different log: what a re-recording would write."""
    log = decode(old, LogFile, "log.json")
    return encode(msgspec.structs.replace(log, registration_order=("web", "fs")))


def kill_during_write(path: Path, data: bytes, where: str, tmp_path: Path) -> None:
    payload = tmp_path / "payload.bin"
    payload.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", KILLER, str(path), str(payload), where],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr.decode())


# -- interrupted writes -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("where", ["mid-write", "before-fsync", "before-rename"])
def test_a_write_killed_before_the_rename_leaves_the_old_file_intact(
    project: Path, cli: Cli, tmp_path: Path, where: str
) -> None:
    log = project / LOG
    old = log.read_bytes()
    new = new_log_bytes(old)
    before = tree(project / "fixtures")
    found = find_fixtures([project / "fixtures"])

    kill_during_write(log, new, where, tmp_path)

    assert log.read_bytes() == old  # byte-identical: no partial content ever replaced it
    # What is left behind: one hidden temp file beside it, holding (part of) the new bytes.
    leftovers = temp_leftovers(project / "fixtures")
    assert [p.name[: len(".log.json.")] for p in leftovers] == [".log.json."]
    assert leftovers[0].parent == log.parent and leftovers[0].suffix == ".tmp"
    assert new.startswith(leftovers[0].read_bytes())
    after = tree(project / "fixtures")
    assert {
        k: v for k, v in after.items() if k != str(leftovers[0].relative_to(project / "fixtures"))
    } == before
    # ...and no reader takes it for a fixture: the scenario reads and checks as before.
    assert find_fixtures([project / "fixtures"]) == found
    assert load_fixture(log.parent).log == decode(old, LogFile, log)
    code, out, err = cli("check", "fixtures", "--shuffle", "0")
    assert (code, err) == (0, "")
    assert "6 scenarios, no drift" in out


@pytest.mark.slow
def test_a_killed_first_write_of_a_new_scenario_leaves_no_scenario(
    project: Path, cli: Cli, tmp_path: Path
) -> None:
    folder = project / "fixtures" / "brand-new"
    scenario = project / "fixtures/text-turn/scenario.json"
    kill_during_write(folder / "scenario.json", scenario.read_bytes(), "before-rename", tmp_path)

    assert [p.name.startswith(".scenario.json.") for p in folder.iterdir()] == [True]
    assert folder not in find_fixtures([project / "fixtures"])
    code, _, err = cli("check", "fixtures", "--shuffle", "0")
    assert (code, err) == (0, "")


@pytest.mark.parametrize("at", ["fsync", "replace"])
def test_an_exception_during_the_write_leaves_the_old_file_and_no_temp(
    project: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    log = project / LOG
    old = log.read_bytes()

    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(os, at, interrupt)
        write_atomic(log, new_log_bytes(old))

    assert log.read_bytes() == old
    assert temp_leftovers(project) == []


@pytest.mark.slow
def test_the_collector_ignores_leftover_temp_files(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    copy_project(pytester.path)
    log = pytester.path / LOG
    kill_during_write(log, new_log_bytes(log.read_bytes()), "before-rename", tmp_path)
    scenario = pytester.path / "fixtures/tool-turn/scenario.json"
    kill_during_write(scenario, scenario.read_bytes() + b" ", "before-rename", tmp_path)
    assert len(temp_leftovers(pytester.path)) == 2
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = fixtures\n")

    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-shuffle=2")

    result.assert_outcomes(passed=6)
    assert ".tmp" not in result.stdout.str()


# -- what a successful write does ---------------------------------------------------------------


def test_rewriting_the_same_bytes_touches_nothing(project: Path) -> None:
    log = project / LOG
    before = log.stat()
    assert write_atomic(log, log.read_bytes()) is False
    after = log.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert temp_leftovers(project) == []


def test_a_rewritten_file_keeps_its_permissions(project: Path) -> None:
    log = project / LOG
    log.chmod(0o644)
    assert write_atomic(log, new_log_bytes(log.read_bytes()))
    assert stat.S_IMODE(log.stat().st_mode) == 0o644


WRITER = r"""
import sys
from pathlib import Path

from harness._shared._files import write_atomic

path, payload, rounds = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), int(sys.argv[3])
other = Path(sys.argv[4]).read_bytes()
for _ in range(rounds):  # alternate, so every round really writes
    write_atomic(path, payload)
    write_atomic(path, other)
"""


@pytest.mark.slow
def test_concurrent_writers_never_leave_a_partial_or_interleaved_file(tmp_path: Path) -> None:
    target = tmp_path / "fixtures" / "busy" / "answers.json"
    payloads = [
        encode(AnswersFile(scenario="busy", answers=(ScriptedReply(text=chr(65 + i) * 300_000),)))
        for i in range(4)
    ]
    files = []
    for index, payload in enumerate(payloads):
        files.append(tmp_path / f"payload-{index}.json")
        files[-1].write_bytes(payload)
    write_atomic(target, payloads[0])
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(files[i]), "15", str(files[i ^ 1])],
        )
        for i in range(len(payloads))
    ]
    reads = 0
    try:
        while any(w.poll() is None for w in writers):
            data = target.read_bytes()
            assert data in payloads, f"read {len(data)} bytes that no single writer wrote"
            decode(data, AnswersFile, target)
            reads += 1
    finally:
        for writer in writers:
            writer.wait(timeout=60)
    assert [w.returncode for w in writers] == [0] * len(writers)
    assert target.read_bytes() in payloads
    assert reads > 0
    assert temp_leftovers(tmp_path / "fixtures") == []


# -- xdist: workers never write, the controller does --------------------------------------------

NAMES = ("alpha", "bravo", "charlie", "delta")


def recording_project(pytester: pytest.Pytester) -> Path:
    tests = [SCENARIO_IMPORTS]
    for name in NAMES:  # one header class ("default"), each scenario claiming to own its pin
        source = scenario_source(name, turn=f"turn of {name}", reply=f"reply to {name}")
        tests.append(
            f"\n\ndef test_{name}(agent_harness):\n"
            f"    assert agent_harness.check({source.replace(chr(10), chr(10) + '    ')}).ok\n"
        )
    pytester.makepyfile(test_record="".join(tests))
    pytester.makeini("[pytest]\nharness_fixtures = recorded/fixtures\n")
    return pytester.path / "recorded"


KINDS = {
    "scenario.json": Scenario,
    "log.json": LogFile,
    "requests.json": RequestsFile,
    "answers.json": AnswersFile,
    "tool-schemas.expected.json": ToolSchemasPin,
}


def assert_valid(files: dict[str, bytes]) -> None:
    for name, data in files.items():
        base = Path(name).name
        if base in KINDS:
            decode(data, KINDS[base], name)  # strictly, or FixtureError
        else:
            assert base == "system-prompt.expected.md", name
            data.decode("utf-8")


@pytest.mark.slow
def test_xdist_workers_recording_the_same_pin_never_interleave_a_file(
    pytester: pytest.Pytester,
) -> None:
    root = recording_project(pytester)
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=4)
    single = tree(root)  # one writer, one process: the reference bytes
    assert_valid(single)
    assert len(single) == 4 * len(NAMES) + 2  # four files per scenario, one pin (two files)

    for run in range(2):  # each xdist run costs seconds: two runs, two orders
        shutil.rmtree(root)
        result = inner_pytest(
            pytester, "-n", "2", "-p", "randomly", f"--randomly-seed={run}", "--harness-mode=record"
        )
        result.assert_outcomes(passed=4)
        written = tree(root)
        assert_valid(written)
        assert written == single, f"run {run}: the files differ from a single writer's"
        assert temp_leftovers(root) == []
    # and check mode reads them all back without writing
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    inner_pytest(pytester).assert_outcomes(passed=4)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == before


def test_no_prefix_of_a_file_ever_decodes(tmp_path: Path) -> None:
    """Were a file ever cut short (a non-atomic copy, a full disk), no prefix of it is read."""
    data = (Path(__file__).parents[2] / LOG).read_bytes()
    for cut in range(0, len(data) - 1, max(1, len(data) // 97)):
        with pytest.raises(FixtureError):
            decode(data[:cut], LogFile, tmp_path / "log.json")
