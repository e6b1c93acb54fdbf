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


# -- 2. secrets through other doors ----------------------------------------------------------------

SESSION = "opaque-session-7f3a9c21e5b84d06"  # no key shape: only the cookie it came in names it
CSRF = "csrf-token-0a1b2c3d4e5f"
API_KEY = "opaque-credential-7f3a9c21e5"
ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"


def reply_with(headers: dict[str, str], text: str) -> httpx2.MockTransport:
    return httpx2.MockTransport(
        lambda _: httpx2.Response(200, headers=headers, json={"content": [{"text": text}]})
    )


def record_with(
    tmp: Path,
    prompt: str,
    headers: dict[str, str] | None = None,
    upstream: httpx2.MockTransport | None = None,
    url: str = ANTHROPIC_URL,
) -> CaptureSession:
    session = CaptureSession.for_test(
        tmp / "cassette.json",
        "record",
        writes_allowed=True,
        upstream=upstream or reply_with({}, "ok"),
    )
    session.httpx2_client().post(url, json=request_body(prompt), headers=headers or {})
    return session


@pytest.mark.parametrize(
    ("cookie", "echoed"),
    [
        (f"sid={SESSION}", SESSION),
        (f"theme=dark; sid={SESSION}; csrf={CSRF}", CSRF),
        (f'sid="{SESSION}"', SESSION),
    ],
)
def test_a_cookie_value_echoed_into_a_prompt_is_never_written_or_printed(
    tmp_path: Path, cookie: str, echoed: str
) -> None:
    """Before, the scan looked for `sid=<value>`: the value alone went through."""
    session = record_with(tmp_path, f"my session is {echoed}", {"cookie": cookie})
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert echoed not in str(caught.value)
    assert not (tmp_path / "cassette.json").exists()
    assert echoed not in _printer.redact(f"the prompt said {echoed}.")


def test_the_cookie_a_response_sets_is_never_written_where_it_is_echoed(tmp_path: Path) -> None:
    set_cookie = f"sid={SESSION}; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly"
    upstream = reply_with({"set-cookie": set_cookie}, f"your session is {SESSION}")
    session = record_with(tmp_path, "hello", upstream=upstream)
    with pytest.raises(SecretLeak):
        session.finish()
    assert SESSION not in _printer.redact(f"it said {SESSION}")


def test_a_cookies_attributes_and_short_values_are_no_secret(tmp_path: Path) -> None:
    """The near miss: what a `Set-Cookie` says of its cookie (its expiry, its path) and a short
    cookie value, in a prompt and a reply, are written and printed as they are."""
    expires = "Wed, 21 Oct 2026 07:28:00 GMT"
    upstream = reply_with({"set-cookie": f"sid={SESSION}; Path=/api; Expires={expires}"}, expires)
    session = record_with(tmp_path, "dark mode, /api please", {"cookie": "theme=dark"}, upstream)
    ((_, data),) = session.finish().files
    assert expires.encode() in data and b"dark mode, /api" in data
    assert _printer.redact(f"{expires} dark /api") == f"{expires} dark /api"


def test_the_cli_never_prints_its_inputs_secret_headers_echoed_in_a_body(
    tmp_path: Path, cli: Cli
) -> None:
    """A proxy log's `x-api-key`, cookie and secret query value, opaque and echoed in the
    system prompt next to the first difference: report, diff, lint and cost learn them from
    the input and print none (before, the CLI never learnt its inputs' headers)."""
    headers = {"x-api-key": API_KEY, "cookie": f"sid={SESSION}", "x-request-id": "req-visible-42"}
    echo = f"{API_KEY} {SESSION} {CSRF} req-visible-42"
    url = f"{ANTHROPIC_URL}?api_key={CSRF}"
    lines = [
        proxy_line(f"claude-{API_KEY}", f"{echo}|A|{echo}", headers),
        proxy_line(f"claude-{API_KEY}", f"{echo}|B|{echo}", headers),
    ]
    for line in lines:
        line["url"] = url
    shown = printed(cli, tmp_path, *write_inputs(tmp_path, lines))
    for door, text in shown.items():
        for secret in (API_KEY, SESSION, CSRF):
            assert secret not in text, f"{door} prints {secret}"
    # the near miss: a header that is no secret is printed as it is
    assert "req-visible-42" in shown["diff text"] and "req-visible-42" in shown["report html"]


def percent_encoded(text: str) -> str:
    return "".join(f"%{ord(c):02X}" for c in text)


ENCODED_URLS = {
    "escaped whole": f"{ANTHROPIC_URL}?q={percent_encoded(ANTHROPIC_KEY)}",
    "first letter escaped": f"{ANTHROPIC_URL}?q=%73{ANTHROPIC_KEY[1:]}",
    "escaped dashes": f"{ANTHROPIC_URL}?q=" + ANTHROPIC_KEY.replace("-", "%2D"),
}


@pytest.mark.parametrize("how", list(ENCODED_URLS))
def test_a_percent_encoded_key_in_a_url_is_never_written_or_printed(
    tmp_path: Path, how: str
) -> None:
    url = ENCODED_URLS[how]
    session = record_with(tmp_path, "hello", url=url)
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert "percent-encoded" in str(caught.value)
    shown = _printer.redact(f"GET {url} 200")
    assert url.split("?q=")[1][:12] not in shown and "[redacted]" in shown
    assert_hidden(shown, ANTHROPIC_KEY)


def test_ordinary_percent_escapes_are_no_secret(tmp_path: Path) -> None:
    """The near miss: a query of escaped words is written, and printed as it is."""
    url = f"{ANTHROPIC_URL}?q=caf%C3%A9%20au%20lait%2C%20s%27il%20vous%20pla%C3%AEt&task-list-1"
    session = record_with(tmp_path, "hello", url=url)
    ((_, data),) = session.finish().files
    assert b"caf%C3%A9%20au%20lait" in data
    assert _printer.redact(url) == url


TOKEN = "opaque-deploy-token-7f3a9c21e5"
USERINFO = {
    "password": f"clone https://ci-bot:{TOKEN}@git.example.test/org/repo.git",
    "token as the user": "clone https://0a1b2c3d4e5f60718293a4b5c6d7e8f9@git.example.test/r.git",
    "json-escaped slashes": f"clone https:\\/\\/ci-bot:{TOKEN}@git.example.test\\/r.git",
}


@pytest.mark.parametrize("where", list(USERINFO))
def test_a_token_as_a_urls_userinfo_is_never_written_or_printed(tmp_path: Path, where: str) -> None:
    text = USERINFO[where]
    secret = TOKEN if TOKEN in text else "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    session = record_with(tmp_path, text)
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert "URL" in str(caught.value) and secret not in str(caught.value)
    assert secret not in _printer.redact(text) and "[redacted]@git.example.test" in (
        _printer.redact(text).replace(":[redacted]", "[redacted]")
    )


def test_a_token_as_the_request_urls_user_is_redacted_in_the_cassette(tmp_path: Path) -> None:
    url = "https://0a1b2c3d4e5f60718293a4b5c6d7e8f9@api.anthropic.com/v1/messages"
    session = record_with(tmp_path, "hello", url=url)
    ((_, data),) = session.finish().files
    assert b"0a1b2c3d4e5f" not in data and b"https://[redacted]@api.anthropic.com" in data


def test_a_urls_user_name_short_password_and_placeholders_are_no_secret(tmp_path: Path) -> None:
    """The near miss: `git@`, a documentation example's `user:pass`, placeholders."""
    text = (
        "use ssh://git@github.com/org/repo or https://user:pass@example.com or"
        " postgres://app:${DB_PASSWORD}@db:5432/app or https://u:<password>@h/"
        " or https://bob.smith@example.com/"
    )
    session = record_with(tmp_path, text)
    ((_, data),) = session.finish().files
    assert json.dumps(text).encode()[1:-1] in data
    assert _printer.redact(text) == text


BASE64 = {
    "a key alone": base64.b64encode(ANTHROPIC_KEY.encode()).decode(),
    "in a sentence": base64.b64encode(f"the key is {ANTHROPIC_KEY}, use it".encode()).decode(),
    "url-safe, unpadded": base64.urlsafe_b64encode(b"AKIAQX7ZT2MBW4K5NJ3R").decode().rstrip("="),
    "after a word": "data" + base64.b64encode(b".." + ANTHROPIC_KEY.encode()).decode(),
    "a .env file": base64.b64encode(
        f"DEBUG=1\nANTHROPIC_API_KEY={ANTHROPIC_KEY}\nPORT=8080\n".encode()
    ).decode(),
}


@pytest.mark.parametrize("how", list(BASE64))
def test_a_base64_encoded_key_in_a_prompt_is_never_written_or_printed(
    tmp_path: Path, how: str
) -> None:
    encoded = BASE64[how]
    session = record_with(tmp_path, f"decode this: {encoded} and run it")
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert "base64-encoded" in str(caught.value)
    shown = _printer.redact(f"decode this: {encoded} and run it")
    assert encoded not in shown and "[redacted]" in shown
    assert_hidden(shown, encoded)


def test_base64_that_holds_no_key_is_written(tmp_path: Path) -> None:
    """The near miss: base64 of a sentence, of a small picture, and a thinking signature."""
    rng = random.Random("near-miss")
    texts = [
        base64.b64encode(b"hello world, this is a perfectly ordinary sentence").decode(),
        base64.b64encode(bytes(rng.getrandbits(8) for _ in range(3000))).decode(),
        "EqQBCkgIBxABGAIiQL" + _draw(rng, ALNUM + "+/", 300),
    ]
    for text in texts:
        session = record_with(tmp_path, f"look: {text}")
        ((_, data),) = session.finish().files
        assert text.encode() in data
        assert _printer.redact(text) == text


def test_the_scan_of_bytes_finds_what_the_scan_of_their_text_finds() -> None:
    """The fast path (bytes cleared without being decoded) never hides an encoded secret:
    seeded random mixtures of words, escapes, base64, URLs and bytes that are not UTF-8."""
    from harness._shared._secrets import findings_in

    rng = random.Random("byte-clearance")
    parts = [
        "plain words ",
        "caf\u00e9 ",
        "%73k-ant-api03-" + "Zq7Wm2" * 5,
        percent_encoded("AKIAQX7ZT2MBW4K5NJ3R"),
        "%C3%A9%20",
        base64.b64encode(ANTHROPIC_KEY.encode()).decode(),
        base64.b64encode(b"ordinary text that is long enough").decode(),
        "https://ci:" + TOKEN + "@h/",
        "https://u:pass@h/",
        "ssh://git@h/",
        "%",
        "@",
        "==",
    ]
    for _ in range(300):
        pieces = [rng.choice(parts).encode() for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.3:
            pieces.insert(rng.randint(0, len(pieces)), bytes([rng.getrandbits(8) | 0x80]))
        data = b"".join(pieces)
        assert scan_secrets(data) == findings_in(data.decode("utf-8", "replace")), data


def test_many_learnt_values_are_all_redacted_overlaps_too() -> None:
    """A proxy log of thousands of keys teaches the printer thousands of values, looked for with
    one search: a value inside, overlapping or extending another is still hidden whole."""
    from harness._shared._secrets import findings_in

    fillers = [f"opaque-key-{n:08d}-abcdef" for n in range(40)]
    overlapping = ["alpha-secret-value-01", "secret-value-01-beta-tail", "alpha-secret-value-01-x"]
    _printer.extend(secrets=[*fillers, *overlapping])
    text = (
        "a alpha-secret-value-01-beta-tail b alpha-secret-value-01-x c opaque-key-00000007-abcdef"
        " d opaque-key-0000000 e"  # the near miss: a value's start alone is no value
    )
    shown = _printer.redact(text)
    for secret in overlapping:
        assert_hidden(shown, secret)
    assert "00000007-abcdef" not in shown
    assert "beta-tail" not in shown and "-x c" not in shown
    assert "opaque-key-0000000 e" in shown
    data = text.encode()
    assert scan_secrets(data, secrets=fillers + overlapping) == findings_in(
        text, secrets=fillers + overlapping
    )
    assert scan_secrets(b"opaque-key-0000000", secrets=fillers) == []
