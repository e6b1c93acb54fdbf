"""`harness cost` and `harness report` as a user meets them: the JSON shape the issue names, an
unknown `--model` (one line, exit 2, never a silent $0), `--markdown` on its own, bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

KEYS = {
    "file",
    "provider",
    "model",
    "requests",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "hit_rate",
    "usd",
    "usd_without_cache",
    "recorded",
    "agreement",
    "prices_checked_on",
}


def words(tokens: int) -> str:
    return "word " * (tokens * 4 // 5)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def claude_body(model: str = "claude-sonnet-4-5", tokens: int = 3000) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": words(tokens), "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }


def session(path: Path, *bodies: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(body) + "\n" for body in bodies), encoding="utf-8")
    return str(path)


def test_cost_json_has_exactly_the_named_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude_body()
    later = {**body, "messages": [*body["messages"], {"role": "assistant", "content": "a"}]}
    later["messages"].append({"role": "user", "content": "more"})
    path = session(tmp_path / "s.jsonl", body, later)
    code, out, _ = run(capsys, "cost", path, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert set(report) == {"sessions", "totals"}
    (one,) = report["sessions"]
    assert set(one) == KEYS
    assert one["requests"] == 2 and one["provider"] == "anthropic"
    assert one["cache_write_tokens"] > 0 and one["cache_read_tokens"] > 0
    assert one["input_tokens"] == (
        one["cache_read_tokens"] + one["cache_write_tokens"] + one["uncached_tokens"]
    )
    assert 0 < one["hit_rate"] < 1
    assert one["recorded"] is None and one["agreement"] is None
    assert one["usd"] < one["usd_without_cache"]


@pytest.mark.parametrize("command", ["cost", "report"])
def test_an_unknown_model_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    extra = ["--html", str(tmp_path / "r.html")] if command == "report" else []
    code, out, err = run(capsys, command, path, "--model", "claude-nonexistent-9", *extra)
    assert code == 2
    assert out == ""
    (said,) = err.strip().splitlines()
    assert "claude-nonexistent-9" in said and "harness-prices.json" in said
    assert not (tmp_path / "r.html").exists()


def test_a_known_model_reprices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    code, out, _ = run(capsys, "cost", path, "--model", "claude-opus-4-6", "--format", "json")
    assert code == 0
    assert json.loads(out)["sessions"][0]["model"] == "claude-opus-4-6"


def test_report_markdown_on_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    target = tmp_path / "summary.md"
    code, _out, _ = run(capsys, "report", path, "--markdown", str(target))
    assert code == 0
    assert "claude-sonnet-4-5" in target.read_text(encoding="utf-8")
    assert not list(tmp_path.glob("*.html"))


def test_report_without_an_output_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    code, _, err = run(capsys, "report", path)
    assert code == 2
    assert "--html" in err and "--markdown" in err and len(err.strip().splitlines()) == 1
