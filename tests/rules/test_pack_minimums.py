"""Every current model family has a minimum of its own, ahead of any broad pattern, and the
platforms that disagree say so: through `harness lint`, one token under each new minimum caches
nothing (`below-minimum`) and the minimum itself is silent.

The figures are the providers' pages as re-checked on 2026-12-05 (the rows quote them, `harness
rules` prints them): Anthropic's 512 for the 5.x families (Sonnet 5.5 got 1,024 from a broad
pattern before), Bedrock's 4,096 for Opus 4.7 and Mythos Preview where Anthropic says 2,048,
OpenAI's 1,024 for GPT-5.6 and later (the GPT-6 family had no row), Gemini's 4,096 for Gemini 4
Argon and 3.1 Pro Preview (no row before).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, RESPONSES_URL, claude, line, responses, sized


def lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str
) -> tuple[int, list[tuple[str, str, int]], list[str]]:
    """`harness lint --format json` on a session file: exit code, (rule, severity, request) per
    finding, and the messages."""
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["lint", str(path), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return (
        code,
        [(f["rule"], f["severity"], f["request"]) for f in found],
        [f["message"] for f in found],
    )


def bedrock_url(model: str, api: str = "converse") -> str:
    return f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/{api}"


def converse_marked(tokens: int) -> dict[str, Any]:
    """A Converse body whose only block is `tokens` long and ends at a cache point: the marked
    prefix is the whole request, whatever caching mode reads it."""
    block = sized({"text": ""}, tokens)
    content = [block, {"cachePoint": {"type": "default"}}]
    return {"messages": [{"role": "user", "content": content}]}


def gemini(tokens: int) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [sized({"text": ""}, tokens)]}]}


def gemini_url(model: str) -> str:
    return f"https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent"


ANTHROPIC_FAMILIES = [
    ("claude-sonnet-5-5", 512),
    ("claude-haiku-5-5", 512),
    ("claude-opus-5-5", 512),
    ("claude-fable-5-1", 512),
    ("claude-mythos-5-1", 512),
    ("claude-opus-4-7", 2048),
    ("claude-mythos-preview", 2048),
    ("claude-sonnet-5", 1024),
]


@pytest.mark.parametrize(("model", "minimum"), ANTHROPIC_FAMILIES)
def test_each_anthropic_family_has_its_own_minimum(
    model: str, minimum: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found, messages = lint(
        tmp_path, capsys, line(claude(minimum - 1, model=model), ANTHROPIC_URL)
    )
    assert (code, found) == (0, [("below-minimum", "warning", 0)]), model
    assert f"minimum {minimum:,} for {model}" in messages[0]
    for tokens in (minimum, minimum + 1):
        body = claude(tokens, model=model)
        assert lint(tmp_path, capsys, line(body, ANTHROPIC_URL))[:2] == (0, []), (model, tokens)


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-5-5-20261001",
        "us.anthropic.claude-sonnet-5-5-v1:0",
        "claude-sonnet-5-5@20261001",
    ],
)
def test_a_dated_or_platform_model_id_is_its_family(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, found, messages = lint(tmp_path, capsys, line(claude(511, model=model), ANTHROPIC_URL))
    assert (code, found) == (0, [("below-minimum", "warning", 0)]) and "minimum 512" in messages[0]
    assert lint(tmp_path, capsys, line(claude(512, model=model), ANTHROPIC_URL))[:2] == (0, [])


def test_a_later_family_no_row_names_is_unknown_not_a_neighbours_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the broad pattern that gave Sonnet 5.5 Sonnet 5's 1,024 is gone: a family the pack does
    # not know abstains and says so, whatever its neighbours' figures
    for model in ("claude-sonnet-5-7", "claude-opus-5-9", "gemini-4-flash"):
        url = gemini_url(model) if model.startswith("gemini") else ANTHROPIC_URL
        body = gemini(600) if model.startswith("gemini") else claude(600, model=model)
        code, found, messages = lint(tmp_path, capsys, line(body, url))
        assert (code, found) == (0, [("unknown-model", "info", 0)]), model
        assert model in messages[0]


@pytest.mark.parametrize(
    "model", ["anthropic.claude-opus-4-7", "us.anthropic.claude-mythos-preview"]
)
def test_bedrock_says_4096_where_anthropic_says_2048(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = bedrock_url(model)
    code, found, messages = lint(tmp_path, capsys, line(converse_marked(4095), url))
    assert (code, found) == (0, [("below-minimum", "warning", 0)])
    assert "minimum 4,096" in messages[0]
    assert lint(tmp_path, capsys, line(converse_marked(4096), url))[:2] == (0, [])
    # near miss: the same model on the Claude API, 2,048 tokens, caches
    family = model.split("anthropic.")[-1]
    assert lint(tmp_path, capsys, line(claude(2048, model=family), ANTHROPIC_URL))[:2] == (0, [])


def test_claude_through_bedrock_invoke_model_has_bedrocks_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(2048, model="claude-opus-4-7")
    del body["model"]
    body["anthropic_version"] = "bedrock-2023-05-31"
    url = bedrock_url("anthropic.claude-opus-4-7", "invoke")
    found = lint(tmp_path, capsys, line(body, url))[1]
    assert ("below-minimum", "warning", 0) in found


@pytest.mark.parametrize("model", ["gpt-6", "gpt-6.1-sol", "gpt-5.6-terra"])
def test_the_gpt_6_family_and_gpt_5_6_cache_from_1024(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    under = responses(1023, breakpoints=1, model=model)
    code, found, messages = lint(tmp_path, capsys, line(under, RESPONSES_URL))
    assert (code, found) == (0, [("below-minimum", "warning", 0)]), model
    assert "minimum 1,024" in messages[0]
    body = responses(1024, breakpoints=1, model=model)
    assert lint(tmp_path, capsys, line(body, RESPONSES_URL))[:2] == (0, [])


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("gemini-4-argon", 4096),
        ("gemini-3.1-pro-preview", 4096),
        ("gemini-3.8-flash", 4096),
        ("gemini-2.5-flash", 2048),
    ],
)
def test_gemini_families_have_their_implicit_caching_minimums(
    model: str, minimum: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = gemini_url(model)
    code, found, messages = lint(tmp_path, capsys, line(gemini(minimum - 1), url))
    assert (code, found) == (0, [("below-minimum", "info", 0)]), model  # implicit: nothing asked
    assert f"minimum {minimum:,}" in messages[0]
    assert lint(tmp_path, capsys, line(gemini(minimum), url))[:2] == (0, [])
