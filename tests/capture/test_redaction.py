"""Redaction on capture: secret headers and query parameters never reach a cassette's bytes, a
key-shaped string in a body fails the recording, and a redacted header's value is caught anywhere.

Through the real `anthropic` SDK over a capture transport, against the stand-in `Provider`. The
scan itself (`scan_secrets`) is tested in `tests/bottom/test_secret_scan.py`.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from harness.capture import REDACTED, CaptureSession, Redaction, SecretLeak
from tests.support.sdk import claude
from tests.support.stand_ins import Provider

# -- redaction -----------------------------------------------------------------------------------

REAL_LOOKING_KEY = "sk-ant-api03-" + "Ab3xK9" * 12


def test_secret_headers_and_query_parameters_never_reach_the_bytes(tmp_path: Path) -> None:
    provider = Provider(extra_headers={"set-cookie": "session=abc123secretcookie"})
    session = CaptureSession.for_test(
        tmp_path / "c.json", "record", writes_allowed=True, upstream=provider.transport()
    )
    client = anthropic.Anthropic(
        api_key="my-own-key-0123456789",
        http_client=session.httpx2_client(
            headers={"cookie": "sid=cookie-value-0123", "x-portkey-api-key": "portkey-0123456789"}
        ),
    )
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    session.httpx2_client().post(
        "https://api.anthropic.com/v1/messages?key=query-secret-0123&beta=true",
        json={"model": "m", "messages": [], "system": "s"},
    )
    data = session.finish().files[0][1]

    for secret in (
        "my-own-key-0123456789",
        "cookie-value-0123",
        "portkey-0123456789",
        "abc123secretcookie",
        "query-secret-0123",
    ):
        assert secret.encode() not in data
    assert data.count(REDACTED.encode()) >= 5
    assert b"key=[redacted]&beta=true" in data


def test_a_key_shaped_string_in_a_body_fails_the_recording_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    session = CaptureSession.for_test(
        tmp_path / "leak.json", "record", writes_allowed=True, upstream=Provider().transport()
    )
    claude(session).messages.create(
        model="claude-test",
        max_tokens=8,
        messages=[{"role": "user", "content": f"my key is {REAL_LOOKING_KEY}, keep it safe"}],
    )
    with pytest.raises(SecretLeak) as caught:
        session.finish()

    message = str(caught.value)
    assert "leak.json" in message and "Anthropic API key" in message
    assert REAL_LOOKING_KEY not in message and REAL_LOOKING_KEY[:20] not in message
    assert not (tmp_path / "leak.json").exists()


def test_the_value_of_a_redacted_header_is_caught_anywhere_else(tmp_path: Path) -> None:
    session = CaptureSession.for_test(
        tmp_path / "echo.json", "record", writes_allowed=True, upstream=Provider().transport()
    )
    key = "plain-looking-key-42"
    client = anthropic.Anthropic(api_key=key, http_client=session.httpx2_client())
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"echo {key}"}]
    )
    with pytest.raises(SecretLeak, match="the value of a redacted header"):
        session.finish()

    allowed = CaptureSession.for_test(
        tmp_path / "echo.json",
        "record",
        writes_allowed=True,
        upstream=Provider().transport(),
        redaction=Redaction(allow=frozenset({key})),
    )
    client = anthropic.Anthropic(api_key=key, http_client=allowed.httpx2_client())
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"echo {key}"}]
    )
    assert allowed.finish().files
