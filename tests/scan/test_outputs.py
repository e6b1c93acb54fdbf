"""What `harness scan` writes and prints beside its JSON: SARIF 2.1.0 (one result per finding,
`ruleId` the verdict), one self-contained HTML page on `harness report`'s page, Markdown; and
nothing from a trace that looks like a secret reaches any of them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness._shared._printer import redact, redact_all
from tests.scan.traces import run, session_lines, write_lines
from tests.support.paths import EXAMPLES

SECRET = "sk-ant-api03-" + "Zq9" * 30 + "AA"


def broken(folder: Path, *, secret: bool = False) -> Path:
    def edit(turn: int, body: dict[str, Any]) -> None:
        if secret:
            body["system"][0]["text"] += f" key {SECRET}"
        if turn >= 3:
            body["tools"] = list(reversed(body["tools"]))
            body["tools"][0]["description"] = f"uses {SECRET}" if secret else "moved"

    session = f"user-{SECRET}" if secret else "s"
    return write_lines(folder / "t.jsonl", session_lines(session, edit=edit, deploy="v2"))


def test_sarif_is_2_1_0_with_one_result_per_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sarif = tmp_path / "scan.sarif"
    paths = [str(broken(tmp_path)), str(EXAMPLES / "traces" / "otel.json")]
    code, out, _ = run(capsys, *paths, "--sarif", str(sarif), "--format", "json")
    report = json.loads(out)
    assert code == 1
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    [run_] = log["runs"]
    results = run_["results"]
    assert len(results) == len(report["findings"]) == 3
    assert [r["ruleId"] for r in results] == [f["verdict"] for f in report["findings"]]
    rules = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert {r["level"] for r in results} == {"error", "warning"}
    located = results[0]["locations"][0]["physicalLocation"]
    assert located["artifactLocation"]["uri"].endswith("t.jsonl")
    assert located["region"]["startLine"] == 3


def test_the_html_page_is_self_contained_and_carries_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "scan.html"
    code, out, _ = run(capsys, str(broken(tmp_path)), "--html", str(page), "--format", "json")
    report = json.loads(out)
    assert code == 1
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    figure = re.search(r'data-figure="usd_lost" data-value="([^"]+)"', html)
    assert figure is not None and float(figure.group(1)) == report["totals"]["usd_lost"]
    assert 'data-verdict="tools_changed"' in html
    assert "Prompt-cache breaks" in html


def test_markdown_is_a_table_of_the_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, str(broken(tmp_path)), "--format", "markdown")
    assert code == 1
    assert out.startswith("## harness scan")
    assert "| `s` | 3 | **tools_changed** (error) | exact | tools |" in out


def test_a_secret_in_a_trace_reaches_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = broken(tmp_path, secret=True)
    sarif, page = tmp_path / "s.sarif", tmp_path / "s.html"
    outputs = []
    for fmt in ("text", "json", "markdown"):
        code, out, err = run(
            capsys, str(path), "--format", fmt, "--sarif", str(sarif), "--html", str(page)
        )
        assert code == 1
        outputs += [out, err, sarif.read_text(), page.read_text()]
    assert all(SECRET not in text and SECRET[:30] not in text for text in outputs)
    assert any("[redacted]" in text for text in outputs)


# -- many strings cleared at once (`harness._shared._printer.redact_all`, what the JSON uses) --

KEYS = [
    SECRET,
    f"Bearer {SECRET}",
    "https://bob:hunter2-Correct-Horse@db.example.com/x",
    "sk-ant-api03-" + "%5A" * 2 + "q9" * 40,  # percent-encoded in part
    "c2stYW50LWFwaTAzLVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpxOVpx",
]
CLEAN = ["s12", "stable", "claude-sonnet-4-5", "api.anthropic.com/v1/messages", "user-7", "é"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.one_of(st.sampled_from(KEYS + CLEAN), st.text(max_size=12)), max_size=40),
    where=st.integers(0, 40),
)
def test_strings_cleared_at_once_are_redacted_as_one_by_one(texts: list[str], where: int) -> None:
    texts.insert(min(where, len(texts)), "a line that holds " + SECRET[:-3] + " cut")
    assert redact_all(texts) == {text: redact(text) for text in texts}


def test_a_key_among_a_thousand_clean_strings_is_redacted_wherever_it_stands() -> None:
    clean = [f"session-{n}" for n in range(1200)]
    for where in (0, 511, 512, 700, 1199):
        texts = [*clean[:where], f"user-{SECRET}", *clean[where:]]
        found = redact_all(texts)
        assert SECRET not in found[f"user-{SECRET}"]
        assert all(found[text] == text for text in clean)
