"""Shared helpers of the reliability suite: key-shaped strings, the CLI in process, file trees,
and scenario sources for generated projects.

Nothing here touches the repository's own files: every test that damages or rewrites something
works on a copy under `tmp_path` (`copy_project`, or the `project` fixture of `tests/conftest.py`)
or under pytester's folder; inner pytest runs go through `tests.support.inner.inner_pytest`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main

# Key-shaped strings, assembled at run time so no source file holds one literally.
ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"
AWS_KEY_ID = "AKIA" + "QX7ZT2MBW4" + "K5NJ3R"
GITHUB_TOKEN = "ghp_" + "k3Vq9ZtB2x" * 4

# Where msgspec and the codec say something went wrong, in the message's own words.
POSITION = re.compile(r"byte (\d+)\)? \(line \d+, column \d+\)")
JSON_PATH = re.compile(r"at `\$[^`]*`")


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (hidden ones too) by relative path, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".pytest_cache" not in p.parts and "__pycache__" not in p.parts
    }


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
