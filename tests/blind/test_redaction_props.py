"""Redaction as a property (issue 35, item 3): no secret shape survives into any printed or
written text, wherever it is glued. A key of every shape the harness knows, with any text glued
to either side of it (a word, an identifier, `_`, `-`, digits, punctuation, other scripts), is
redacted from a printed line (every printer goes through `_printer.redact`) and refused by the
scan every written file goes through; and text holding no key-shaped run is left exactly as it
was (a false alarm on a clean prompt is the near miss).

The glued keys depend on issue 32's key shapes (no word boundary in front of or behind a key):
the properties that glue a key to a word character fail before that change lands.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness._shared import _printer
from harness._shared._secrets import REDACTED, scan_secrets
from harness.capture import CaptureSession, SecretLeak
from harness.cli import main
from tests.reliability.test_secret_property import KEYS, assert_nowhere
from tests.support.properties import examples

WORDISH = string.ascii_letters + string.digits + "_-"
# Glue: a word character run (the blind spot of a key shape behind `\b`), or any text at all.
GLUE = st.one_of(
    st.text(st.sampled_from(WORDISH), min_size=1, max_size=6),
    st.text(max_size=12),
)
PROPERTY = settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(autouse=True)
def _fresh_printer() -> None:
    _printer.reset()


def keys() -> st.SearchStrategy[str]:
    return st.one_of(*KEYS.values())


@PROPERTY
@given(key=keys(), before=GLUE, after=GLUE)
def test_a_key_glued_anywhere_is_never_printed(key: str, before: str, after: str) -> None:
    shown = _printer.redact(before + key + after)
    assert_nowhere(key, shown, around=before + after)
    assert REDACTED in shown


@PROPERTY
@given(key=keys(), before=GLUE, after=GLUE)
def test_a_key_glued_anywhere_is_never_written(key: str, before: str, after: str) -> None:
    text = before + key + after
    assert scan_secrets(text.encode()), text
    assert scan_secrets(json.dumps({"system": text}).encode()), text


# Words shorter than any key's run (19 token characters), between separators: no key shape.
SHORT_WORDS = st.lists(
    st.text(st.sampled_from(string.ascii_letters + string.digits + "_-./+="), max_size=14),
    max_size=30,
)
SEPARATORS = st.sampled_from([" ", ", ", "\n", ": ", '"', "(", ") ", "\u00e9 ", "\u4e2d"])


@PROPERTY
@given(words=SHORT_WORDS, separator=SEPARATORS)
def test_text_with_no_key_shaped_run_is_left_as_it_was(words: list[str], separator: str) -> None:
    text = separator.join(words)
    assert _printer.redact(text) == text
    assert scan_secrets(text.encode()) == []


GLUED = [
    ("x", "ghp_" + "A1b2C3d4E5" * 4, "y"),  # a tool named x<key>y
    ("bash_", "AKIA" + "ABCDEFGHIJ234567", "_z"),
    ("_", "sk-ant-api03-" + "Zq9_" * 12, "_"),  # Markdown italics
    ("1", "AIza" + "Sy" + "b3X-" * 8 + "k", "."),
]


@pytest.mark.parametrize(("before", "key", "after"), GLUED, ids=lambda v: str(v)[:6])
def test_a_glued_key_in_a_prompt_is_neither_printed_by_diff_nor_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], before: str, key: str, after: str
) -> None:
    url = "https://api.anthropic.com/v1/messages"
    body = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"url": url, "body": {**body, "system": "Use the tool."}}))
    glued = f"Use {before}{key}{after} as the tool."
    second.write_text(json.dumps({"url": url, "body": {**body, "system": glued}}))
    for form in ("text", "json", "markdown"):
        main(["diff", str(first), str(second), "--format", form])
        printed = capsys.readouterr()
        assert_nowhere(key, printed.out + printed.err)
    # and a recording of the request is refused
    upstream = httpx2.MockTransport(lambda r: httpx2.Response(200, json={"id": "m"}))
    session = CaptureSession.for_test(
        tmp_path / "c.yaml", "record", writes_allowed=True, upstream=upstream
    )
    session.httpx2_client().post(url, content=json.dumps({**body, "system": glued}))
    with pytest.raises(SecretLeak):
        session.finish()
