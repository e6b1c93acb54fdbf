"""`harness diff` gives the provider's verdict whatever the spacing or escaping of a body.

google-genai, botocore, litellm and DSPy send spaced JSON (`json.dumps` defaults, `ensure_ascii`
escapes); a cassette keeps such a body as `text`. The diff parses it: a reorder is
`tools_changed` at `/tools/N`, never "values differ at /text", and two bodies that differ only in
spacing or escaping are identical to the provider's cache, said in words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.capture import CaptureFile, Exchange
from harness.capture._cassette import HttpRequest, HttpResponse
from harness.cli import main

CHAT = "https://api.openai.com/v1/chat/completions"
GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"


def chat(tools: str = "abcd") -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "messages": [{"role": "system", "content": "Sé breve."}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": name}} for name in tools],
    }


def recorded(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """A recorded request as a cassette keeps a spaced body: as text."""
    return {"method": "POST", "url": url, "headers": [], "text": json.dumps(body, indent=1)}


def diff(tmp_path: Path, capsys: pytest.CaptureFixture[str], a: str, b: str) -> tuple[int, str]:
    (tmp_path / "a.json").write_text(a, encoding="utf-8")
    (tmp_path / "b.json").write_text(b, encoding="utf-8")
    code = main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    return code, capsys.readouterr().out


def test_a_reorder_in_spaced_recorded_requests_is_tools_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = json.dumps(recorded(CHAT, chat()))
    b = json.dumps(recorded(CHAT, chat("abdc")))
    code, out = diff(tmp_path, capsys, a, b)
    assert code == 1
    assert out.startswith("tools_changed: tools reordered") and "/tools/2" in out
    assert "/text" not in out


def test_a_gemini_body_spaced_by_google_genai_gets_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def body(names: str) -> dict[str, Any]:
        functions = [{"name": name, "description": "é"} for name in names]
        return {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": functions}],
        }

    code, out = diff(
        tmp_path,
        capsys,
        json.dumps(recorded(GEMINI, body("abcd"))),
        json.dumps(recorded(GEMINI, body("abcx"))),
    )
    assert code == 1 and out.startswith("tools_changed:") and '"d"' in out


def test_spacing_and_escaping_alone_are_identical_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spaced = json.dumps(chat(), indent=2, ensure_ascii=True)
    compact = json.dumps(chat(), separators=(",", ":"), ensure_ascii=False)
    code, out = diff(tmp_path, capsys, spaced, compact)
    assert code == 0
    assert out.startswith("identical: ") and "the same request to the provider's cache" in out
    assert "differ only in JSON spacing or escaping" in out
    # the near miss: one escaped character that is another character is a change
    code, out = diff(tmp_path, capsys, spaced, compact.replace("Sé", "Se"))
    assert code == 1 and out.startswith("system_changed")


def test_cassettes_with_spaced_requests_are_compared_in_cache_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def cassette(tools: str) -> str:
        request = HttpRequest(method="POST", url=CHAT, text=json.dumps(chat(tools), indent=1))
        exchange = Exchange(request, HttpResponse(status=200, json={"ok": True}))
        return msgspec.json.encode(CaptureFile(exchanges=(exchange,))).decode()

    code, out = diff(tmp_path, capsys, cassette("abcd"), cassette("abdc"))
    assert code == 1 and out.startswith("tools_changed: tools reordered")
