"""Shared helpers of the reliability suite: copies of the shipped fixtures, the CLI, inner pytest.

Nothing here touches the repository's own files: every test that damages or rewrites something
works on a copy under `tmp_path` (or under pytester's folder).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_FIXTURES = ROOT / "fixtures"
SHIPPED_PINS = ROOT / "snapshots" / "headers"
SHIPPED = sorted(p.parent.name for p in SHIPPED_FIXTURES.glob("*/scenario.json"))

# Key-shaped strings, assembled at run time so no source file holds one literally.
ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"
AWS_KEY_ID = "AKIA" + "QX7ZT2MBW4" + "K5NJ3R"
GITHUB_TOKEN = "ghp_" + "k3Vq9ZtB2x" * 4

# Where msgspec and the codec say something went wrong, in the message's own words.
POSITION = re.compile(r"byte (\d+)\)? \(line \d+, column \d+\)")
JSON_PATH = re.compile(r"at `\$[^`]*`")


def copy_project(dest: Path) -> Path:
    """`dest/fixtures` and `dest/snapshots/headers`: the shipped scenarios and pins."""
    shutil.copytree(SHIPPED_FIXTURES, dest / "fixtures")
    shutil.copytree(SHIPPED_PINS, dest / "snapshots" / "headers")
    return dest


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (hidden ones too) by relative path, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".pytest_cache" not in p.parts and "__pycache__" not in p.parts
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the shipped fixtures and pins as the working folder."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


class Cli:
    """`harness ...` in-process: exit code, stdout and stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


def one_line(err: str) -> str:
    """The single line of `err`; fails when there are several (or none)."""
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one error line, got {len(lines)}:\n{err}"
    return lines[0]


def inner_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest inside pytester; a subprocess only when xdist must start workers.

    hypothesis' pytest plugin is disabled in inner runs: it costs a second per process.
    """
    args = ("-p", "no:hypothesispytest", *args)
    if "-n" in args and args[args.index("-n") + 1] != "0":
        return pytester.runpytest_subprocess(*args)
    return pytester.runpytest_inprocess(*args)


def scenario_source(
    name: str,
    *,
    pin: str = "default",
    owner: bool = True,
    turn: str = "hello",
    reply: str = "hi there",
    description: str = "",
    tool_result: str = "ok",
) -> str:
    """Python source building a small `Scenario` (for test files written by pytester)."""
    return f"""Scenario(
    name={name!r},
    description={description!r},
    config={{"tool_order": ["bash", "<unlisted-tools>"]}},
    variables={{"cwd": "/work", "platform": "linux"}},
    plugins=(
        PluginSpec(
            name="fs",
            tools=(ToolSpec("read_file", "Read a file.", result={tool_result!r}),
                   ToolSpec("write_file", "Write a file.")),
        ),
        PluginSpec(name="shell", tools=(ToolSpec("bash", "Run a command."),)),
    ),
    loops=(({turn!r},),),
    script=(
        ScriptedReply(tool_calls=(ScriptedToolCall("call_1", "read_file", {{"path": "x"}}),)),
        ScriptedReply(text={reply!r}),
    ),
    pin=PinSpec({pin!r}, owner={owner!r}),
)"""


SCENARIO_IMPORTS = """
from harness.agent._llm import ScriptedReply, ScriptedToolCall
from harness.scenarios._formats import PinSpec, PluginSpec, Scenario, ToolSpec
"""


def temp_leftovers(root: Path) -> list[Path]:
    """Temp files `write_atomic` leaves behind when killed (`.name.XXXX.tmp`)."""
    return sorted(p for p in root.rglob(".*.tmp") if p.is_file())
