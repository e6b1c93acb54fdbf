"""`harness lint` as a user meets it, bodies written from the providers' documents (SPEC part D):
the issue's wording, each rule on its documented case and silent on the near miss, the project's
rows, sessions with `{url, body, time, response}` lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

RESPONSES_URL = "https://api.openai.com/v1/responses"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    "anthropic.claude-sonnet-4-5-20250929-v1:0/converse"
)
VERTEX_URL = (
    "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/"
    "anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
)
MARK = {"type": "ephemeral"}


def words(tokens: int) -> str:
    """About `tokens` tokens at bytes / 4."""
    return "word " * (tokens * 4 // 5)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lint(
    capsys: pytest.CaptureFixture[str], path: Path, value: Any, *args: str
) -> tuple[int, list[dict[str, Any]]]:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(v) + "\n" for v in value), encoding="utf-8")
    else:
        path.write_text(json.dumps(value), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path), "--format", "json", *args)
    return code, json.loads(out)["findings"]


def rules(findings: list[dict[str, Any]]) -> list[str]:
    return [finding["rule"] for finding in findings]


def claude(model: str, tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": words(tokens), "cache_control": MARK}],
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def test_a_116_token_prefix_on_opus_4_6_says_the_issues_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, findings = lint(capsys, tmp_path / "b.json", claude("claude-opus-4-6", 116))
    assert code == 0
    (finding,) = findings
    assert (finding["rule"], finding["severity"], finding["request"]) == (
        "below-minimum",
        "warning",
        0,
    )
    assert re.match(
        r"nothing is cached: [\d,]+ tokens, minimum 4,096 for claude-opus-4-6", finding["message"]
    ), finding["message"]


def test_the_same_prefix_on_a_model_with_a_lower_minimum_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, findings = lint(capsys, tmp_path / "b.json", claude("claude-opus-5", 700))
    assert findings == []
    _, findings = lint(capsys, tmp_path / "b.json", claude("claude-opus-4-6", 700))
    assert rules(findings) == ["below-minimum"]
