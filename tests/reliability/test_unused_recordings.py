"""Nothing is deleted that the run did not prove unused (defect 1 of the reliability issue).

`pytest --harness-mode=update` used to delete every recorded scenario no test of the run had used:
those of skipped tests, of tests outside the folder given, of `--ignore`d or deselected tests,
and scenarios collected only through `harness_collect`. Now unused recordings are listed (as
syrupy lists unused snapshots), and deleted only with `--harness-delete-unused`, after a run that
collected the whole project and in which every test passed, and only inside the fixtures folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.inner import inner_pytest
from tests.support.paths import copy_project

from .conftest import SCENARIO_IMPORTS, scenario_source, tree

CONFTEST = """
import httpx2
import pytest


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": True}))
"""


def scenario_test(name: str, *, decorator: str = "", body: str = "") -> str:
    source = scenario_source(name, pin=name, turn=f"turn of {name}")
    return (
        SCENARIO_IMPORTS
        + f"\n\n{decorator}\ndef test_{name}(agent_harness):\n"
        + (body or f"    agent_harness.check({source.replace(chr(10), chr(10) + '    ')})\n")
    )


CAPTURE_TEST = """
def test_capture(header_capture):
    header_capture.httpx2_client().post("https://example.test/v1/x", json={"a": 1})
"""


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> Path:
    """Two scenario tests in two files and a capture test, all recorded; plus an orphan of each
    kind (a scenario folder and a cassette no test uses)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_alpha=scenario_test("alpha"),
        test_bravo=scenario_test("bravo"),
        test_calls=CAPTURE_TEST,
    )
    pytester.makeini("[pytest]\ntestpaths = .\n")
    inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record").assert_outcomes(passed=3)
    fixtures = pytester.path / "fixtures"
    assert {p.name for p in fixtures.iterdir()} == {"alpha", "bravo", "cassettes"}
    orphan = fixtures / "orphan"
    (orphan).mkdir()
    for file in (fixtures / "alpha").iterdir():
        (orphan / file.name).write_bytes(file.read_bytes().replace(b'"alpha"', b'"orphan"'))
    old = fixtures / "cassettes/test_old/test_gone.json"
    old.parent.mkdir(parents=True)
    old.write_bytes((fixtures / "cassettes/test_calls/test_capture.json").read_bytes())
    return fixtures


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return inner_pytest(pytester, "-p", "no:randomly", *args)


def recordings(fixtures: Path) -> set[str]:
    return set(tree(fixtures))


# -- what update mode used to delete ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "narrowing",
    [
        ["test_alpha.py", "test_calls.py"],  # a path narrower than the project
        ["-k", "alpha or capture"],
        ["--deselect", "test_bravo.py::test_bravo"],
        ["--ignore", "test_bravo.py"],
    ],
    ids=["path", "keyword", "deselect", "ignore"],
)
@pytest.mark.parametrize("flag", [[], ["--harness-delete-unused"]], ids=["plain", "flag"])
def test_update_never_deletes_the_recordings_of_tests_it_left_out(
    pytester: pytest.Pytester, recorded: Path, narrowing: list[str], flag: list[str]
) -> None:
    before = recordings(recorded)
    result = run(pytester, "--harness-mode=update", *narrowing, *flag)
    assert result.ret == 0
    assert recordings(recorded) == before  # bravo, and the orphans too: the run proved nothing
    out = result.stdout.str()
    assert "no test used" not in out  # a narrower run does not call anything unused
    if flag:
        assert "--harness-delete-unused: kept every recording, because:" in out


@pytest.mark.parametrize(
    ("marker", "body", "why"),
    [
        ("@pytest.mark.skip(reason='not today')", "", "skipped"),
        ("", "    pytest.skip('no network today')\n", "skipped"),
        ("@pytest.mark.xfail(reason='known')", "    raise AssertionError\n", "expected to fail"),
    ],
    ids=["skip-marker", "skip-call", "xfail"],
)
def test_update_never_deletes_a_skipped_tests_recording(
    pytester: pytest.Pytester, recorded: Path, marker: str, body: str, why: str
) -> None:
    source = scenario_test("bravo", decorator=marker, body=body)
    pytester.makepyfile(test_bravo="import pytest\n" + source)
    before = recordings(recorded)
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert recordings(recorded) == before
    out = result.stdout.str()
    assert "fixtures/bravo" in out  # listed as not used by this run, and kept
    assert f"test_bravo.py::test_bravo {why}" in out


def test_update_never_deletes_after_a_failure(pytester: pytest.Pytester, recorded: Path) -> None:
    pytester.makepyfile(
        test_bravo=scenario_test("bravo", body="    raise AssertionError('broken today')\n")
    )
    before = recordings(recorded)
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert result.ret == 1
    assert recordings(recorded) == before
    assert "test_bravo.py::test_bravo failed" in result.stdout.str()


def test_update_lists_unused_recordings_and_keeps_them_without_the_flag(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    before = recordings(recorded)
    result = run(pytester, "--harness-mode=update")
    assert result.ret == 0
    assert recordings(recorded) == before
    out = result.stdout.str()
    assert "2 recording(s) no test used in this run:" in out
    assert "fixtures/orphan" in out and "fixtures/cassettes/test_old/test_gone.json" in out
    assert "--harness-delete-unused" in out


@pytest.mark.slow
def test_the_flag_deletes_only_what_a_full_passing_run_proved_unused(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    (recorded / "orphan" / "NOTES.md").write_text("kept: not a harness file\n")
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert result.ret == 0
    after = recordings(recorded)
    assert not any(name.startswith("cassettes/test_old") for name in after)
    assert {n for n in after if n.startswith("orphan/")} == {"orphan/NOTES.md"}
    assert {"alpha/log.json", "bravo/log.json", "cassettes/test_calls/test_capture.json"} <= after
    out = result.stdout.str()
    assert "2 unused recording(s) deleted (--harness-delete-unused)" in out
    assert "kept its other files (NOTES.md)" in out


def test_the_flag_is_refused_in_check_mode(pytester: pytest.Pytester, recorded: Path) -> None:
    before = recordings(recorded)
    result = run(pytester, "--harness-delete-unused")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--harness-delete-unused deletes files" in result.stderr.str()
    assert recordings(recorded) == before


def test_a_linked_recording_is_never_deleted(
    pytester: pytest.Pytester, recorded: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "shared"
    (recorded / "orphan").rename(outside)
    (recorded / "orphan").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert tree(outside) == before
    assert (recorded / "orphan").is_symlink()
    assert "kept" in result.stdout.str() and "a link?" in result.stdout.str()


# -- scenarios collected through harness_collect ---------------------------------------------------


def test_scenarios_collected_as_tests_are_never_deleted(pytester: pytest.Pytester) -> None:
    """With harness_collect, a scenario folder is a test itself: when a run does not collect it
    (it ran the tests folder only), that proves nothing about it."""
    copy_project(pytester.path)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests/test_other.py").write_text("def test_other():\n    pass\n")
    pytester.makeini("[pytest]\nharness_collect = true\ntestpaths = tests fixtures\n")
    before = tree(pytester.path / "fixtures")
    for args in (["tests"], ["tests", "--harness-delete-unused"], ["--harness-delete-unused"]):
        result = run(pytester, "--harness-mode=update", "--harness-shuffle=2", *args)
        assert result.ret == 0, result.stdout.str()
        assert tree(pytester.path / "fixtures") == before


# -- modules skipped at collection, tests a hook removed (issue 24, defect 4) ----------------------


@pytest.mark.parametrize(
    "skipping",
    [
        "pytest.importorskip('an_sdk_this_machine_lacks')\n",
        "pytest.skip('needs the cloud SDK', allow_module_level=True)\n",
    ],
    ids=["importorskip", "allow-module-level"],
)
def test_a_module_that_skipped_itself_keeps_its_recordings(
    pytester: pytest.Pytester, recorded: Path, skipping: str
) -> None:
    """A module skipped at collection ran none of its tests: it proved nothing unused."""
    pytester.makepyfile(test_bravo="import pytest\n" + skipping + scenario_test("bravo"))
    pytester.makepyfile(test_calls="import pytest\n" + skipping + CAPTURE_TEST)
    before = recordings(recorded)
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert result.ret == 0, result.stdout.str()
    assert recordings(recorded) == before
    out = result.stdout.str()
    assert "--harness-delete-unused: kept every recording, because:" in out
    assert "test_bravo.py was skipped at collection" in out


def test_tests_a_hook_removed_without_deselecting_keep_their_recordings(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    """A conftest hook that drops items from the run without `pytest_deselected`: collected, not
    run, so their recordings stay."""
    pytester.makeconftest(
        CONFTEST
        + """

def pytest_collection_modifyitems(config, items):
    items[:] = [item for item in items if "bravo" not in item.nodeid]
"""
    )
    before = recordings(recorded)
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert result.ret == 0, result.stdout.str()
    assert recordings(recorded) == before
    out = result.stdout.str()
    assert "collected, yet not run (removed from the run by a hook)" in out


def test_a_skipped_module_that_held_no_test_of_a_recording_lets_the_orphans_go(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    """The near miss: an ordinary full, passing run still deletes what it proved unused."""
    result = run(pytester, "--harness-mode=update", "--harness-delete-unused")
    assert result.ret == 0
    assert "2 unused recording(s) deleted" in result.stdout.str()
