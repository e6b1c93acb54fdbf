"""`harness init` in an existing project: what it prints and writes, what it refuses, and that
what it writes works (the generated proof passes, and fails on the bug it is there for).

Projects are pytester folders; `harness init` runs through `harness.cli.main`. The project's tests
run in a pytest subprocess where the test stands for the user's shell: the first run of the
generated proof (with every installed pytest plugin, as the user's own `pytest` loads them) and the
three next commands of an SDK project. Elsewhere they run in process: what those tests check (a
generated file failing on its bug, a pytest configuration read from its file, a conftest beside
the project's own) needs no fresh interpreter (decision 0036).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness._shared import _printer
from harness.cli import main
from tests.support.inner import inner_pytest

WRITTEN = ("pytest.ini", "tests/conftest.py", "tests/test_prompt_cache.py")
SORT_LINE = '    tools.sort(key=lambda schema: schema["name"])'


@pytest.fixture(autouse=True)
def fresh_printer() -> Iterator[None]:
    """`harness init` runs in a process of its own; in this one an earlier test may have taught
    the printer to redact a fake key the generated conftest names (its header's value)."""
    words = _printer.exported()
    _printer.reset()
    yield
    _printer.reset()
    _printer.imported(words)


def init(project: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["init", str(project), *args])
    out, err = capsys.readouterr()
    return code, out, err


def files_of(project: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """An existing project: a pyproject.toml without a pytest table, an agent module."""
    pytester.makefile(".toml", pyproject='[project]\nname = "acme"\nversion = "0.1"\n')
    pytester.makepyfile(agent="def answer():\n    return 42\n")
    return pytester.path


@pytest.mark.slow
def test_init_prints_then_writes_a_configuration_a_conftest_and_a_passing_proof(
    project: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = files_of(project)
    monkeypatch.chdir(project.parent)  # run from elsewhere: the next commands name the project
    code, out, err = init(project, capsys=capsys)
    monkeypatch.chdir(project)
    assert (code, err) == (0, "")
    written = files_of(project)
    assert set(written) - set(before) == set(WRITTEN)
    assert all(written[name] == data for name, data in before.items()), "nothing edited"
    for name in WRITTEN:  # each file is printed whole, before anything is written
        text = written[name].decode()
        shown = out.index(f"--- {project / name} (new) ---")
        assert out.index(text.rstrip("\n"), shown) < out.index(f"wrote {project / name}")
    assert "pytest configuration: none found, so a new pytest.ini" in out
    assert "def harness_upstream()" in written["tests/conftest.py"].decode()
    assert "def harness_capture_config()" in written["tests/conftest.py"].decode()
    commands = out.split("\nnext:\n")[1].splitlines()
    assert [line.split("  #")[0].strip() for line in commands] == [
        f"pytest {project / 'tests/test_prompt_cache.py'}",
        f"pytest --harness-mode=record {project}",
        f"harness check {project}",
    ]

    # the user's own `pytest` from a shell: a fresh interpreter, every installed plugin loaded
    result = inner_pytest(pytester, subprocess=True, user_plugins=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["configfile: pytest.ini", "*no header drift*"])


def test_the_next_commands_are_bare_when_run_in_the_project(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert "wrote tests/conftest.py" in out
    commands = [line.split("  #")[0].strip() for line in out.split("\nnext:\n")[1].splitlines()]
    assert commands == [
        "pytest tests/test_prompt_cache.py",
        "pytest --harness-mode=record",
        "harness check",
    ]


@pytest.mark.slow
def test_the_generated_proof_fails_when_the_example_loses_its_sort(
    project: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    assert init(project, capsys=capsys)[0] == 0
    proof = project / "tests/test_prompt_cache.py"
    text = proof.read_text()
    assert SORT_LINE in text
    proof.write_text(text.replace(SORT_LINE, "    pass"))  # tools in the order they finished
    result = inner_pytest(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cause: asyncio completion order*", "*tools_changed*"])


def test_dry_run_prints_the_same_files_and_writes_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = files_of(project)
    code, dry, _ = init(project, "--dry-run", capsys=capsys)
    assert code == 0 and files_of(project) == before
    assert "(dry run: nothing is written)" in dry
    assert f"would write {project / 'tests/conftest.py'}" in dry
    code, real, _ = init(project, capsys=capsys)
    assert code == 0
    printed = real.split("\nwrote ")[0]
    shown = dry.replace(" (dry run: nothing is written)", "")
    assert shown.startswith(printed), "the dry run shows exactly what is then written"
    assert dry.split("\nnext:\n")[1] == real.split("\nnext:\n")[1], "and the same next commands"


@pytest.mark.parametrize("existing", ["tests/conftest.py", "tests/test_prompt_cache.py"])
def test_init_refuses_to_overwrite_in_one_line_and_writes_nothing(
    project: Path, existing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / existing).parent.mkdir(parents=True)
    (project / existing).write_text("# the project's own\n")
    before = files_of(project)
    code, out, err = init(project, capsys=capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"harness init: {project / existing}: already exists")
    assert "--tests" in err
    assert files_of(project) == before  # not even the pytest.ini the plan began with


def test_a_second_init_refuses(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert init(project, capsys=capsys)[0] == 0
    written = files_of(project)
    code, _, err = init(project, capsys=capsys)
    assert code == 2 and "already exists" in err
    assert files_of(project) == written


@pytest.mark.slow
def test_tests_option_puts_the_files_beside_the_projects_own_conftest(
    project: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    own = "import pytest\n\n@pytest.fixture\ndef answer():\n    return 42\n"
    (project / "tests").mkdir()
    (project / "tests/conftest.py").write_text(own)
    (project / "tests/test_own.py").write_text("def test_own(answer):\n    assert answer == 42\n")
    code, _, err = init(project, "--tests", "tests/prompt_cache", capsys=capsys)
    assert (code, err) == (0, "")
    assert (project / "tests/conftest.py").read_text() == own
    assert (project / "tests/prompt_cache/conftest.py").is_file()
    inner_pytest(pytester).assert_outcomes(passed=2)


@pytest.mark.parametrize("where", ["/elsewhere", "../outside"])
def test_a_tests_folder_outside_the_project_is_refused(
    project: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = init(project, "--tests", where, capsys=capsys)
    assert code == 2 and "is not a folder inside the project" in err


CONFIGS = [
    ("pyproject.toml", '[project]\nname = "acme"\n\n[tool.pytest.ini_options]\naddopts = "-ra"\n'),
    ("pyproject.toml", '[project]\nname = "acme"\n\n[tool.pytest]\naddopts = ["-ra"]\n'),
    ("pytest.ini", "[pytest]\naddopts = -ra\n"),
    ("pytest.toml", '[pytest]\naddopts = ["-ra"]\n'),
    ("tox.ini", "[tox]\nenvlist = py311\n\n[pytest]\naddopts = -ra\n"),
    ("setup.cfg", "[metadata]\nname = acme\n\n[tool:pytest]\naddopts = -ra\n"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "content"), CONFIGS)
def test_an_existing_pytest_configuration_is_left_alone_and_the_lines_to_add_work(
    pytester: pytest.Pytester, name: str, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = pytester.path / name
    config.write_text(content)
    code, out, _ = init(pytester.path, capsys=capsys)
    assert code == 0
    assert config.read_text() == content, "never edited"
    assert not (pytester.path / "pytest.ini").exists() or name == "pytest.ini"
    assert f"pytest configuration: {config} " in out and "leaves it as it is" in out
    lines = [line[4:] for line in out.splitlines() if line.startswith("    harness_")]
    assert [line.split(" = ")[0] for line in lines] == [
        "harness_fixtures",
        "harness_shuffle",
        "harness_mode",
    ]
    # What the user then adds under the section works in that file's syntax (here, 5 runs).
    added = "\n".join(line.replace("8", "5") for line in lines)
    config.write_text(content + added + "\n")
    result = inner_pytest(pytester)  # pytest reads that file in process as it does in a shell
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["harness: mode check, 5 registration orders per scenario*"])


def test_a_configuration_in_a_parent_folder_is_the_one_in_force(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    (pytester.path / "pytest.ini").write_text("[pytest]\n")
    service = pytester.path / "services" / "agent"
    service.mkdir(parents=True)
    code, out, _ = init(service, capsys=capsys)
    assert code == 0
    assert f"pytest configuration: {pytester.path / 'pytest.ini'} [pytest] is in force" in out
    assert not (service / "pytest.ini").exists()


def test_an_unreadable_pyproject_is_one_line(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    (pytester.path / "pyproject.toml").write_text("[project\n")
    code, out, err = init(pytester.path, capsys=capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "pyproject.toml: is not valid TOML" in err
    assert not (pytester.path / "tests").exists()


def test_a_missing_project_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = init(tmp_path / "nowhere", capsys=capsys)
    assert code == 2 and "is not a folder" in err


def test_init_writes_nothing_under_ci_but_a_dry_run_still_shows(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CI", "true")
    before = files_of(project)
    code, _, err = init(project, capsys=capsys)
    assert code == 2 and "under CI (CI=true)" in err
    assert init(project, "--dry-run", capsys=capsys)[0] == 0
    assert files_of(project) == before


# -- the next three commands, on an SDK project ----------------------------------------------

CAPTURED_TEST = """
import anthropic
import pytest

TOOLS = [
    {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}},
    {"name": "run", "description": "Run a command.", "input_schema": {"type": "object"}},
]


@pytest.mark.header_capture
def test_the_agent_greets():
    client = anthropic.Anthropic(api_key="test-key")
    reply = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=64,
        system="You are careful.",
        tools=TOOLS,
        messages=[{"role": "user", "content": "Hello"}],
    )
    assert reply.content[0].text == "Hello from the stand-in."
"""


def uncomment_stand_in(conftest: Path) -> None:
    """What the conftest's comment asks for: the stand-in uncommented, harness_upstream using it."""
    lines = conftest.read_text().splitlines()
    start = lines.index("# from harness.upstream import StandIn, text")
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("#"))
    lines[start:end] = [line[2:] if line.startswith("# ") else "" for line in lines[start:end]]
    text = "\n".join(lines) + "\n"
    stand_in = "    return None  # or: return stand_in()"
    assert stand_in in text
    conftest.write_text(text.replace(stand_in, "    return stand_in()"))


def harness_command() -> list[str]:
    script = Path(sys.executable).parent / "harness"
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness.cli"]


@pytest.mark.slow
def test_the_three_next_commands_record_and_gate_an_sdk_project(
    project: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("anthropic")
    assert init(project, capsys=capsys)[0] == 0
    uncomment_stand_in(project / "tests/conftest.py")
    (project / "tests/test_agent.py").write_text(CAPTURED_TEST)

    # the commands as the user types them: pytest subprocesses (the installed plugins this suite
    # never uses are left out: the first test here runs the user's pytest with all of them)
    inner_pytest(pytester, "tests/test_prompt_cache.py", subprocess=True).assert_outcomes(passed=1)
    recorded = inner_pytest(pytester, "--harness-mode=record", subprocess=True)
    recorded.assert_outcomes(passed=2)
    cassettes = sorted((project / "fixtures/cassettes").rglob("*.json"))
    assert len(cassettes) == 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    check = subprocess.run(
        [*harness_command(), "check"], cwd=project, capture_output=True, text=True, env=env
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "1 cassettes, no finding" in check.stdout

    # The bug the gate is for: the agent's tools move; the replay fails, naming the drift.
    test = project / "tests/test_agent.py"
    test.write_text(CAPTURED_TEST.replace("TOOLS,", "list(reversed(TOOLS)),"))
    replay = inner_pytest(pytester, "tests/test_agent.py", subprocess=True)
    replay.assert_outcomes(failed=1)
    replay.stdout.fnmatch_lines(["*tools_changed*"])
    shutil.rmtree(project / "fixtures")
    again = subprocess.run(
        [*harness_command(), "check", "."], cwd=project, capture_output=True, text=True, env=env
    )
    assert again.returncode == 2, "nothing recorded: the gate refuses rather than passes"


# -- coexistence: fixtures the project already defines -------------------------------------------

ROOT_UPSTREAM = """\
import pytest


@pytest.fixture
def harness_upstream():
    return "the project's own stand-in"
"""


def test_a_fixture_in_the_root_conftest_is_left_alone_and_not_shadowed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "conftest.py").write_text(ROOT_UPSTREAM)
    code, out, err = init(project, capsys=capsys)
    assert (code, err) == (0, "")
    written = (project / "tests" / "conftest.py").read_text()
    assert "def harness_upstream" not in written and "def harness_capture_config" in written
    assert f"left alone: harness_upstream (defined in {project / 'conftest.py'}:5)" in out
    compile(written, "conftest.py", "exec")  # what is written still reads as Python


def test_both_fixtures_defined_in_a_testpaths_conftest_mean_no_conftest_is_written(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = integration\n")
    (project / "integration").mkdir()
    (project / "integration" / "conftest.py").write_text(
        ROOT_UPSTREAM
        + "\n\nharness_capture_config = pytest.fixture(lambda: {'hosts': ['llm.internal']})\n"
    )
    code, out, _ = init(project, capsys=capsys)
    assert code == 0 and not (project / "tests" / "conftest.py").exists()
    assert out.count("left alone: ") == 2 and "harness_capture_config (defined in" in out
    assert (project / "tests" / "test_prompt_cache.py").exists()


def test_a_plain_function_of_that_name_is_not_a_fixture(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "conftest.py").write_text("def harness_upstream():\n    return None\n")
    code, out, _ = init(project, capsys=capsys)
    assert code == 0 and "left alone" not in out
    assert "def harness_upstream" in (project / "tests" / "conftest.py").read_text()
