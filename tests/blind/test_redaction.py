"""Blind spots of redaction (issue 35), in a cassette as the plugin records one: OpenAI's
organization and project headers (on the deny-list only: no secret word in their names), the
rate-limit headers kept (they hold "token" but are counters), query names holding a secret word,
and the `[redacted]` mark in text `harness diff` prints."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from harness.capture import CaptureSession
from harness.cli import main

CHAT = "https://api.openai.com/v1/chat/completions"
ORG, PROJECT = "org-Zq81mPx0Lk2Jw9Hd", "proj_7TfQ2wXr9LmN4bVc"


def test_a_cassette_redacts_org_project_and_secret_queries_and_keeps_rate_limits(
    tmp_path: Path,
) -> None:
    headers = {"x-ratelimit-remaining-tokens": "149984", "anthropic-ratelimit-tokens-limit": "8000"}
    answer = {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 10}}
    upstream = httpx2.MockTransport(lambda r: httpx2.Response(200, json=answer, headers=headers))
    path = tmp_path / "cassette.json"
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream)
    client = session.httpx2_client()
    client.post(
        f"{CHAT}?my_signature=sig0a1b2c3d4e5f&page=7",
        headers={"OpenAI-Organization": ORG, "OpenAI-Project": PROJECT},
        content=json.dumps({"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}),
    )
    text = session.finish().files[0][1].decode()
    assert ORG not in text and PROJECT not in text
    assert "sig0a1b2c3d4e5f" not in text and "my_signature=[redacted]" in text
    assert "page=7" in text  # near miss: a query name with no secret word is kept
    assert "149984" in text and "8000" in text  # the rate-limit counters are kept


def test_printed_text_marks_a_key_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-ant-api03-" + "Q" * 40 + "AA"
    a = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "system": "x" * 5000 + " old",
        "messages": [{"role": "user", "content": "hi"}],
    }
    b = {**a, "system": "x" * 5000 + f" key {key}"}
    for name, body in (("a.json", a), ("b.json", b)):
        (tmp_path / name).write_text(
            json.dumps({"url": "https://api.anthropic.com/v1/messages", "body": body})
        )
    main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    out = capsys.readouterr().out
    assert key not in out and "[redacted]" in out
