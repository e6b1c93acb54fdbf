"""`volatile-in-prefix` wherever a provider takes a system prompt, and written-out dates.

Issue 34 (item 7): a timestamp in a Responses `input` system message (pydantic-ai's shape) was
missed; issue 30: a written-out date ("Thursday, 3 December 2026", "December 3, 2026") in the
system prompt. Each through `harness lint` on the provider's own body, with the near misses that
must stay silent: the same date in the user's question, a version string, "May" as a word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

TODAY = "Today is Thursday, 3 December 2026."
GEMINI_URL = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
)
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5/converse"
)


def lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, body: dict[str, Any]
) -> list[str]:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"url": url, "body": body}), encoding="utf-8")
    main(["lint", str(path), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return [
        f"{f['rule']} {f.get('pointer', '')} {f['message']}"
        for f in found
        if f["rule"] == "volatile-in-prefix"
    ]


def shapes(
    system: str, question: str = "What is on today?"
) -> dict[str, tuple[str, dict[str, Any]]]:
    """The same system prompt in every place a provider takes one."""
    return {
        "anthropic system": (
            "https://api.anthropic.com/v1/messages",
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 9,
                "system": system,
                "messages": [{"role": "user", "content": question}],
            },
        ),
        "chat system message": (
            "https://api.openai.com/v1/chat/completions",
            {
                "model": "gpt-5",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": question},
                ],
            },
        ),
        "responses input system message": (
            "https://api.openai.com/v1/responses",
            {
                "model": "gpt-5",
                "input": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": question},
                ],
            },
        ),
        "responses input developer message": (
            "https://api.openai.com/v1/responses",
            {
                "model": "gpt-5",
                "input": [
                    {
                        "type": "message",
                        "role": "developer",
                        "content": [{"type": "input_text", "text": system}],
                    },
                    {"role": "user", "content": question},
                ],
            },
        ),
        "responses instructions": (
            "https://api.openai.com/v1/responses",
            {"model": "gpt-5", "instructions": system, "input": question},
        ),
        "gemini systemInstruction": (
            GEMINI_URL,
            {
                "systemInstruction": {"parts": [{"text": system}]},
                "contents": [{"role": "user", "parts": [{"text": question}]}],
            },
        ),
        "bedrock system": (
            BEDROCK_URL,
            {
                "system": [{"text": system}],
                "messages": [{"role": "user", "content": [{"text": question}]}],
            },
        ),
    }


@pytest.mark.parametrize("shape", list(shapes("x")))
def test_a_volatile_system_prompt_is_found_in_every_place_a_provider_takes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    url, body = shapes(f"Be brief. Now: 2026-12-03T10:15:00Z. {TODAY}")[shape]
    found = lint(tmp_path, capsys, url, body)
    assert found and "2026-12-03T10:15:00Z" in found[0], found
    # near miss: the same values in the user's question, the part that grows, stay silent
    url, body = shapes("Be brief.", question=f"Now: 2026-12-03T10:15:00Z. {TODAY}")[shape]
    assert lint(tmp_path, capsys, url, body) == []


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        ("Today is Thursday, 3 December 2026.", "Thursday, 3 December 2026"),
        ("Today is December 3, 2026.", "December 3, 2026"),
        ("Today is Thursday, December 3rd, 2026.", "Thursday, December 3rd, 2026"),
        ("It is the 3rd of December 2026.", "the 3rd of December 2026"),
        ("Today is Thursday, 3 December.", "Thursday, 3 December"),
        ("The date: 3 Dec 2026.", "3 Dec 2026"),
        ("Today is December 3rd.", "December 3rd"),
        ("Heute ist der 03.12.2026.", "03.12.2026"),
    ],
)
def test_written_out_dates_in_the_system_prompt_are_volatile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], said: str, quoted: str
) -> None:
    url, body = shapes(f"You are a helpful assistant. {said}")["anthropic system"]
    found = lint(tmp_path, capsys, url, body)
    assert len(found) == 1 and f'looks like a date: "{quoted}' in found[0], found


@pytest.mark.parametrize(
    "said",
    [
        "You may use the tools. Answers are due in May.",
        "May 3 agents work at once? Yes.",
        "Use API version 2023-06-01 and SDK version 2026.12.3.",
        "Call tool v2.3.2026 first.",
        "Give dates like December 3, 2026 (e.g. December 3, 2026).",
        "Open Monday to Friday; the report covers March 2026.",
        "Python 3.12.3 is installed.",
    ],
)
def test_near_misses_stay_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], said: str
) -> None:
    url, body = shapes(f"You are a helpful assistant. {said}")["anthropic system"]
    assert lint(tmp_path, capsys, url, body) == []
