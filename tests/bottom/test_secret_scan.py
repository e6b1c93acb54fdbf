"""The secret scan (`harness._shared._secrets.scan_secrets`): key-shaped strings found by position,
and
ordinary cassette content left alone.
"""

from __future__ import annotations

import pytest

from harness.capture import scan_secrets


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("sk-proj-" + "a1B2c3D4" * 4, "secret key"),
        ("Authorization: Bearer " + "abcDEF123456ghiJKL789", "bearer token"),
        ("AKIA" + "ABCDEFGHIJ234567", "AWS access key"),
        ("ghp_" + "a" * 36, "GitHub token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private key"),
        ('"api_key": "' + "f" * 40 + '"', "credential after a key-like name"),
    ],
)
def test_scan_finds_key_shaped_strings_by_position(text: str, kind: str) -> None:
    findings = scan_secrets(f'{{\n  "x": "{text}"\n}}'.encode())
    assert findings and kind in findings[0].kind
    assert findings[0].line == 2


def test_scan_leaves_ordinary_cassette_content_alone() -> None:
    text = '{"usage": {"cache_read_input_tokens": 1200}, "id": "toolu_01ABC", "sk-ant-test": 1}'
    assert scan_secrets(text.encode()) == []
    assert scan_secrets(b"Bearer [redacted]") == []
