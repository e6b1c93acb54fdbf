"""Where a refused write's secrets are (issue 35): the refusal names each key's kind, line and
column (1-based, in characters), counts them, and quotes none of them. Through a recording: the
cassette a capture session would write holds the key, and its refusal says where."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from harness._shared._errors import SecretLeak as WriteRefused
from harness._shared._secrets import refuse_secrets
from harness.capture import CaptureSession, SecretLeak

KEY = "sk-ant-api03-" + "Ab9_" * 12
KIND = "an Anthropic API key (sk-ant-...)"


def refusal(data: str) -> str:
    with pytest.raises(WriteRefused) as caught:
        refuse_secrets([("c.yaml", data.encode())])
    message = str(caught.value)
    assert KEY[:16] not in message and "Ab9_Ab9_" not in message
    return message


def test_a_refusal_says_where_each_key_is_by_line_and_column() -> None:
    assert f"1 secret-looking string ({KIND} at line 3, column 7)" in refusal(
        f"one\ntwo\nthree {KEY}\n"
    )
    assert f"({KIND} at line 1, column 4)" in refusal(f"é, {KEY}")  # characters, not bytes
    assert (
        f"2 secret-looking strings ({KIND} at line 1, column 1; {KIND} at line 3, column 3)"
        in refusal(f"{KEY}\n\n  {KEY}")
    )


def test_a_recording_holding_a_key_is_refused_and_says_where(tmp_path: Path) -> None:
    upstream = httpx2.MockTransport(lambda r: httpx2.Response(200, json={"id": "m"}))
    session = CaptureSession.for_test(
        tmp_path / "c.yaml", "record", writes_allowed=True, upstream=upstream
    )
    body = {"model": "claude-x", "system": f"Use {KEY}.", "messages": []}
    session.httpx2_client().post("https://api.anthropic.com/v1/messages", content=json.dumps(body))
    with pytest.raises(
        SecretLeak, match=r"an Anthropic API key \(sk-ant-\.\.\.\) at line \d+, column \d+"
    ):
        session.finish()
    assert not (tmp_path / "c.yaml").exists()
