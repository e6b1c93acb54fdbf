"""Unused recordings: reported after a run, deleted only when asked and only what the run proved.

A recording is a scenario folder under the fixtures folder (`<name>/scenario.json` and its
recording) or a cassette under `<fixtures>/cassettes/`. Each test tells the controller which
ones it used (`harness_fixture_used`). After a run that collected the whole project, the
recordings nobody used are listed in the summary, as syrupy lists unused snapshots; a narrower
run lists nothing (a recording of a test it left out is not unused).

They are deleted only with `--harness-delete-unused`, in a writing mode, outside CI, and only
when the run proved them unused:
- the run collected everything: no path or node id narrower than the project (its `testpaths`
  or its root folder), no `-k`, `-m`, `--lf`, `--sw` or `--deselect`, nothing deselected, no
  test file left out by `--ignore`, `collect_ignore` or a hook, no collection error, and not
  under pytest-xdist (whose workers' deselections the controller does not see);
- every collected test ran and passed: a skipped, failed, errored or expected-to-fail test may
  use any recording, so one of them keeps all; so does a module skipped at collection
  (`pytest.importorskip`, `skip(allow_module_level=True)`) and a test collected yet not run (a
  hook removed it from the run without reporting it deselected);
- the run was not stopped early;
- with `harness_collect`, scenario folders are tests themselves and are never deleted by this
  rule (only unused cassettes are);
- the recording lies inside the fixtures folder, is not reached through a link, and only the
  harness's own files are removed (a scenario folder holding anything else keeps it).
When the flag is given and something keeps the recordings, the summary says what.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from harness._shared._ci import detect_ci

if TYPE_CHECKING:
    from harness.pytest_plugin._state import RunState
from harness._shared._paths import CASSETTES, SCENARIO_FILES

__all__ = [
    "DELETE_FLAG",
    "Verdict",
    "after_run",
    "collectable",
    "judge_unused",
    "recordings",
    "remove",
]

DELETE_FLAG: Final = "--harness-delete-unused"


@dataclass(frozen=True)
class Verdict:
    """The unused recordings, whether they may go, and why not."""

    unused: list[Path]
    complete: bool  # the run collected the whole project: `unused` means something
    delete: bool
    kept_because: list[str]


def recordings(fixtures: Path, *, scenarios: bool) -> list[Path]:
    """Every recording under `fixtures`: scenario folders (unless they are tests themselves) and
    cassettes, as the paths tests report using."""
    if not fixtures.is_dir():
        return []
    found: list[Path] = []
    if scenarios:
        found += sorted(p.parent for p in fixtures.glob("*/scenario.json"))
    cassettes = fixtures / CASSETTES
    if cassettes.is_dir():
        found += sorted(p for p in cassettes.rglob("*.json") if p.is_file())
    return found


def narrowing(
    *,
    args: Sequence[str],
    project: Sequence[Path],
    options: dict[str, object],
    xdist: bool,
) -> list[str]:
    """Why this run did not collect the whole project ([] when it did).

    `args` are the paths pytest collected from (its command line, `testpaths`, or the folder it
    ran in); `project` is what the whole project is (its `testpaths`, or its root folder).
    """
    reasons = []
    nodes = [arg for arg in args if "::" in arg]
    if nodes:
        reasons.append(f"pytest was given test ids ({', '.join(nodes[:2])})")
    given = [Path(arg).resolve() for arg in args if "::" not in arg]
    uncovered = [
        str(path) for path in project if not any(g == path or g in path.parents for g in given)
    ]
    if uncovered:
        reasons.append(f"pytest did not collect {', '.join(uncovered[:2])}")
    for option, flag in (
        ("keyword", "-k"),
        ("markexpr", "-m"),
        ("lf", "--lf"),
        ("stepwise", "--sw"),
        ("deselect", "--deselect"),
        ("ignore", "--ignore"),
        ("ignore_glob", "--ignore-glob"),
    ):
        if options.get(option):
            reasons.append(f"{flag} selected part of the tests")
    if xdist:
        reasons.append("under pytest-xdist the controller cannot see every deselection")
    return reasons


def judge_unused(
    record: RunState,
    fixtures: Path,
    *,
    narrowed: list[str],
    asked: bool,
    writing: bool,
    collect_scenarios: bool,
    stopped: bool,
) -> Verdict:
    """Which recordings no test used, and whether this run may delete them (see the doc)."""
    candidates = recordings(fixtures, scenarios=not collect_scenarios)
    used = record.used
    unused = [p for p in candidates if str(p.resolve()) not in used]
    complete = not narrowed and not record.deselected and not record.left_out
    complete = complete and not record.skipped_modules and record.found <= record.collected
    if not asked:
        return Verdict(unused, complete, False, [])
    kept = list(narrowed)
    if record.deselected:
        kept.append(f"{record.deselected} test(s) were deselected")
    if record.left_out:
        kept.append(f"pytest left out {', '.join(record.left_out[:3])}")
    if record.collection_errors:
        kept.append(f"{record.collection_errors} file(s) could not be collected")
    for module in record.skipped_modules[:3]:
        kept.append(f"{module} was skipped at collection: its tests may use any recording")
    dropped = sorted(record.found - record.collected - record.deselected_ids)
    if dropped:
        others = f" and {len(dropped) - 1} more" if len(dropped) > 1 else ""
        kept.append(
            f"{dropped[0]}{others} collected, yet not run (removed from the run by a hook):"
            " a test that did not run may use any recording"
        )
    missing = sorted(record.collected - record.ran)
    if stopped or missing:
        kept.append("the run stopped before every test ran")
    if record.not_passed:
        nodeid, outcome = next(iter(sorted(record.not_passed.items())))
        more = len(record.not_passed) - 1
        kept.append(
            f"{nodeid} {outcome}"
            + (f" (and {more} more test(s) did not pass)" if more else "")
            + ": a test that did not pass may use any recording"
        )
    if not writing:
        kept.append(f"{DELETE_FLAG} deletes files; use it with --harness-mode=update")
    found = detect_ci()
    if found is not None:
        kept.append(f"CI never deletes ({found.describe()})")
    return Verdict(unused, complete, not kept and bool(unused), kept)


def remove(recording: Path, fixtures: Path) -> str:
    """Delete one unused recording (its harness files only); what was done, in words."""
    root = fixtures.resolve()
    real = recording.resolve()
    if recording.is_symlink() or root not in real.parents:
        return f"kept {recording}: it is not inside {fixtures} (a link?)"
    if recording.is_file():
        recording.unlink()
        _prune(recording.parent, root)
        return f"deleted {recording}"
    for name in SCENARIO_FILES:
        (recording / name).unlink(missing_ok=True)
    for leftover in recording.glob(".*.tmp"):  # an interrupted write's temp file
        if any(leftover.name.startswith(f".{name}.") for name in SCENARIO_FILES):
            leftover.unlink()
    others = sorted(os.listdir(recording))
    if others:
        return f"deleted the recording in {recording}, kept its other files ({', '.join(others)})"
    recording.rmdir()
    return f"deleted {recording}"


def _prune(folder: Path, root: Path) -> None:
    """Remove folders the deletion left empty, up to the fixtures folder."""
    while folder.resolve() != root and root in folder.resolve().parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def collectable(path: Path, python_files: Iterable[str]) -> bool:
    """Whether pytest would collect `path` as tests: a test module or a scenario file."""
    name = path.name
    return name == "scenario.json" or (
        name.endswith(".py") and any(fnmatch.fnmatch(name, pattern) for pattern in python_files)
    )


def after_run(
    session: pytest.Session, record: RunState, fixtures: Path, *, writing: bool
) -> tuple[Verdict, list[str]]:
    """What the run proved unused, and what was deleted (with the flag, when it may be)."""
    config = session.config
    verdict = judge_unused(
        record,
        fixtures,
        narrowed=narrowing(
            args=config.args,
            project=_project(config),
            options=vars(config.option),
            xdist=config.pluginmanager.hasplugin("dsession"),
        ),
        asked=bool(config.getoption("harness_delete_unused")),
        writing=writing,
        collect_scenarios=bool(config.getini("harness_collect")),
        stopped=bool(session.shouldstop or session.shouldfail)
        or session.exitstatus == pytest.ExitCode.INTERRUPTED,
    )
    done = [remove(path, fixtures) for path in verdict.unused] if verdict.delete else []
    return verdict, done


def _project(config: pytest.Config) -> list[Path]:
    """The whole project as pytest sees it: its testpaths (globbed), else its root folder."""
    root = config.rootpath
    found = [
        Path(p).resolve()
        for t in config.getini("testpaths")
        for p in glob.glob(os.path.join(root, t), recursive=True)
    ]
    return found or [root.resolve()]
