"""Issue 32's secret doors: a key glued to a word, a secret through another door.

1. A key right after a word character (`_ghp_..._` in Markdown italics, a tool named
   `bash_AKIA...`, `xsk-proj-...`, `1AIza...`) was written to the cassette and printed: the key
   shapes started with `\\b`. Every shape, glued to letters, digits, `_` and `-` on both sides,
   now fails a cassette write and is redacted by every printer (report, diff, lint, cost), with
   the near misses (words holding `sk-`, identifiers, UUIDs, hashes, a picture's base64) left
   alone.
2. A cookie's value echoed into a prompt (the scan looked for `sid=<value>`), an input file's
   secret header echoed in what `harness report`, `diff` and `lint` print (the CLI never learnt
   its input's headers), a key percent-encoded in a URL, an opaque token as a URL's userinfo and
   a base64-encoded key in a prompt: each is now refused by a cassette write and redacted in
   what is printed.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness._shared import _printer
from harness._shared._secret_shapes import SECRET_PATTERNS
from harness._shared._secrets import scan_secrets
from harness.capture import CaptureSession, SecretLeak

from .conftest import Cli

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


@pytest.fixture(autouse=True)
def _forget_learnt_words() -> Iterator[None]:
    """The CLI teaches the printer its inputs' secret values: each test starts afresh."""
    _printer.reset()
    yield
    _printer.reset()


def _draw(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


Maker = Callable[[random.Random], str]


def _shape(prefix: str, alphabet: str, size: int) -> Maker:
    return lambda rng: prefix + _draw(rng, alphabet, size)


def _private_key(rng: random.Random) -> str:
    lines = [_draw(rng, ALNUM + "+/", 64) for _ in range(3)]
    return (
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"
    )


# Every key shape the harness knows (a test below holds that every kind is drawn), as the
# providers issue them; the part after `|` names the variant.
SHAPES: dict[str, Maker] = {
    "anthropic": _shape("sk-ant-api03-", URLSAFE, 80),
    "openai-project": _shape("sk-proj-", URLSAFE, 120),
    "openai-legacy": _shape("sk-", ALNUM, 48),
    "deepseek": _shape("sk-", HEX, 32),
    "openrouter": _shape("sk-or-v1-", HEX, 64),
    "bearer": lambda rng: "Bearer " + _draw(rng, ALNUM + "._~+/", 40) + "x",
    "aws": _shape("AKIA", UPPER, 16),
    "aws-session": _shape("ASIA", UPPER, 16),
    "github": _shape("ghp_", ALNUM, 36),
    "github-pat": _shape("github_pat_", ALNUM + "_", 82),
    "google": _shape("AIza", URLSAFE, 35),
    "google-oauth": _shape("ya29.", URLSAFE, 60),
    "slack": _shape("xoxb-", ALNUM + "-", 40),
    "slack-webhook": lambda rng: (
        f"https://hooks.slack.com/services/T{_draw(rng, UPPER, 9)}/B{_draw(rng, UPPER, 9)}/"
        + _draw(rng, ALNUM, 24)
    ),
    "private-key": _private_key,
    "jwt": lambda rng: (
        f"eyJ{_draw(rng, URLSAFE, 30)}.eyJ{_draw(rng, URLSAFE, 50)}.{_draw(rng, URLSAFE, 43)}"
    ),
    "groq": _shape("gsk_", ALNUM, 52),
    "xai": _shape("xai-", ALNUM, 80),
    "huggingface": _shape("hf_", ALNUM, 34),
    "stripe": _shape("sk_live_", ALNUM, 99),
    "stripe-test": _shape("sk_test_", ALNUM, 24),
    "stripe-restricted": _shape("rk_live_", ALNUM, 99),
    "perplexity": _shape("pplx-", ALNUM, 48),
    "replicate": _shape("r8_", ALNUM, 37),
    "fireworks": _shape("fw_", ALNUM, 30),
    "gitlab": _shape("glpat-", URLSAFE, 20),
    "npm": _shape("npm_", ALNUM, 36),
    "pypi": lambda rng: "pypi-AgE" + _draw(rng, URLSAFE, 70) + "x",
    "digitalocean": _shape("dop_v1_", HEX, 64),
    "databricks": _shape("dapi", HEX, 32),
    "sendgrid": lambda rng: f"SG.{_draw(rng, URLSAFE, 22)}.{_draw(rng, URLSAFE, 43)}",
    "shopify": _shape("shpat_", HEX, 32),
    "twilio": _shape("SK", HEX, 32),
    "mailgun": _shape("key-", string.ascii_lowercase + string.digits, 32),
    "linear": _shape("lin_api_", ALNUM, 40),
    "notion": _shape("ntn_", ALNUM, 46),
    "notion-legacy": _shape("secret_", ALNUM, 43),
    "postman": lambda rng: f"PMAK-{_draw(rng, HEX, 24)}-{_draw(rng, HEX, 34)}",
    "atlassian": _shape("ATATT", ALNUM, 60),
    "telegram": lambda rng: f"{_draw(rng, string.digits, 10)}:AA{_draw(rng, ALNUM, 33)}",
    "credential-after-name": lambda rng: "api_key=" + _draw(rng, ALNUM, 40) + "x",
}

# What is glued on either side: letters, digits, `_` and `-` (one and several).
LEFT = ("x", "Q", "7", "_", "-", "a1_", "tool-")
RIGHT = ("y", "Z", "3", "_", "-", "_b2", "-end")


def body_of(key: str) -> str:
    """What must never survive of a key: all of it but a public prefix or name."""
    if key.startswith("-----BEGIN"):
        return "\n".join(key.splitlines()[1:-1])
    if key.startswith("api_key="):
        return key.removeprefix("api_key=")
    if key.startswith("Bearer "):
        return key.removeprefix("Bearer ")
    return key


def pieces(secret: str) -> list[str]:
    """Every 12 characters of `secret`, 3 apart: none may be shown."""
    return [secret[i : i + 12] for i in range(0, len(secret) - 11, 3)]


def assert_hidden(text: str, *secrets: str) -> None:
    for secret in secrets:
        for piece in pieces(secret):
            assert piece not in text, f"{piece!r} of a secret survives"


def keys(name: str, count: int = 2) -> list[str]:
    """`count` keys of shape `name`, drawn with a fixed seed (the test is the same each run)."""
    rng = random.Random(f"issue-32-{name}")
    return [SHAPES[name](rng) for _ in range(count)]


def glued(key: str) -> list[str]:
    """The key glued to every left and right glue."""
    return [left + key + right for left in ("", *LEFT) for right in ("", *RIGHT)]


def glued_once(key: str) -> list[str]:
    """The key glued to each glue on its left, its right, and both (fewer: each is a write)."""
    return [
        key,
        *(left + key for left in LEFT),
        *(key + right for right in RIGHT),
        *(left + key + right for left, right in zip(LEFT, RIGHT, strict=True)),
    ]


def test_every_kind_of_key_the_scan_knows_is_drawn() -> None:
    drawn = {f.kind for name in SHAPES for key in keys(name) for f in scan_secrets(key.encode())}
    assert {pattern.kind for pattern in SECRET_PATTERNS} <= drawn


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_key_glued_to_a_word_is_redacted_wherever_it_starts(name: str) -> None:
    """Exhaustive over the glues: `_ghp_..._`, `bash_AKIA...`, `xsk-proj-...`, `1AIza...`."""
    for key in keys(name):
        for text in glued(key):
            for placed in (text, f"see {text}.", f'"{text}"', f"*{text}*"):
                assert_hidden(_printer.redact(placed), body_of(key))


def record(
    tmp: Path, body: dict[str, Any], headers: dict[str, str] | None = None
) -> CaptureSession:
    session = CaptureSession.for_test(
        tmp / "cassette.json",
        "record",
        writes_allowed=True,
        upstream=httpx2.MockTransport(lambda _: httpx2.Response(200, json={"ok": True})),
    )
    session.httpx2_client().post(ANTHROPIC_URL, json=body, headers=headers or {})
    return session


def request_body(text: str, tool: str = "bash") -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8,
        "tools": [{"name": tool, "description": "Run it.", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": text}],
    }


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_key_glued_to_a_word_is_never_written(tmp_path: Path, name: str) -> None:
    """A glued key in a user message (and in a tool's name): the write is refused."""
    (key,) = keys(name, 1)
    rng = random.Random(name)
    for text in glued_once(key):
        tool = rng.choice(("bash", text))
        session = record(tmp_path, request_body(f"remember _{text}_ please", tool))
        with pytest.raises(SecretLeak) as caught:
            session.finish()
        assert_hidden(str(caught.value), body_of(key))
        assert not (tmp_path / "cassette.json").exists()


# -- every printer ------------------------------------------------------------------------------


def proxy_line(model: str, system: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {
        "model": model,
        "max_tokens": 8,
        "system": [
            {
                "type": "text",
                "text": system + " rule" * 1200,
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }
    return {"url": ANTHROPIC_URL, "body": body, "headers": headers or {}}


def printed(cli: Cli, tmp: Path, log: Path, a: Path, b: Path) -> dict[str, str]:
    """What every printer shows of these inputs: lint, cost, report and diff, in each format."""
    shown: dict[str, str] = {}
    for fmt in ("text", "json"):
        shown[f"lint {fmt}"] = "".join(cli("lint", str(log), "--format", fmt)[1:])
        shown[f"cost {fmt}"] = "".join(cli("cost", str(log), "--format", fmt)[1:])
    html, markdown = tmp / "report.html", tmp / "report.md"
    shown["report"] = "".join(
        cli("report", str(log), "--html", str(html), "--markdown", str(markdown))[1:]
    )
    shown["report html"] = html.read_text(encoding="utf-8")
    shown["report markdown"] = markdown.read_text(encoding="utf-8")
    for fmt in ("text", "json", "markdown"):
        shown[f"diff {fmt}"] = "".join(cli("diff", str(a), str(b), "--format", fmt)[1:])
    return shown


def write_inputs(tmp: Path, lines: list[dict[str, Any]]) -> tuple[Path, Path, Path]:
    log = tmp / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    a, b = tmp / "a.json", tmp / "b.json"
    a.write_text(json.dumps(lines[0]), encoding="utf-8")
    b.write_text(json.dumps(lines[1]), encoding="utf-8")
    return log, a, b


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHAPES))
def test_a_key_glued_to_a_word_is_never_printed(tmp_path: Path, cli: Cli, name: str) -> None:
    """Every printer (lint, cost, report, diff; text, JSON, Markdown, HTML) shows the model
    name and the text around the first difference: both hold a glued key."""
    key, other = keys(name)
    if "\n" in key:  # a private key is no model name: it stands in the system text only
        model_a = model_b = "claude-sonnet-4-5"
    else:
        model_a, model_b = f"claude-x_{key}_", f"claude-1{other}-"
    rng = random.Random(name)
    left, right = rng.choice(LEFT), rng.choice(RIGHT)
    lines = [
        proxy_line(model_a, f"{left}{key}{right}|A|{left}{other}{right}"),
        proxy_line(model_b, f"{left}{key}{right}|B|{left}{other}{right}"),
    ]
    shown = printed(cli, tmp_path, *write_inputs(tmp_path, lines))
    for door, text in shown.items():
        assert_hidden(text, body_of(key), body_of(other))
        if door.startswith(("diff", "report html")):  # the excerpts: each shows a key, redacted
            assert "[redacted]" in text, door


# -- the near misses: no false alarm --------------------------------------------------------------

NEAR_MISSES = {
    "tool name holding sk-": "task-runner-abcdefghijklmnopqrstuv",
    "tool name holding ask-": "ask-human-for-confirmation-before-deploying-v2",
    "words holding sk-": "risk-assessment-2024-q3 and disk-usage-report-for-volume-0042",
    "stripe-like test names": "task_test_runnerForPaymentsAndRefunds mask_live_previewModeOfIt",
    "mailgun-like word": "monkey-patchingTheHttpClientForUnitTests",
    "task and a uuid": "task-123e4567-e89b-12d3-a456-426614174000",
    "a sha256 digest": "sha256:" + "9d189c90dbf8da4cae167d4beb0c5c1c" * 2,
    "a sha1 and an md5": "da39a3ee5e6b4b0d3255bfef95601890afd80709 d41d8cd98f00b204e98009",
    "a long identifier": "thisIsAVeryLongCamelCaseIdentifierWithoutAnyKeyInsideItAtAll_v2",
    "provider ids": "toolu_01A09q90qw90lq917835lq9 msg_01XFDUDYJgAACzvnptvVoYEL",
    "a model id": "claude-sonnet-4-20250514 and gpt-4o-mini-2024-07-18",
}


def picture(size: int = 100_000) -> str:
    """Base64 of random bytes (a picture's), holding `AIza` and 35 letters deep inside: the
    shape of a Google key, as base64 holds it about once per 50 MB."""
    rng = random.Random("picture")
    data = base64.b64encode(bytes(rng.getrandbits(8) for _ in range(size))).decode()
    at = len(data) // 2
    return data[:at] + "AIza" + _draw(rng, ALNUM, 35) + data[at:]


@pytest.mark.parametrize("name", [*NEAR_MISSES, "a picture's base64"])
def test_words_identifiers_digests_and_pictures_are_left_alone(tmp_path: Path, name: str) -> None:
    """The near miss: nothing that is no key is redacted, and the write goes through with the
    request's exact bytes (the gate judges what was sent)."""
    text = picture() if name not in NEAR_MISSES else NEAR_MISSES[name]
    assert _printer.redact(text) == text
    tool = text if len(text) < 64 and " " not in text else "bash"
    session = record(tmp_path, request_body(f"use {text}", tool))
    ((_, data),) = session.finish().files
    assert text.encode() in data
