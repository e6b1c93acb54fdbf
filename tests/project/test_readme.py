"""Every example of the README runs as written (issue 33, item 6).

The README's fenced blocks are read from the file, never copied here: a block edited in the
README is the block tested. A Python fragment is run in a project of its own; it gets `import
pytest` in front when it uses `pytest.` and shows no import (the README shows the fixture, not
the file's head). What a block shows as output is what the command prints.

- `$ harness cost examples/cost/session.jsonl`: the printed line, unwrapped, and the claim after
  it (turn 3 six minutes later: `ttl-expired`; the shipped session: no such finding);
- the `harness scan` lines on the shipped samples;
- the rules file: its row is in force (`claude-in-house-*` gets its 2,048-token minimum and
  `fail_on` fails the lint on `below-minimum`; the same request without the file is only an
  `unknown-model` note);
- the first test file, with the stand-in fixture and the full `harness_capture_config` in its
  conftest (the rules file above and a prices file beside it): recorded, then checked, then
  `harness check` on what it recorded; the `moves_header` marker is accepted as written.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from harness.cli import main
from tests.support.inner import inner_pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(language: str) -> list[str]:
    """The README's fenced blocks of one language (`""`: a block with no language)."""
    text = README.read_text(encoding="utf-8")
    return [body for lang, body in _FENCE.findall(text) if lang == language]


def block_holding(language: str, needle: str) -> str:
    found = [block for block in blocks(language) if needle in block]
    assert len(found) == 1, (
        f"the README has {len(found)} {language or 'plain'} blocks with {needle}"
    )
    return found[0]


def runnable(fragment: str) -> str:
    if "pytest." in fragment and "import pytest" not in fragment:
        return "import pytest\n\n" + fragment
    return fragment


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_the_cost_example_prints_what_the_readme_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    command, *shown = block_holding("", "$ harness cost").splitlines()
    program, *args = shlex.split(command.removeprefix("$ "))
    assert program == "harness"
    monkeypatch.chdir(ROOT)
    code, out = cli(capsys, *args)
    assert code == 0
    assert out.splitlines()[0] == " ".join(line.strip() for line in shown)


def test_turn_three_six_minutes_later_is_ttl_expired_as_the_readme_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (ROOT / "examples" / "cost" / "session.jsonl").read_text().splitlines()
    code, out = cli(capsys, "lint", str(ROOT / "examples" / "cost" / "session.jsonl"))
    assert code == 0 and "ttl-expired" not in out  # the near miss: 30 s apart
    third = json.loads(lines[2])
    third["time"] = json.loads(lines[1])["time"] + 6 * 60
    later = tmp_path / "session.jsonl"
    later.write_text("\n".join([*lines[:2], json.dumps(third)]) + "\n")
    code, out = cli(capsys, "lint", str(later))
    assert "ttl-expired" in out and "request 2" in out


def test_the_scan_lines_run_on_the_shipped_samples(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("duckdb")
    commands = [
        shlex.split(line)
        for line in block_holding("bash", "harness scan").splitlines()
        if line.startswith("harness scan")
    ]
    assert len(commands) == 2
    monkeypatch.chdir(ROOT)
    for program, *args in commands:
        assert program == "harness"
        code, out = cli(capsys, *args)
        assert code in (0, 1), out  # 1: the samples hold the breaks they were made with
        assert "session" in out
    assert json.loads(out)["totals"]["requests"] > 0  # the second line asks for JSON


def _small_request(model: str) -> str:
    body = {
        "model": model,
        "max_tokens": 64,
        "system": [{"type": "text", "text": "x" * 2000, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    return json.dumps({"url": "https://api.anthropic.com/v1/messages", "body": body}) + "\n"


def test_the_rules_file_is_in_force_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    session = tmp_path / "session.jsonl"
    session.write_text(_small_request("claude-in-house-7"))
    monkeypatch.chdir(tmp_path)
    code, out = cli(capsys, "lint", str(session))
    assert code == 0 and "unknown-model" in out  # the near miss: no rules file, no minimum
    (tmp_path / "harness-rules.json").write_text(block_holding("json", '"harness/rules"'))
    code, out = cli(capsys, "lint", str(session))
    assert code == 1
    assert "error below-minimum" in out and "minimum 2048" in out.replace(",", "")


FIRST_AGENT = """
import anthropic

TOOLS = [{"name": "get_weather", "description": "The weather in a city.",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


def build_request():
    return {"model": "claude-sonnet-4-5", "max_tokens": 256, "tools": TOOLS,
            "system": "You plan days out.", "messages": [{"role": "user", "content": "hi"}]}


def plan_day(question):
    client = anthropic.Anthropic(api_key="not-a-real-key")
    messages = [{"role": "user", "content": question}]
    while True:
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=256, tools=TOOLS,
                                       system="You plan days out.", messages=messages)
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            return reply.content[0].text + " A good day for a walk."
        messages += [
            {"role": "assistant", "content": [block.model_dump() for block in reply.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                          "content": "sunny"} for call in calls]},
        ]
"""

PRICES = {
    "kind": "harness/prices",
    "format": 1,
    "rows": [
        {
            "providers": ["anthropic"],
            "models": ["claude-sonnet-4-5*"],
            "effective_from": "2026-01-01",
            "input": 1.5,
            "output": 7.5,
            "cache_read": 0.15,
            "cache_write": {"5m": 1.875, "1h": 3.0},
            "source": "our contract",
            "checked_on": "2026-11-30",
        }
    ],
}


@pytest.mark.slow  # an inner pytest that imports the anthropic SDK, twice
def test_the_first_test_file_records_checks_and_passes_harness_check(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anthropic")
    first = block_holding("python", "def test_tool_order_is_stable")
    name = first.splitlines()[0].removeprefix("# ").strip()
    assert name == "tests/test_prompt_cache.py"
    config = runnable(block_holding("python", "def harness_capture_config"))
    upstream = block_holding("python", "def harness_upstream")
    pytester.makepyfile(agent=FIRST_AGENT)
    pytester.makeconftest(runnable(upstream) + "\n\n" + config.removeprefix("import pytest\n"))
    (pytester.path / "harness-rules.json").write_text(block_holding("json", '"harness/rules"'))
    (pytester.path / "harness-prices.json").write_text(json.dumps(PRICES))
    test_file = pytester.path / name
    test_file.parent.mkdir(parents=True)
    test_file.write_text(runnable(first))
    recorded = inner_pytest(pytester, "--harness-mode=record", "-p", "no:randomly")
    recorded.assert_outcomes(passed=2)
    checked = inner_pytest(pytester, "-p", "no:randomly")
    checked.assert_outcomes(passed=2)
    monkeypatch.chdir(pytester.path)
    code, out = cli(capsys, "check", "fixtures")
    assert code == 0, out
    assert "1 cassettes" in out


def test_the_moves_header_marker_is_accepted_as_written(pytester: pytest.Pytester) -> None:
    marked = runnable(block_holding("python", "@pytest.mark.moves_header"))
    pytester.makepyfile(test_planner=marked)
    result = inner_pytest(pytester, "--collect-only", "-q", "-p", "no:randomly")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*test_planner*"])
