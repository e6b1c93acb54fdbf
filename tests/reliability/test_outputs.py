"""What the harness prints is safe to print (defects 2, 8 and 15 of the reliability issue).

- A key in a prompt or tool description was refused by record and refresh, but `check` printed
  it whole in the drift report (text, `--format json`, twice in `$GITHUB_STEP_SUMMARY`), and a
  cassette mismatch printed part of it. Every output is redacted now.
- Fixture content (a tool input key holding a newline and `::warning ...`) was printed
  unescaped, so GitHub Actions ran it as a workflow command.
- A 1 MiB tool name produced 7.3 MB of stdout and 13.6 MB of step summary (GitHub caps a summary
  at 1 MiB). Every excerpt, name and the summary are bounded, and say what was cut.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness._shared._actions import STEP_SUMMARY_LIMIT, write_step_summary
from harness._shared._errors import CassetteMismatch
from harness.capture import CaptureSession
from tests.support.inner import inner_pytest
from tests.support.stand_ins import anthropic_message

from .conftest import ANTHROPIC_KEY, GITHUB_TOKEN, Cli

GROQ_KEY = "gsk_" + "R4nd0mGr0qK3y" * 4


def edit_json(path: Path, edit: Any) -> None:
    data = json.loads(path.read_bytes())
    edit(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def parts_of(secret: str) -> list[str]:
    """The secret and every 12-character piece of it: none may be shown."""
    return [secret] + [secret[i : i + 12] for i in range(0, len(secret) - 11, 4)]


def assert_hidden(secret: str, *texts: str) -> None:
    for text in texts:
        for part in parts_of(secret):
            assert part not in text, f"{part!r} is shown"


def put_in_description(project: Path, secret: str) -> None:
    def edit(data: dict[str, Any]) -> None:
        tool = data["plugins"][0]["tools"][0]
        tool["description"] = f"Read a file. Authenticate with {secret} if asked."

    edit_json(project / "fixtures/text-turn/scenario.json", edit)


@pytest.fixture
def actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A GitHub Actions job: its step summary file."""
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


# -- 2: secrets in every output -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
@pytest.mark.parametrize("secret", [ANTHROPIC_KEY, GITHUB_TOKEN, GROQ_KEY])
def test_check_never_prints_a_key_the_fixture_holds(
    project: Path, cli: Cli, actions: Path, fmt: str, secret: str
) -> None:
    put_in_description(project, secret)
    with pytest.warns(UserWarning):  # loading a file holding a key warns (without the key)
        code, out, err = cli("check", "fixtures/text-turn", "--shuffle", "2", "--format", fmt)
    assert code == 1
    assert "[redacted]" in out  # the report shows where, not what
    summary = actions.read_text()
    assert "[redacted]" in summary
    assert_hidden(secret, out, err, summary)


def test_a_drift_report_redacts_before_it_cuts(project: Path, cli: Cli) -> None:
    """The excerpt ends inside the key: the visible part must be redacted too."""
    key = "sk-ant-api03-" + "Q" * 60 + "-tail"
    put_in_description(project, key)
    with pytest.warns(UserWarning):
        code, out, _ = cli("check", "fixtures/text-turn", "--shuffle", "0")
    assert code == 1
    assert_hidden(key, out)
    assert "QQQQQQQQQQQQ" not in out


def test_replay_and_show_never_print_the_key(project: Path, cli: Cli) -> None:
    put_in_description(project, ANTHROPIC_KEY)
    with pytest.warns(UserWarning):
        _, replay_out, replay_err = cli("replay", "fixtures/text-turn", "-v")
        _, show_out, show_err = cli("show", "fixtures/text-turn")
    assert_hidden(ANTHROPIC_KEY, replay_out, replay_err, show_out, show_err)


def test_diff_never_prints_a_key(project: Path, cli: Cli) -> None:
    a, b = project / "a.json", project / "b.json"
    a.write_text(json.dumps({"system": f"key {ANTHROPIC_KEY} first", "tools": []}))
    b.write_text(json.dumps({"system": f"key {ANTHROPIC_KEY} second", "tools": []}))
    for fmt in ("text", "markdown", "json"):
        code, out, err = cli("diff", "a.json", "b.json", "--format", fmt)
        assert code == 1
        assert_hidden(ANTHROPIC_KEY, out, err)


def answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json=anthropic_message("Sunny."))


def test_a_cassette_mismatch_never_shows_the_key(tmp_path: Path) -> None:
    url = "https://api.anthropic.com/v1/messages"
    cassette = tmp_path / "c.json"
    body: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 8,
        "system": "You are terse and you answer in one word.",
        "messages": [{"role": "user", "content": "Weather?"}],
    }
    recorder = CaptureSession.for_test(
        cassette, "record", writes_allowed=True, upstream=httpx2.MockTransport(answer)
    )
    recorder.httpx2_client().post(url, json=body)
    ((path, data),) = recorder.finish().files
    path.write_bytes(data)

    body["system"] = f"You are terse, key {ANTHROPIC_KEY}, and you answer in one word."
    replay = CaptureSession.for_test(cassette, "check", writes_allowed=False)
    with pytest.raises(CassetteMismatch) as caught:
        replay.httpx2_client().post(url, json=body)
    assert "system" in str(caught.value)
    assert_hidden(ANTHROPIC_KEY, str(caught.value))


def test_the_plugin_never_prints_a_key(pytester: pytest.Pytester, actions: Path) -> None:
    pytester.makepyfile(
        test_key="""
KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"


def build(order):
    return {"tools": [{"name": n, "description": f"use {KEY} for {n}"} for n in order]}


def test_racy(registration_shuffle):
    seen = []

    def racy(order):
        seen.append(1)
        return build(order if len(seen) % 2 else list(reversed(order)))

    registration_shuffle.assert_stable(racy, ["a", "b", "c"])
"""
    )
    result = inner_pytest(pytester, "-p", "no:randomly")
    result.assert_outcomes(failed=1)
    assert_hidden(ANTHROPIC_KEY, result.stdout.str(), actions.read_text())


# -- 8: nothing printed can forge a workflow command ---------------------------------------------

FORGED = "path\n::warning file=app.py,line=1::forged by a fixture"


def commands_run(stdout: str) -> list[str]:
    """The workflow commands GitHub runs for this output (it honours ::stop-commands::)."""
    run, stopped_by = [], None
    for line in stdout.splitlines():
        text = line.lstrip()
        if stopped_by is not None:
            if text == f"::{stopped_by}::":
                stopped_by = None
            continue
        if text.startswith("::stop-commands::"):
            stopped_by = text.removeprefix("::stop-commands::")
        elif text.startswith(("::", "##[")):
            run.append(text)
    return run


def plant_forged_key(project: Path) -> None:
    """The recorded tool call's input key holds a newline and a forged command: in the answers
    replay feeds back and in the log, with another value there, so the drift lies inside the
    key and every output names it (pointer, summary, excerpts, deepdiff lines, annotations)."""
    key = json.dumps(FORGED).encode()
    for name, value in (("answers.json", b'"."'), ("log.json", b'".."')):
        path = project / "fixtures/tool-turn" / name
        data = path.read_bytes()
        assert b'"path": "."' in data
        path.write_bytes(data.replace(b'"path": "."', key + b": " + value))


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_check_output_cannot_forge_a_workflow_command(
    project: Path, cli: Cli, actions: Path, fmt: str
) -> None:
    plant_forged_key(project)
    code, out, err = cli("check", "fixtures/tool-turn", "--shuffle", "0", "--format", fmt)
    assert code == 1
    commands = commands_run(out)
    assert commands and all(c.startswith("::error file=") for c in commands), commands
    assert "forged by a fixture" in out  # still shown, as text
    assert not commands_run(err)


def test_the_plugins_output_cannot_forge_a_workflow_command(
    pytester: pytest.Pytester, actions: Path
) -> None:
    pytester.makepyfile(
        test_forge=f"""
def test_racy(registration_shuffle):
    seen = []

    def racy(order):
        seen.append(1)
        tools = [{{"name": n, "input_schema": {{{FORGED!r}: {{}}}}}} for n in order]
        return {{"tools": tools if len(seen) % 2 else list(reversed(tools))}}

    registration_shuffle.assert_stable(racy, ["a", {FORGED!r}])
"""
    )
    # A fixed seed: the build alternates its answer with every call, so an unlucky seed whose
    # orders alternate in step with it (about 1 in 30) sends the same bytes every run.
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    commands = commands_run(out)
    assert commands and all(c.startswith("::error ") for c in commands), commands
    assert "forged by a fixture" in out  # a tool named so is still shown, as text


def test_an_annotation_escapes_the_content_it_quotes() -> None:
    from harness._shared._actions import annotation

    line = annotation(FORGED, file="fixtures/x", title="drift")
    assert "\n" not in line and commands_run(line) == [line]


# -- 15: bounded output ---------------------------------------------------------------------------

MIB = 1024 * 1024


def rename_tool(project: Path, name: str) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["plugins"][0]["tools"][1]["name"] = name  # write_file: not in the tool order

    edit_json(project / "fixtures/text-turn/scenario.json", edit)


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_a_1_mib_tool_name_gives_a_bounded_report(
    project: Path, cli: Cli, actions: Path, fmt: str
) -> None:
    rename_tool(project, "w" * MIB)
    code, out, _ = cli("check", "fixtures/text-turn", "--shuffle", "2", "--format", fmt)
    assert code == 1
    assert len(out) < 64 * 1024, len(out)
    assert re.search(r"\(\+1,048,\d{3} characters\)", out), "the cut is said"
    assert len(actions.read_bytes()) < 64 * 1024


def test_the_step_summary_never_passes_githubs_limit(actions: Path) -> None:
    assert write_step_summary("## first\n" + "| row |\n" * (300 * 1024))
    assert write_step_summary("## second\n" + "x" * (900 * 1024))
    data = actions.read_bytes()
    assert len(data) <= STEP_SUMMARY_LIMIT
    assert "did not fit GitHub's 1,024 KiB step summary limit" in data.decode()
