"""Issue 32's third round, file doors:

- a `fixtures/cassettes` that is a link to a folder outside the project was written through: a
  recording left the repository. Now a record run refuses, in one line, before the test runs
  (a scenario folder that is a link already was); a link that stays inside the project is
  followed, and a check run reads through any link;
- a report write cut short (`harness report --html/--markdown`, `harness scan --sarif/--html`)
  truncated the old report while the message said "the old file is intact": reports are now
  written atomically, so the message is true;
- an output path that is a FIFO hung the command (a device, a folder: written into, or a
  traceback): a path that exists and is not a regular file is refused in one line before
  anything is read or written.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.reliability.conftest import Cli, one_line, temp_leftovers
from tests.support.inner import inner_pytest
from tests.support.paths import EXAMPLES, copy_project

# -- a cassettes folder linked out of the project -------------------------------------------------

CONFTEST = """
import httpx2
import pytest


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json={
        "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello."}}]}))
"""

TEST = """
import httpx2
import pytest


@pytest.mark.header_capture
def test_chat():
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
    reply = httpx2.post("https://api.openai.com/v1/chat/completions", json=body)
    assert reply.json()["choices"][0]["message"]["content"] == "Hello."
"""


def linked_project(pytester: pytest.Pytester, target: Path) -> Path:
    pytester.makepyfile(conftest=CONFTEST, test_chat=TEST)
    (pytester.path / "fixtures").mkdir()
    link = pytester.path / "fixtures" / "cassettes"
    target.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    return link


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_a_cassettes_folder_linked_out_of_the_project_is_never_written_through(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("shared") / "cassettes"
    link = linked_project(pytester, outside)
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert f"harness: refusing to write {link}/test_chat/test_chat.json: {link} is a link to" in out
    assert "outside the project" in out and "replace the link with the folder itself" in out
    assert files_under(outside) == []


@pytest.mark.slow
def test_a_cassettes_folder_linked_inside_the_project_is_written_and_read(
    pytester: pytest.Pytester,
) -> None:
    # the near miss: a link that stays in the repository is followed, for writing and reading
    inside = pytester.path / "shared" / "cassettes"
    linked_project(pytester, inside)
    recorded = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    recorded.assert_outcomes(passed=1)
    assert files_under(inside) == ["test_chat/test_chat.json"]
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_check_run_reads_through_a_link_out_of_the_project(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # reading never leaves anything outside: a shared, read-only set of cassettes replays
    outside = tmp_path_factory.mktemp("shared") / "cassettes"
    linked_project(pytester, pytester.path / "recorded")
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=1)
    (pytester.path / "recorded").rename(outside)
    (pytester.path / "fixtures" / "cassettes").unlink()
    (pytester.path / "fixtures" / "cassettes").symlink_to(outside, target_is_directory=True)
    inner_pytest(pytester, "-p", "no:randomly").assert_outcomes(passed=1)


def test_harness_refresh_refuses_a_cassettes_folder_linked_out_of_the_project(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    outside = tmp_path / "elsewhere" / "cassettes"
    (outside / "tests").mkdir(parents=True)
    original = (EXAMPLES / "traces" / "cassettes" / "test_follow_up.json").read_bytes()
    cassette = "fixtures/cassettes/tests/test_follow_up.json"
    (outside / "tests" / "test_follow_up.json").write_bytes(original)  # format 1: rewritten
    (project / "fixtures").mkdir(parents=True)
    (project / "fixtures" / "cassettes").symlink_to(outside, target_is_directory=True)
    monkeypatch.chdir(project)
    code, out, err = cli("refresh", cassette)
    assert code == 2, out + err
    line = one_line(err)
    assert f"refusing to write {cassette}: {project}/fixtures/cassettes is a link to" in line
    assert "outside the project" in line
    assert (outside / "tests" / "test_follow_up.json").read_bytes() == original
    # the near miss: the same cassette in the project itself is rewritten as format 3
    (project / "fixtures" / "cassettes").unlink()
    (project / cassette).parent.mkdir(parents=True)
    (project / cassette).write_bytes(original)
    code, out, err = cli("refresh", cassette)
    assert (code, err) == (0, ""), out + err
    assert "rewrote format 1 as format 3" in out


# -- a report write cut short ---------------------------------------------------------------------

CASSETTE = str(EXAMPLES / "traces" / "cassettes" / "test_follow_up.json")
TRACE = str(EXAMPLES / "traces" / "otel.json")
OLD = b"the report of yesterday\n"
REPORTS = {
    "report --html": ["report", CASSETTE, "--html"],
    "report --markdown": ["report", CASSETTE, "--markdown"],
    "scan --sarif": ["scan", TRACE, "--quiet", "--sarif"],
    "scan --html": ["scan", TRACE, "--quiet", "--html"],
}


@contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """Writes past `size` bytes fail (EFBIG), as on a disk that fills up mid-write."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


@pytest.mark.parametrize("report", REPORTS)
def test_a_report_write_cut_short_leaves_the_old_report_whole(
    tmp_path: Path, cli: Cli, report: str
) -> None:
    if report.startswith("scan"):
        pytest.importorskip("duckdb")
    target = tmp_path / "out.file"
    target.write_bytes(OLD)
    with file_size_limit(len(OLD) + 64):  # the new report is longer: its write fails midway
        code, out, err = cli(*REPORTS[report], str(target))
    assert code == 2, out + err
    line = one_line(err)
    assert f"cannot write {target}" in line and "the old file is intact" in line
    assert target.read_bytes() == OLD  # and it is
    assert temp_leftovers(tmp_path) == []


@pytest.mark.parametrize("report", REPORTS)
def test_a_report_is_written_over_an_old_one_keeping_its_mode_and_link(
    tmp_path: Path, cli: Cli, report: str
) -> None:
    # the near miss: a report that fits is written; a link to a regular file stays a link
    if report.startswith("scan"):
        pytest.importorskip("duckdb")
    real = tmp_path / "reports" / "out.file"
    real.parent.mkdir()
    real.write_bytes(OLD)
    real.chmod(0o640)
    link = tmp_path / "latest"
    link.symlink_to(real)
    code, out, err = cli(*REPORTS[report], str(link))
    assert code in (0, 1) and err == "", out + err
    assert link.is_symlink() and real.read_bytes() != OLD and len(real.read_bytes()) > 100
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert temp_leftovers(tmp_path) == []


# -- an output path that is not a regular file ----------------------------------------------------


def run_guarded(cli: Cli, fifo: Path, *argv: str) -> tuple[int, str, str]:
    """The command, with a guard against the hang this test exists for: if it still runs after
    a generous wait, the FIFO is opened and drained so the test can fail instead of hanging."""
    done: list[tuple[int, str, str]] = []
    worker = threading.Thread(target=lambda: done.append(cli(*argv)), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():
        with open(fifo, "rb") as reader:  # the writer was blocked opening the FIFO
            reader.read()
        worker.join(30)
        pytest.fail(f"harness {' '.join(argv)} hung on the FIFO {fifo}")
    return done[0]


@pytest.mark.parametrize("report", REPORTS)
def test_an_output_path_that_is_a_fifo_is_refused_in_one_line(
    tmp_path: Path, cli: Cli, report: str
) -> None:
    if report.startswith("scan"):
        pytest.importorskip("duckdb")
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    code, out, err = run_guarded(cli, fifo, *REPORTS[report], str(fifo))
    assert code == 2, out + err
    line = one_line(err)
    option = report.split()[1]
    assert f"{fifo} is a named pipe (FIFO), not a regular file: nothing was written" in line
    assert f"name a file for {option} to write" in line
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and sorted(os.listdir(tmp_path)) == ["out.fifo"]


def test_a_second_output_that_is_a_fifo_stops_the_first_from_being_written(
    tmp_path: Path, cli: Cli
) -> None:
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    page = tmp_path / "page.html"
    code, out, err = run_guarded(
        cli, fifo, "report", CASSETTE, "--html", str(page), "--markdown", str(fifo)
    )
    assert code == 2 and "is a named pipe (FIFO)" in one_line(err), out + err
    assert not page.exists()  # refused before anything was written


@pytest.mark.parametrize("kind", ["folder", "device", "link to a device"])
def test_an_output_path_that_is_a_folder_or_a_device_is_refused(
    tmp_path: Path, cli: Cli, kind: str
) -> None:
    if kind == "folder":
        target = tmp_path / "reports"
        target.mkdir()
        said = f"{target} is a folder, not a file: name a file for --html to write"
    else:
        target = Path(os.devnull) if kind == "device" else tmp_path / "null"
        if kind == "link to a device":
            target.symlink_to(os.devnull)
        said = f"{target} is a character device, not a regular file: nothing was written"
    code, out, err = cli("report", CASSETTE, "--html", str(target))
    assert code == 2, out + err
    assert said in one_line(err)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # /dev/null is still a device


def test_harness_record_refuses_a_fixtures_folder_linked_out_of_the_project(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the scenario folder itself is no link (the check that existed); the fixtures folder is
    outside = tmp_path / "elsewhere"
    copy_project(outside)
    before = files_under(outside / "fixtures")
    project = tmp_path / "project"
    project.mkdir()
    (project / "fixtures").symlink_to(outside / "fixtures", target_is_directory=True)
    monkeypatch.chdir(project)
    for command in ("record", "refresh"):
        code, out, err = cli(command, "fixtures/text-turn")
        assert code == 2, out + err
        assert f"{project}/fixtures is a link to {outside}/fixtures, outside the project" in (
            one_line(err)
        )
    assert files_under(outside / "fixtures") == before
    (project / "fixtures").unlink()  # the near miss: the folder moved into the project records
    (outside / "fixtures").rename(project / "fixtures")
    code, out, err = cli("record", "fixtures/text-turn")
    assert (code, err) == (0, ""), out + err
