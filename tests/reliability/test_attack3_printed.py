"""Issue 32's printed-output doors: JSON that parses, lines that are bounded and escaped, and
Markdown in which nothing from the input renders.

1. `--format json` was redacted after it was encoded: a private key cut short before a `\\"`
   took the backslash with it, and the output no longer parsed. Each string is now redacted
   before the value is encoded.
2. A 20 MB `source` in a rules file or a 4 MiB model name was printed whole, and an ESC, a CR,
   a BEL, an 8-bit CSI or a bidirectional override in a value reached the terminal raw. Every
   text line printed is now bounded (an ellipsis and how many more characters) and escaped.
3. The Markdown report and the step summary showed a value from input as Markdown: an image
   GitHub fetches, a link, an `@`-mention that pings, a `|` that breaks the table. Each value is
   now inert.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness._shared import _actions, _printer
from harness._shared._printer import LINE_LIMIT
from tests.support.inner import inner_pytest

from .conftest import ANTHROPIC_KEY, Cli

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
OPAQUE = "opaque-credential-7f3a9c21e5"
# A private key cut short (an excerpt, a log line): its body runs as far as base64 goes, and a
# backslash is base64 to the shape (a JSON-escaped newline); the `"` after it ends the string.
CUT_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "Zq7Wm2" * 10


@pytest.fixture(autouse=True)
def _forget_learnt_words() -> Iterator[None]:
    _printer.reset()
    yield
    _printer.reset()


def proxy_log(path: Path, *models: str, headers: dict[str, str] | None = None) -> Path:
    """A proxy log, one request per model, each with a long cached system prompt."""
    lines = []
    for number, model in enumerate(models):
        body = {
            "model": model,
            "max_tokens": 8,
            "system": [
                {
                    "type": "text",
                    "text": f"rules {number} " + "word " * 1500,
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            "messages": [{"role": "user", "content": "hi"}],
        }
        line = {"url": ANTHROPIC_URL, "body": body, "headers": headers or {}}
        lines.append(json.dumps(line) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


# -- 1. JSON parses -------------------------------------------------------------------------------

HOSTILE = {
    "a key then a quote": f'claude "{ANTHROPIC_KEY}" x',
    "a cut private key then a quote": f'claude {CUT_KEY}" tail',
    "a key among escapes": f'claude\t{ANTHROPIC_KEY}\n\\ "q" {CUT_KEY}\\',
    "a header's value then a backslash": f"claude {OPAQUE}\\",
}


def assert_parses_without(text: str, *secrets: str) -> Any:
    value = json.loads(text)  # before: "Expecting ',' delimiter"
    for secret in secrets:
        assert secret[20:40] not in text
    return value


@pytest.mark.parametrize("model", list(HOSTILE))
def test_json_is_redacted_before_it_is_encoded(model: str) -> None:
    from harness._shared._formats import as_json

    value = {"model": HOSTILE[model], "nested": [{HOSTILE[model]: 1}]}
    _printer.extend(secrets=[OPAQUE])
    assert_parses_without(as_json(value), ANTHROPIC_KEY, CUT_KEY)
    assert OPAQUE not in as_json(value) and "[redacted]" in as_json(value)


@pytest.mark.slow
@pytest.mark.parametrize("model", list(HOSTILE))
def test_json_output_parses_whatever_a_value_holds(tmp_path: Path, cli: Cli, model: str) -> None:
    log = proxy_log(tmp_path / "log.jsonl", HOSTILE[model], headers={"x-api-key": OPAQUE})
    line = json.loads(log.read_text().splitlines()[0])
    (tmp_path / "a.json").write_text(json.dumps(line), encoding="utf-8")
    line["body"]["system"][0]["text"] = "changed " + HOSTILE[model]
    (tmp_path / "b.json").write_text(json.dumps(line), encoding="utf-8")
    for command in (
        ["lint", str(log)],
        ["cost", str(log)],
        ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
    ):
        _, out, _ = cli(*command, "--format", "json")
        assert_parses_without(out, ANTHROPIC_KEY, CUT_KEY, OPAQUE + "xxxxxxxxxxxxxxxxxxxx")
        assert "[redacted]" in out


def test_json_output_keeps_a_clean_value_exactly(tmp_path: Path, cli: Cli) -> None:
    """The near miss: quotes, backslashes, tabs and non-ASCII in a value come back as they were."""
    model = 'claude "quoted" \\ back\tslash caf\u00e9 \u4e2d'
    _, out, _ = cli("cost", str(proxy_log(tmp_path / "log.jsonl", model)), "--format", "json")
    assert json.loads(out)["sessions"][0]["model"] == model


def test_json_on_an_ascii_terminal_still_parses(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A character the terminal cannot encode is a JSON escape, not Python's `\\xe9`."""
    import io
    import sys

    model = "claude caf\u00e9 \U0001f600"
    log = proxy_log(tmp_path / "log.jsonl", model)
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stream)
    from harness.cli import main

    assert main(["cost", str(log), "--format", "json"]) == 0
    stream.flush()
    assert isinstance(stream.buffer, io.BytesIO)
    assert json.loads(stream.buffer.getvalue())["sessions"][0]["model"] == model


# -- 2. bounded and escaped lines -----------------------------------------------------------------


def assert_bounded(text: str) -> None:
    for line in text.splitlines():
        assert len(line) <= LINE_LIMIT + 40, f"a line of {len(line):,} characters is printed"


def rules_file(path: Path, source: str) -> Path:
    row = {
        "rule": "minimum",
        "providers": ["anthropic"],
        "models": ["claude-opus-4-6*"],
        "tokens": 1024,
        "source": source,
        "checked_on": "2026-12-01",
    }
    path.write_text(json.dumps({"kind": "harness/rules", "format": 1, "rows": [row]}))
    return path


@pytest.mark.slow
def test_a_20_mb_source_in_a_rules_file_is_cut_with_its_length(tmp_path: Path, cli: Cli) -> None:
    source = "measured " * (20 * 1024 * 1024 // 9)
    code, out, _ = cli("rules", "--rules", str(rules_file(tmp_path / "r.json", source)))
    assert code == 0
    assert len(out) < 200_000  # before: 20 MB on the terminal
    assert_bounded(out)
    printed = f"  source: {source} (checked 2026-12-01)"
    assert f"… (+{len(printed) - LINE_LIMIT:,} characters)" in out


def test_a_short_source_is_printed_whole(tmp_path: Path, cli: Cli) -> None:
    """The near miss: a row's source of ordinary length is shown as it is, uncut."""
    source = "our own measurement, " * 20
    _, out, _ = cli("rules", "--rules", str(rules_file(tmp_path / "r.json", source)))
    assert f"  source: {source} (checked 2026-12-01)" in out


def test_a_4_mib_line_is_cut_with_its_length(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli._output import out

    out(f"model {'x' * (4 * 1024 * 1024)} end\nnext line")
    printed = capsys.readouterr().out
    assert printed.endswith(f"… (+{4 * 1024 * 1024 + 10 - LINE_LIMIT:,} characters)\nnext line\n")
    assert_bounded(printed)


@pytest.mark.slow
def test_a_long_model_name_is_cut_in_every_text_output(tmp_path: Path, cli: Cli) -> None:
    """4 MiB, past what a line redacts (`LINE_LIMIT + REACH`). Such a name matches none of the
    rules pack's model patterns (`MODEL_NAME_LIMIT`): matching it took minutes before."""
    model = "claude-sonnet-4-" + "x" * (4 * 1024 * 1024)
    log = proxy_log(tmp_path / "log.jsonl", model, model)
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    outputs = [
        cli("lint", str(log))[1],
        cli("cost", str(log))[1],
        cli("report", str(log), "--html", str(html), "--markdown", str(md))[1],
        md.read_text(),
    ]
    for out in outputs:
        assert_bounded(out)
        assert len(out) < 100_000
    assert "characters)" in outputs[0] and "characters)" in outputs[1]
    assert len(html.read_text()) < 100_000


def test_a_model_name_of_megabytes_matches_no_rule() -> None:
    from harness.providers._model_names import MODEL_NAME_LIMIT, model_matches

    prefix = "claude-sonnet-4-"
    assert model_matches(prefix + "x" * (MODEL_NAME_LIMIT - len(prefix)), "claude-sonnet-4*")
    assert not model_matches(prefix + "x" * (4 * 1024 * 1024), "claude-sonnet-4*")
    assert not model_matches(prefix + "x" * (4 * 1024 * 1024), "*sonnet*")


CONTROLS = {
    "ESC colour": "\x1b[31mred\x1b[0m",
    "carriage return": "shown\roverwritten",
    "bell": "ring\x07",
    "8-bit CSI": "\x9b31m",
    "bidirectional override": "abc\u202edcba",
    "NUL": "nul\x00byte",
}
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("what", list(CONTROLS))
def test_control_characters_are_printed_escaped(tmp_path: Path, cli: Cli, what: str) -> None:
    model = f"claude-{CONTROLS[what]}-model"
    log = proxy_log(tmp_path / "log.jsonl", model, model + "2")
    line = json.loads(log.read_text().splitlines()[0])
    (tmp_path / "a.json").write_text(json.dumps(line))
    line["body"]["model"] = model + "-b"
    (tmp_path / "b.json").write_text(json.dumps(line))
    md = tmp_path / "r.md"
    outputs = {
        "lint": "".join(cli("lint", str(log))[1:]),
        "cost": "".join(cli("cost", str(log))[1:]),
        "diff": "".join(cli("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))[1:]),
        "report": "".join(cli("report", str(log), "--markdown", str(md))[1:]) + md.read_text(),
    }
    for door, out in outputs.items():
        assert RAW.search(out) is None, f"{door} prints {RAW.search(out)!r} raw"
    assert "\\x" in outputs["cost"] or "\\r" in outputs["cost"] or "\\u202e" in outputs["cost"]


def test_letters_of_every_script_are_printed_as_they_are(tmp_path: Path, cli: Cli) -> None:
    """The near miss: non-ASCII letters are no control characters."""
    model = "claude-caf\u00e9-\u4e2d\u6587-\u05e9\u05dc\u05d5\u05dd"
    _, out, _ = cli("cost", str(proxy_log(tmp_path / "log.jsonl", model)))
    assert model in out


def test_an_annotation_escapes_control_characters() -> None:
    made = _actions.annotation("bad \x1b[31mred\x1b[0m\nnext", file="a\x07.py", title="t\x9b")
    assert RAW.search(made) is None and "%0A" in made and "\\x1b" in made


# -- 3. inert Markdown ----------------------------------------------------------------------------

MARKDOWN = "![x](https://evil.example/p.png) [click](https://evil.example) @octocat | col <b>"


FENCED = re.compile(r"^(`{3,})[^\n]*\n.*?^\1$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)")


def assert_inert(markdown: str) -> None:
    """Nothing of MARKDOWN renders: outside code spans (where nothing renders) no image or link
    syntax, no raw HTML, and nowhere a mention or a bare URL GitHub would link; no table row
    with more cells than its header."""
    prose = CODE_SPAN.sub("", FENCED.sub("", markdown))
    assert re.search(r"(?<!\\)!(?<!\\)\[", prose) is None, prose  # an image
    assert re.search(r"(?<!\\)\]\(", prose) is None, prose  # a link
    assert "<b>" not in prose and "@octocat" not in prose  # raw HTML, a mention that pings
    assert "https://evil" not in prose  # a bare URL GitHub links
    header = 0
    for line in markdown.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = len(re.findall(r"(?<!\\)\|", line))
            header = header if header and "---" not in line else cells
            assert cells <= header or header == 0, line
        elif not line.startswith("|"):
            header = 0


def test_the_markdown_report_shows_input_inert(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "a|b @team"
    folder.mkdir()
    log = proxy_log(folder / "log.jsonl", f"claude {MARKDOWN}", f"claude {MARKDOWN} 2")
    md = tmp_path / "r.md"
    assert cli("report", str(log), "--markdown", str(md))[0] == 0
    text = md.read_text()
    assert "| conversation | model |" in text and "octocat" in text  # still shown, as text
    assert_inert(text)


def test_markdown_of_plain_values_reads_as_before(tmp_path: Path, cli: Cli) -> None:
    """The near miss: a plain model and file name are shown as they are, in code spans."""
    md = tmp_path / "r.md"
    log = proxy_log(tmp_path / "log.jsonl", "claude-sonnet-4-5")
    cli("report", str(log), "--markdown", str(md))
    assert "| `claude-sonnet-4-5` |" in md.read_text()


@pytest.mark.slow
def test_the_step_summary_shows_input_inert(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile(
        test_md=f"""
import pytest


@pytest.mark.parametrize("name", [{MARKDOWN!r}], ids=[{MARKDOWN!r}])
def test_racy(registration_shuffle, name):
    seen = []

    def racy(order):
        seen.append(1)
        tools = [{{"name": n, "description": name}} for n in order]
        return {{"tools": tools if len(seen) % 2 else list(reversed(tools))}}

    registration_shuffle.assert_stable(racy, ["a", name])
"""
    )
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-seed=1")
    result.assert_outcomes(failed=1)
    text = summary.read_text()
    assert "octocat" in text
    assert_inert(text)


def test_show_requests_prints_a_long_request_whole_and_escaped(tmp_path: Path, cli: Cli) -> None:
    """The near miss: `harness show --requests` is asked for whole requests: a 20,000-character
    line is printed whole (redacted and escaped still), not cut."""
    from tests.support.bodies import claude, record_cassette

    body = claude(1100)
    body["system"][0]["text"] = "long rule " * 2000 + "end"
    cassette = record_cassette(tmp_path / "c.json", body)
    code, out, _ = cli("show", str(cassette), "--requests")
    assert code == 0
    assert "long rule " * 2000 + "end" in out and "characters)" not in out
