"""`harness init`: set up an existing project, without questions, and never overwrite.

The plan is made before anything is written: the pytest configuration (a new `pytest.ini` when
pytest would find none; an existing one is left as it is and the lines to add are printed in
its syntax), `<tests>/conftest.py` with `harness_upstream` and `harness_capture_config`, and
`<tests>/test_prompt_cache.py`, a proof that passes as written. A harness fixture the project
already defines in a conftest pytest would load is left alone: the conftest holds only the
others (none at all when both are defined), and init says so (`_existing`). If any file to write
exists, nothing is written: one line names it (exit 2). Each file is printed, then written
atomically, all or nothing: when one cannot be written, those written before it (and the folders
made for them) are taken back, so "nothing was changed" is true. `--dry-run` prints and writes
nothing. Last come the next three commands to run, every path quoted as the shell needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness._shared._ci import detect_ci
from harness._shared._distribution import install_command
from harness._shared._errors import FixtureError, WriteRefused
from harness._shared._files import write_atomic
from harness._shared._paths import refuse_case_twin
from harness.cli.init._detect import EntryPoint, Sdk, detect_sdks, find_entry_point
from harness.cli.init._existing import FIXTURES, Defined, defined_fixtures
from harness.cli.init._pytest_config import PytestConfig, find_pytest_config, settings_lines
from harness.cli.init._templates import (
    PROOF,
    PROOF_NAME,
    agent_conftest,
    agent_proof,
    conftest,
    pytest_ini,
)

__all__ = ["HELP", "InitPlan", "add_arguments", "init_project", "plan_init"]

HELP = (
    "set up a project: pytest configuration, a conftest with harness_upstream and "
    "harness_capture_config, and a first proof of stable tool order; never overwrites"
)


def add_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "path", nargs="?", default=".", help="the project's folder (default: this one)"
    )
    command.add_argument(
        "--tests",
        default="tests",
        metavar="DIR",
        help="the folder for conftest.py and the proof, relative to the project (default tests)",
    )
    command.add_argument(
        "--dry-run", action="store_true", help="print what would be written; write nothing"
    )


@dataclass(frozen=True)
class InitPlan:
    """What `harness init` will write into `project`, and the configuration it leaves alone."""

    project: Path
    files: tuple[tuple[Path, str], ...]
    existing_config: PytestConfig | None
    proof: Path
    left_alone: tuple[Defined, ...] = ()
    sdks: tuple[Sdk, ...] = ()
    entry: EntryPoint | None = None


def plan_init(project: Path, tests: str = "tests") -> InitPlan:
    """The files to write; FixtureError (one line naming the file) if one of them exists."""
    if not project.is_dir():
        raise FixtureError(
            project, "is not a folder", "pass the project's folder: harness init PATH"
        )
    folder = project / tests
    if Path(tests).is_absolute() or ".." in Path(tests).parts:
        raise FixtureError(tests, "is not a folder inside the project", "pass --tests tests/...")
    config = find_pytest_config(project)
    sdks = detect_sdks(project)
    entry, under_src = find_entry_point(project, sdks) if sdks else (None, False)
    files: list[tuple[Path, str]] = []
    if config is None:
        files.append((project / "pytest.ini", pytest_ini(src=under_src)))
    defined = tuple(defined_fixtures(project, folder, config))
    names = frozenset(item.name for item in defined)
    if names != frozenset(FIXTURES):
        text = agent_conftest(sdks, names) if sdks else conftest(names)
        files.append((folder / "conftest.py", text))
    files.append((folder / PROOF_NAME, agent_proof(entry) if entry is not None else PROOF))
    for path, _ in files:
        if os.path.lexists(path):
            raise FixtureError(
                path,
                "already exists, and harness init never overwrites a file",
                "move it aside, or write into a new folder: "
                "harness init --tests tests/prompt_cache",
            )
        refuse_case_twin(path)
    proof = folder / PROOF_NAME
    return InitPlan(project, tuple(files), config, proof, defined, tuple(sdks), entry)


def init_project(
    project: Path, *, tests: str = "tests", dry_run: bool = False, out: Callable[[str], None]
) -> int:
    """Print, then write (unless `dry_run`), what `plan_init` decided; print what to run next."""
    plan = plan_init(project, tests)
    if not dry_run and (found := detect_ci()) is not None:
        raise WriteRefused(
            f"refusing to write into {project} under CI ({found.describe()}); "
            "run harness init locally and commit the files"
        )
    out(f"harness init: {project.resolve()}{' (dry run: nothing is written)' if dry_run else ''}")
    _explain_config(plan, out)
    if plan.sdks:
        out(
            "SDKs found: "
            + ", ".join(sdk.name for sdk in plan.sdks)
            + "; harness_upstream answers them from harness.upstream.StandIn"
        )
    if plan.entry is not None:
        out(
            f"agent entry point: {plan.entry.module}.{plan.entry.function}"
            f" ({plan.entry.source}); the proof runs one turn of it"
        )
    elif plan.sdks:
        out(
            "agent entry point: none found (a module-level function named one_turn, run_agent,"
            " ask, chat... in a module that imports an SDK); the proof is an example to point at"
            " your agent"
        )
    for item in plan.left_alone:
        out(
            f"left alone: {item.describe()}; harness init writes no {item.name} that would"
            " shadow it"
        )
    for path, text in plan.files:
        out(f"\n--- {path} (new) ---")
        out(text.rstrip("\n"))
    out("")
    if dry_run:
        for path, _ in plan.files:
            out(f"would write {path}")
    else:
        for path in _write_all(plan.files):
            out(f"wrote {path}")
    if importlib.util.find_spec("pytest") is None:
        out(f"\npytest is not installed here; the plugin needs it: {install_command('pytest')}")
    here = project.resolve() == Path.cwd().resolve()
    where = "" if here else f" {shlex.quote(str(project))}"
    proof = shlex.quote(str(plan.proof))
    out("\nnext:")
    if plan.entry is not None:
        out(
            f"  pytest --harness-mode=record {proof}  # one turn of your agent, answered by the"
            " stand-in, recorded into fixtures/cassettes/"
        )
    else:
        out(f"  pytest {proof}  # passes on the example; then point build_request at your agent")
    out(
        f"  pytest --harness-mode=record{where}  # record the tests you mark"
        " @pytest.mark.header_capture into fixtures/cassettes/"
    )
    out(f"  harness check{where}  # the CI gate on the recordings (never writes); commit fixtures/")
    return 0


def _write_all(files: tuple[tuple[Path, str], ...]) -> list[Path]:
    """Write every file, or none: a write that fails takes back the files written before it
    and the folders made for them (each file is new: `plan_init` refused existing ones)."""
    made: list[Path] = []
    folders = [f for path, _ in files for f in (path.parent, *path.parent.parents)]
    missing = [folder for folder in dict.fromkeys(folders) if not folder.exists()]
    try:
        for path, text in files:
            write_atomic(path, text.encode("utf-8"))
            made.append(path)
    except BaseException:
        for path in reversed(made):
            path.unlink(missing_ok=True)
        for folder in missing:  # deepest first: `folders` lists each file's parents upwards
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return made


def _explain_config(plan: InitPlan, out: Callable[[str], None]) -> None:
    config = plan.existing_config
    if config is None:
        out("pytest configuration: none found, so a new pytest.ini (harness init edits no file)")
        return
    out(
        f"pytest configuration: {config.path} {config.section} is in force; harness init "
        "leaves it as it is. The harness works with its defaults; to set them, add under "
        f"{config.section}:"
    )
    for line in settings_lines(config.syntax):
        out(f"    {line}")
