"""A secret of any known shape, anywhere in a request or response, in any encoding, never appears
in a file written or a line printed (defects 2 and 3 of the reliability issue).

Before, 9 of 9 reached a cassette: a gzip-compressed or non-UTF-8 request body (stored as base64),
a key streamed back in small server-sent-event deltas, a JSON-escaped key (`\\u0073k-ant-...`),
query names such as `auth`, `refresh_token` or `X-Amz-Signature`, and key shapes with no pattern
(Groq `gsk_`, xAI `xai-`, Hugging Face `hf_`, Stripe `sk_live_`). The scan now reads what each body
says once decoded, and every report, excerpt and message is redacted. Issue 24 added streams
joined in arrival order across channels: a key in one choice of an `n=2` stream, in one of two
interleaved tool calls or content blocks, in multi-line `data:` fields, in Gemini's JSON-array
stream and in an NDJSON stream, each joined per channel now.
"""

from __future__ import annotations

import base64
import gzip
import json
import string
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness._shared._errors import one_line
from harness._shared._secrets import scan_secrets
from harness.capture import CaptureSession, SecretLeak, cassette_path_for
from harness.drift import compare_values
from tests.support.properties import examples

URL = "https://api.example.test/v1/messages"
ALNUM = string.ascii_letters + string.digits


def _body(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=low, max_size=high)


def _shape(prefix: str, alphabet: str = ALNUM, low: int = 32, high: int = 60) -> Any:
    return _body(alphabet, low, high).map(lambda tail: prefix + tail)


UPPER_DIGITS = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"

# A credential after its name: only the value is secret (redaction keeps the name).
CREDENTIAL_NAMES = ("api_key=", '"password": "', "client_secret: ", "REFRESH_TOKEN=")

# One strategy per key shape the harness knows (harness._shared._secret_shapes).
KEYS: dict[str, Any] = {
    "anthropic": _shape("sk-ant-api03-", URLSAFE, 40, 95),
    "openai": _shape("sk-proj-", URLSAFE, 40, 80),
    "deepseek": _shape("sk-", HEX, 32, 32),
    "aws": _shape("AKIA", UPPER_DIGITS, 16, 16),
    "github": _shape("ghp_", ALNUM, 36, 36),
    "github-pat": _shape("github_pat_", ALNUM + "_", 30, 82),
    "google": _shape("AIza", URLSAFE, 35, 35),
    "slack": _shape("xoxb-", ALNUM + "-", 24, 50),
    "groq": _shape("gsk_", ALNUM, 52, 52),
    "xai": _shape("xai-", ALNUM, 60, 80),
    "huggingface": _shape("hf_", ALNUM, 34, 34),
    "stripe": _shape("sk_live_", ALNUM, 24, 99),
    "stripe-restricted": _shape("rk_live_", ALNUM, 24, 99),
    "gitlab": _shape("glpat-", URLSAFE, 20, 20),
    "npm": _shape("npm_", ALNUM, 36, 36),
    "perplexity": _shape("pplx-", ALNUM, 48, 48),
    "replicate": _shape("r8_", ALNUM, 37, 37),
    "jwt": st.tuples(_body(URLSAFE, 20, 40), _body(URLSAFE, 20, 60), _body(URLSAFE, 20, 43)).map(
        lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"
    ),
    "google-oauth": _shape("ya29.", URLSAFE, 30, 60),
    "bearer": _shape("Bearer ", URLSAFE + "._~+/", 30, 60).map(lambda t: t.rstrip("._~+/-") + "x"),
    "slack-webhook": st.tuples(_body(UPPER_DIGITS, 8, 10), _body(UPPER_DIGITS, 8, 10)).flatmap(
        lambda p: _shape(f"https://hooks.slack.com/services/T{p[0]}/B{p[1]}/", ALNUM, 24, 24)
    ),
    "private-key": st.lists(_body(ALNUM + "+/", 64, 64), min_size=2, max_size=4).map(
        lambda lines: (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + "\n".join(lines)
            + "\n-----END RSA PRIVATE KEY-----"
        )
    ),
    "fireworks": _shape("fw_", ALNUM, 24, 40),
    "pypi": _shape("pypi-AgE", URLSAFE, 60, 80).map(lambda t: t + "x"),
    "digitalocean": _shape("dop_v1_", HEX, 64, 64),
    "databricks": _shape("dapi", HEX, 32, 32),
    "sendgrid": st.tuples(_body(ALNUM, 22, 22), _body(ALNUM, 43, 43)).map(
        lambda p: f"SG.{p[0]}.{p[1]}"
    ),
    "shopify": _shape("shpat_", HEX, 32, 32),
    "twilio": _shape("SK", HEX, 32, 32),
    "mailgun": _shape("key-", ALNUM, 32, 32),
    "linear": _shape("lin_api_", ALNUM, 40, 40),
    "notion": _shape("ntn_", ALNUM, 46, 46),
    "postman": st.tuples(_body(HEX, 24, 24), _body(HEX, 34, 34)).map(
        lambda p: f"PMAK-{p[0]}-{p[1]}"
    ),
    "atlassian": _shape("ATATT", ALNUM, 40, 60),
    "telegram": st.tuples(_body(string.digits, 8, 10), _body(ALNUM, 33, 33)).map(
        lambda p: f"{p[0]}:AA{p[1]}"
    ),
    "credential-after-name": st.tuples(
        st.sampled_from(CREDENTIAL_NAMES),
        _body(ALNUM + "+/_-", 32, 48),
    ).map(lambda p: p[0] + p[1] + "x"),
}


def key_shaped(draw: Any) -> str:
    return str(draw(st.one_of(*KEYS.values())))


def escaped(text: str) -> str:
    """The JSON-escaped form of a key's first character (`\\u0073k-ant-...`)."""
    return f"\\u{ord(text[0]):04x}" + text[1:]


# -- where a secret goes, and how it is encoded ----------------------------------------------------

Request = dict[str, Any]


def in_system(secret: str) -> Request:
    return {"json": {"model": "m", "system": f"Use {secret} when asked.", "messages": []}}


def in_user_message(secret: str) -> Request:
    return {"json": {"model": "m", "messages": [{"role": "user", "content": f"key: {secret}"}]}}


def in_tool_description(secret: str) -> Request:
    tool = {"name": "fetch", "description": f"Fetch with {secret}.", "input_schema": {}}
    return {"json": {"model": "m", "tools": [tool], "messages": []}}


def in_custom_header(secret: str) -> Request:
    return {"json": {"model": "m", "messages": []}, "headers": {"x-debug-note": secret}}


def gzipped(secret: str) -> Request:
    data = json.dumps(in_user_message(secret)["json"]).encode()
    return {"content": gzip.compress(data), "headers": {"content-encoding": "gzip"}}


def deflated_without_header(secret: str) -> Request:
    return {"content": zlib.compress(json.dumps(in_system(secret)["json"]).encode())}


def latin1(secret: str) -> Request:
    text = json.dumps({"model": "m", "system": f"café {secret}"}, ensure_ascii=False)
    return {"content": text.encode("latin-1"), "headers": {"content-type": "application/json"}}


def utf16(secret: str) -> Request:
    return {"content": json.dumps(in_system(secret)["json"]).encode("utf-16")}


def json_escaped(secret: str) -> Request:
    text = '{"model": "m", "messages": [{"role": "user", "content": "' + escaped(secret) + '"}]}'
    return {"content": text.encode(), "headers": {"content-type": "application/json"}}


def json_in_json(secret: str) -> Request:
    """A tool's arguments: JSON text inside a JSON string, the key escaped in the inner JSON."""
    inner = '{"api": "' + escaped(secret) + '"}'
    return {"json": {"model": "m", "messages": [{"role": "user", "content": inner}]}}


REQUESTS: dict[str, Callable[[str], Request]] = {
    "system": in_system,
    "user-message": in_user_message,
    "tool-description": in_tool_description,
    "custom-header": in_custom_header,
    "gzip": gzipped,
    "deflate-unlabelled": deflated_without_header,
    "latin-1": latin1,
    "utf-16": utf16,
    "json-escaped": json_escaped,
    "json-in-json": json_in_json,
}


def plain_reply(secret: str) -> httpx2.Response:
    return httpx2.Response(200, json={"content": [{"type": "text", "text": f"it is {secret}"}]})


def streamed(secret: str) -> httpx2.Response:
    pieces = [secret[i : i + 3] for i in range(0, len(secret), 3)]
    events = [
        "event: content_block_delta\ndata: "
        + json.dumps({"type": "content_block_delta", "delta": {"type": "text_delta", "text": p}})
        for p in ["Your key is ", *pieces, "."]
    ]
    body = "\n\n".join(events) + "\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def escaped_reply(secret: str) -> httpx2.Response:
    text = '{"content": [{"type": "text", "text": "' + escaped(secret) + '"}]}'
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=text)


def frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream frame, as Bedrock's converse-stream sends it."""
    name, value = b":event-type", event_type.encode()
    headers = bytes([len(name)]) + name + b"\x07" + len(value).to_bytes(2, "big") + value
    body = json.dumps(payload).encode()
    total = 16 + len(headers) + len(body)
    prelude = total.to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    message = prelude + headers + body
    return message + zlib.crc32(message).to_bytes(4, "big")


def bedrock_stream(secret: str) -> httpx2.Response:
    pieces = [secret[i : i + 3] for i in range(0, len(secret), 3)]
    frames = [frame("messageStart", {"role": "assistant"})]
    frames += [
        frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}, "p": "ab"})
        for p in ["Your key is ", *pieces, "."]
    ]
    frames.append(frame("messageStop", {"stopReason": "end_turn"}))
    return httpx2.Response(
        200,
        headers={"content-type": "application/vnd.amazon.eventstream"},
        content=b"".join(frames),
    )


def _pieces(secret: str) -> list[str]:
    return [secret[i : i + 3] for i in range(0, len(secret), 3)]


def _sse(payloads: list[Any]) -> httpx2.Response:
    body = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + "data: [DONE]\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def interleaved_choices(secret: str) -> httpx2.Response:
    """OpenAI Chat with n=2: the key in choice 0, choice 1 sending between each of its deltas."""
    chunks = []
    for piece in _pieces(secret):
        for index, text in ((0, piece), (1, "la")):
            chunks.append({"choices": [{"index": index, "delta": {"content": text}}]})
    return _sse(chunks)


def interleaved_tool_arguments(secret: str) -> httpx2.Response:
    """Two parallel tool calls whose `arguments` stream interleaved, the key in the second."""
    chunks = []
    for piece in ['{"key": "', *_pieces(secret), '"}']:
        for index, text in ((0, '{"q"'), (1, piece)):
            call = {"index": index, "function": {"arguments": text}}
            chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    return _sse(chunks)


def interleaved_blocks(secret: str) -> httpx2.Response:
    """Anthropic content blocks 0 and 1 streamed in turns, the key in block 1."""
    events = []
    for piece in _pieces(secret):
        for index, text in ((0, "ok "), (1, piece)):
            delta = {"type": "text_delta", "text": text}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
    return _sse(events)


def multi_line_data(secret: str) -> httpx2.Response:
    """Each event's JSON spread over several `data:` lines, as the SSE format allows."""
    body = ""
    for piece in _pieces(secret):
        event = {"type": "content_block_delta", "index": 0, "delta": {"text": piece}}
        text = json.dumps(event, indent=1)
        body += "".join(f"data: {line}\n" for line in text.splitlines()) + "\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def gemini_array(secret: str) -> httpx2.Response:
    """Gemini's streamGenerateContent without alt=sse: one JSON array of chunks."""
    chunks = [
        {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": piece}]}}]}
        for piece in _pieces(secret)
    ]
    return httpx2.Response(200, headers={"content-type": "application/json"}, json=chunks)


def ndjson(secret: str) -> httpx2.Response:
    """A newline-delimited JSON stream (Ollama's /api/chat)."""
    lines = [
        json.dumps({"message": {"role": "assistant", "content": piece}, "done": False})
        for piece in _pieces(secret)
    ]
    body = "\n".join([*lines, json.dumps({"done": True})]) + "\n"
    return httpx2.Response(200, headers={"content-type": "application/x-ndjson"}, content=body)


def binary_reply(secret: str) -> httpx2.Response:
    return httpx2.Response(200, content=b"\xff\xfe\x00" + secret.encode() + b"\x80")


RESPONSES: dict[str, Callable[[str], httpx2.Response]] = {
    "plain": plain_reply,
    "sse-deltas": streamed,
    "bedrock-event-stream": bedrock_stream,
    "json-escaped": escaped_reply,
    "binary": binary_reply,
    "n2-interleaved-choices": interleaved_choices,
    "interleaved-tool-arguments": interleaved_tool_arguments,
    "interleaved-content-blocks": interleaved_blocks,
    "multi-line-sse-data": multi_line_data,
    "gemini-json-array": gemini_array,
    "ndjson": ndjson,
}


def record(tmp: Path, request: Request, reply: Callable[[], httpx2.Response]) -> CaptureSession:
    session = CaptureSession.for_test(
        tmp / "cassette.json",
        "record",
        writes_allowed=True,
        upstream=httpx2.MockTransport(lambda _: reply()),
    )
    session.httpx2_client().post(URL, **request)
    return session


def assert_nowhere(secret: str, *texts: str, around: str = "") -> None:
    """Neither the secret nor any 12 characters of it (but those the text `around` it holds)."""
    secret = next((secret[len(n) :] for n in CREDENTIAL_NAMES if secret.startswith(n)), secret)
    if secret.startswith("-----BEGIN"):  # a private key: its lines, not the public markers
        secret = "\n".join(secret.splitlines()[1:-1])
    for text in texts:
        for start in range(0, len(secret) - 11, 3):
            piece = secret[start : start + 12]
            assert piece in around or piece not in text, piece


SETTINGS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@SETTINGS
@given(data=st.data(), where=st.sampled_from(list(REQUESTS)))
def test_a_key_anywhere_in_a_request_is_never_written(
    tmp_path: Path, data: st.DataObject, where: str
) -> None:
    secret = key_shaped(data.draw)
    session = record(tmp_path, REQUESTS[where](secret), lambda: httpx2.Response(200, json={}))
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    message = str(caught.value)
    assert "nothing was written" in message and one_line(message) == message
    assert_nowhere(secret, message)
    assert not (tmp_path / "cassette.json").exists()


@pytest.mark.slow
@SETTINGS
@given(data=st.data(), how=st.sampled_from(list(RESPONSES)))
def test_a_key_anywhere_in_a_response_is_never_written(
    tmp_path: Path, data: st.DataObject, how: str
) -> None:
    secret = key_shaped(data.draw)
    session = record(tmp_path, {"json": {"model": "m"}}, lambda: RESPONSES[how](secret))
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert_nowhere(secret, str(caught.value))


STREAMS = (
    "n2-interleaved-choices",
    "interleaved-tool-arguments",
    "interleaved-content-blocks",
    "multi-line-sse-data",
    "gemini-json-array",
    "ndjson",
)
FIXED_KEY = "sk-ant-api03-" + "Zq7Wm2" * 10 + "-AbCd"


@pytest.mark.parametrize("how", STREAMS)
def test_a_key_streamed_in_one_channel_among_others_is_never_written(
    tmp_path: Path, how: str
) -> None:
    session = record(tmp_path, {"json": {"model": "m"}}, lambda: RESPONSES[how](FIXED_KEY))
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert "an Anthropic API key" in str(caught.value)
    assert_nowhere(FIXED_KEY, str(caught.value))


@pytest.mark.parametrize("how", STREAMS)
def test_a_stream_holding_no_key_is_recorded(tmp_path: Path, how: str) -> None:
    """The near miss: the same streams, their text no key, are written."""
    words = "the weather in paris is sunny and mild with a light breeze from the west " * 2
    session = record(tmp_path, {"json": {"model": "m"}}, lambda: RESPONSES[how](words))
    assert len(session.finish().files) == 1


OPAQUE = "opaque-credential-7f3a9c21"  # no key shape: only the header it came in names it


@pytest.mark.parametrize(
    ("scheme", "echoed"),
    [
        ("Bearer", OPAQUE),
        ("Token", OPAQUE),
        ("Key", OPAQUE),
        ("token", OPAQUE),
        ("Basic", base64.b64encode(b"ci-bot:" + OPAQUE.encode()).decode()),
        ("Basic", "ci-bot:" + OPAQUE),
        ("Basic", OPAQUE),
        ("", OPAQUE),
    ],
)
def test_an_echoed_authorization_credential_is_found_whatever_the_scheme(
    tmp_path: Path, scheme: str, echoed: str
) -> None:
    """The credential of an `Authorization` header (defect 11 of issue 24: only `Bearer` was
    understood), echoed into a prompt, refuses the recording; a Basic one also when its user and
    password, or the password alone, are echoed."""
    credential = (
        base64.b64encode(b"ci-bot:" + OPAQUE.encode()).decode() if scheme == "Basic" else OPAQUE
    )
    header = f"{scheme} {credential}".strip()
    request = {
        "json": {"model": "m", "messages": [{"role": "user", "content": f"debug: {echoed}"}]},
        "headers": {"authorization": header},
    }
    session = record(tmp_path, request, lambda: httpx2.Response(200, json={}))
    with pytest.raises(SecretLeak) as caught:
        session.finish()
    assert OPAQUE not in str(caught.value)


def test_a_short_scheme_word_alone_is_not_looked_for(tmp_path: Path) -> None:
    """The near miss: the scheme word itself ("Token") in a prompt is no secret."""
    request = {
        "json": {"model": "m", "messages": [{"role": "user", "content": "Token Key Basic"}]},
        "headers": {"authorization": f"Token {OPAQUE}"},
    }
    session = record(tmp_path, request, lambda: httpx2.Response(200, json={}))
    assert len(session.finish().files) == 1


@pytest.mark.parametrize(
    "name", ["auth", "refresh_token", "X-Amz-Signature", "X-Amz-Credential", "id_token", "sig"]
)
def test_a_secret_query_parameter_is_redacted_by_name(tmp_path: Path, name: str) -> None:
    value = "opaque-but-secret-0042"  # no key shape: only its name says it is secret
    session = record(
        tmp_path,
        {"json": {"model": "m"}, "params": {name: value}},
        lambda: httpx2.Response(200, json={}),
    )
    ((_, data),) = session.finish().files
    assert value.encode() not in data and b"[redacted]" in data


def test_a_password_in_the_url_is_redacted(tmp_path: Path) -> None:
    session = CaptureSession.for_test(
        tmp_path / "c.json",
        "record",
        writes_allowed=True,
        upstream=httpx2.MockTransport(lambda _: httpx2.Response(200, json={})),
    )
    session.httpx2_client().post("https://bob:hunter2-long-password@api.example.test/v1/x", json={})
    ((_, data),) = session.finish().files
    assert b"hunter2-long-password" not in data and b"bob:[redacted]@" in data


@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_a_key_never_reaches_a_cassettes_file_name(data: st.DataObject) -> None:
    secret = key_shaped(data.draw)
    path = cassette_path_for(Path("/p/fixtures/cassettes"), f"tests/test_x.py::test_y[{secret}]")
    assert_nowhere(secret, str(path))
    other = cassette_path_for(Path("/p/fixtures/cassettes"), f"tests/test_x.py::test_y[{secret}x]")
    assert other != path  # still one cassette per test


@pytest.mark.slow
@settings(max_examples=examples(80), deadline=None)
@given(
    data=st.data(),
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    change=st.integers(-30, 30),
)
def test_a_key_near_a_difference_is_never_printed(
    data: st.DataObject, before: str, after: str, change: int
) -> None:
    """The excerpt, the summary, the deepdiff lines, Markdown and JSON: none shows the key, however
    near it the difference falls (not inside it: a key edited in its middle is no key)."""
    secret = key_shaped(data.draw)
    before, after = before + " ", " " + after  # a key is a word of its own (a space, a quote...)
    text = f"{before}{secret}{after}"
    at = min(max(len(before) + change, 0), len(text))
    if len(before) < at < len(before) + len(secret):
        at = len(before) if change < 0 else len(before) + len(secret)
    edited = text[:at] + "\u2603" + text[at:]
    report = compare_values({"system": text, "n": 1}, {"system": edited, "n": 1})
    shown = (report.to_text(), report.to_markdown(), report.to_json().decode())
    assert_nowhere(secret, *shown, around=before + after)


@pytest.mark.slow
@settings(max_examples=examples(20), deadline=None)
@given(data=st.data())
def test_the_scan_knows_every_shape_the_property_draws(data: st.DataObject) -> None:
    for name, strategy in KEYS.items():
        assert scan_secrets(data.draw(strategy).encode()), name


@settings(max_examples=examples(5), deadline=None)
@given(data=st.data())
def test_the_property_draws_every_shape_the_scan_knows(data: st.DataObject) -> None:
    """Every key shape of `harness._shared._secret_shapes` is drawn: the property covers them
    all."""
    from harness._shared._secret_shapes import SECRET_PATTERNS

    drawn = set()
    for strategy in KEYS.values():
        for finding in scan_secrets(data.draw(strategy).encode()):
            drawn.add(finding.kind)
    assert {pattern.kind for pattern in SECRET_PATTERNS} <= drawn
