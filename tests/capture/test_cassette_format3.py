"""Cassette format 3: a request stored as what it adds to the one it extends, rebuilt exactly.

The property: whatever a conversation does (turns, a cache marker that moves, a message that
grows, a prefix it breaks, two conversations taking turns, bodies sent spaced or compressed), the
cassette read back holds every request byte for byte as it was sent, for every provider's shape.
Then what the format promises besides: its size grows with the conversation, not its square; a
secret is never hidden between two edits; a file the reader would refuse is never written; a
damaged edit is refused in one line.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness._shared._errors import FixtureError
from harness._shared._files import MAX_FILE_BYTES, decode
from harness._shared._secrets import scan_secrets
from harness.capture import (
    CaptureFile,
    CaptureSession,
    Exchange,
    HttpResponse,
    Proof,
    load_cassette,
)
from harness.capture._cassette import request_record
from harness.capture._writing import encode_cassette
from tests.support.properties import examples

URLS = {
    "anthropic": "https://api.anthropic.com/v1/messages",
    "chat": "https://api.openai.com/v1/chat/completions",
    "responses": "https://api.openai.com/v1/responses",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent",
    "bedrock": "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude/converse",
    "deepseek": "https://api.deepseek.com/chat/completions",
    "cohere": "https://api.cohere.com/v2/chat",
    "opaque": "https://llm.internal:8080/v1/generate",
}
SHAPES = sorted(URLS)

# Text a person or a model writes: quotes, escapes, astral characters, whitespace to cut at.
words = st.text(
    alphabet=st.sampled_from([*'abcdefghij KLMNOP\n\t"\\/~{}[],:é中', "😀", "\x00", "\u2028"]),
    min_size=0,
    max_size=40,
)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Mostly short; sometimes longer than the length at which a string is cut (4,096)."""
    piece = draw(words)
    if draw(st.integers(0, 5)) == 0:
        piece = piece + " " + " ".join(draw(words) for _ in range(3)) * 200
    return piece


def tool(name: str, text: str) -> dict[str, Any]:
    return {"name": name, "description": text, "input_schema": {"type": "object"}}


def body_of(shape: str, state: dict[str, Any]) -> dict[str, Any]:
    """The request body a provider's SDK sends for the conversation `state` holds."""
    tools, system, messages = state["tools"], state["system"], state["messages"]
    settings_ = {"max_tokens": state["max_tokens"]}
    if shape == "anthropic":
        return {
            "model": "claude-x",
            **settings_,
            "system": system,
            "tools": tools,
            "messages": messages,
        }
    if shape in ("chat", "deepseek", "opaque"):
        return {
            "messages": [{"role": "system", "content": system}, *messages],
            "model": "m",
            "tools": [{"type": "function", "function": t} for t in tools],
            **settings_,
        }
    if shape == "responses":
        return {"model": "gpt-x", "instructions": system, "input": messages, "tools": tools}
    if shape == "gemini":
        return {
            "contents": [
                {"role": m["role"], "parts": [{"text": json.dumps(m["content"])}]} for m in messages
            ],
            "systemInstruction": {"parts": [{"text": system}]},
            "tools": [{"functionDeclarations": tools}],
        }
    if shape == "bedrock":
        return {
            "messages": [
                {"role": m["role"], "content": [{"text": json.dumps(m["content"])}]}
                for m in messages
            ],
            "system": [{"text": system}, {"cachePoint": {"type": "default"}}],
            "toolConfig": {"tools": [{"toolSpec": t} for t in tools]},
            "inferenceConfig": {"maxTokens": state["max_tokens"]},
        }
    return {"model": "command-x", "messages": messages, "tools": tools}


STEPS = [
    "turn",
    "turn",
    "turn",
    "marker",
    "grow",
    "reorder",
    "system",
    "edit",
    "compact",
    "setting",
    "other",
]


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[str, bytes]]:
    """(url, body bytes) of every request of one or two conversations of one provider shape."""
    shape = draw(st.sampled_from(SHAPES))
    states = [
        {
            "tools": [tool(f"t{i}", draw(texts())) for i in range(draw(st.integers(0, 4)))],
            "system": draw(texts()),
            "messages": [],
            "max_tokens": 64,
        }
        for _ in range(draw(st.integers(1, 2)))
    ]
    sent: list[tuple[str, bytes]] = []
    for _ in range(draw(st.integers(1, 10))):
        state = states[draw(st.integers(0, len(states) - 1))]
        step = draw(st.sampled_from(STEPS))
        messages = state["messages"]
        if step == "turn" or not messages:
            if messages:
                messages.append({"role": "assistant", "content": draw(texts())})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": draw(texts()),
                            "cache_control": {"type": "ephemeral"},
                        }
                    ],
                }
            )
            for earlier in messages[:-1]:  # the marker moves to the new last message
                if isinstance(earlier["content"], list):
                    earlier["content"] = [
                        {k: v for k, v in b.items() if k != "cache_control"}
                        for b in earlier["content"]
                    ]
        elif step == "marker":
            last = messages[-1]["content"]
            if isinstance(last, list):
                last[-1] = {**last[-1], "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        elif step == "grow":  # one message that grows (DSPy's ReAct)
            last = messages[-1]
            text = last["content"] if isinstance(last["content"], str) else draw(texts())
            last["content"] = (
                text + draw(texts()) + " " + "observation " * draw(st.integers(0, 600))
            )
        elif step == "reorder":
            state["tools"] = list(reversed(state["tools"]))
        elif step == "system":
            state["system"] = draw(texts()) + state["system"]
        elif step == "edit":
            index = draw(st.integers(0, len(messages) - 1))
            messages[index] = {**messages[index], "content": draw(texts())}
        elif step == "compact":
            del messages[: draw(st.integers(0, len(messages)))]
            messages.insert(0, {"role": "user", "content": "summary: " + draw(texts())})
        elif step == "setting":
            state["max_tokens"] += 1
        body = json.loads(json.dumps(body_of(shape, state)))  # a copy: the state goes on
        how = draw(st.sampled_from(["compact", "compact", "compact", "spaced", "gzip"]))
        data = msgspec.json.encode(body)
        if how == "spaced":
            data = json.dumps(body, indent=1, ensure_ascii=False).encode()
        elif how == "gzip":
            data = gzip.compress(data, mtime=0)
        sent.append((URLS[shape], data))
    return sent


def cassette_of(sent: list[tuple[str, bytes]]) -> CaptureFile:
    exchanges = tuple(
        Exchange(
            request=request_record("POST", url, [("content-type", "application/json")], data),
            response=HttpResponse(status=200, json={"n": number}),
        )
        for number, (url, data) in enumerate(sent)
    )
    return CaptureFile(exchanges=exchanges, started="2026-12-05T00:00:00+00:00")


# slow: 0.86-0.96, at the fast loop's example count s of CPU in a serial run (issue 33)
@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_every_request_is_rebuilt_byte_for_byte(sent: list[tuple[str, bytes]]) -> None:
    exchanges = cassette_of(sent).exchanges
    full = CaptureFile(exchanges=exchanges, proofs=(Proof(units=("fs",), exchanges=exchanges),))
    data = encode_cassette(full)
    back = decode(data, CaptureFile, "c.json")
    assert [e.request.body for e in back.exchanges] == [body for _, body in sent]
    assert [e.request.body for e in back.proofs[0].exchanges] == [body for _, body in sent]
    assert msgspec.json.encode(back) == msgspec.json.encode(full)  # headers, answers, order
    assert encode_cassette(back) == data  # rewriting what was read changes no byte


def test_a_conversation_that_breaks_its_prefix_is_rebuilt_exactly() -> None:
    """The near miss of the property's example: the tools reordered, then the system prompt
    edited, then an earlier message rewritten; each is still stored as edits, and rebuilt."""
    state = {
        "tools": [tool(f"t{i}", "d" * 300) for i in range(8)],
        "system": "s" * 3000,
        "messages": [],
        "max_tokens": 64,
    }
    sent = []
    for turn in range(12):
        state["messages"] += [
            {"role": "user", "content": f"q{turn}"},
            {"role": "assistant", "content": f"a{turn}"},
        ]
        if turn == 4:
            state["tools"].reverse()
        if turn == 7:
            state["system"] = "changed " + state["system"]
        if turn == 9:
            state["messages"][2] = {"role": "user", "content": "rewritten"}
        sent.append((URLS["anthropic"], msgspec.json.encode(body_of("anthropic", state))))
    data = encode_cassette(cassette_of(sent))
    document = json.loads(data)
    edits = [e["request"].get("edits") for e in document["exchanges"]]
    assert all(edits[1:])  # every request after the first extends the one before
    assert {"at": "/system", "value": state["system"]} in edits[7]
    back = decode(data, CaptureFile, "c.json")
    assert [e.request.body for e in back.exchanges] == [b for _, b in sent]


def turns(count: int, reply: int = 300) -> list[bytes]:
    """An Anthropic conversation of `count` turns with a realistic header (20 tools, a 6 KB
    system prompt), the cache marker on the last user message."""
    rng = random.Random(count)
    tools = [tool(f"tool_{i}", " ".join(str(rng.random()) for _ in range(20))) for i in range(20)]
    messages: list[dict[str, Any]] = []
    bodies = []
    for turn in range(count):
        for earlier in messages:
            if isinstance(earlier["content"], list):
                earlier["content"] = [{"type": "text", "text": earlier["content"][0]["text"]}]
        text = f"question {turn}: " + " ".join(str(rng.random()) for _ in range(10))
        messages.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}],
            }
        )
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": "You help. " * 600,
            "tools": tools,
            "messages": messages,
        }
        bodies.append(msgspec.json.encode(body))
        messages.append({"role": "assistant", "content": "x" * reply})
    return bodies


def record(tmp_path: Path, bodies: list[bytes]) -> Path:
    """The bodies through a capture session, as a test records them, then written."""
    path = tmp_path / "conversation.json"
    session = CaptureSession.for_test(path, "record", writes_allowed=True)
    for data in bodies:
        ticket = session.receive("POST", URLS["anthropic"], [("x-api-key", "k")], data)
        session.complete(ticket, 200, [("content-type", "application/json")], b'{"id":"m"}')
    ((target, data),) = session.finish().files
    target.write_bytes(data)
    return target


# slow: 2.7-3.2 s of CPU in a serial run (issue 33)
@pytest.mark.slow
def test_a_long_conversation_is_stored_in_size_linear_in_its_length(tmp_path: Path) -> None:
    bodies = turns(300)
    path = record(tmp_path, bodies)
    assert path.stat().st_size <= 5 * len(bodies[-1])  # whole bodies: about 150x
    assert [e.request.body for e in load_cassette(path).exchanges] == bodies


def test_the_first_request_and_a_new_conversation_are_stored_whole(tmp_path: Path) -> None:
    """The near miss: a request with nothing earlier to extend is its whole body."""
    path = record(tmp_path, [*turns(2), turns(1)[0]])
    requests = [e["request"] for e in json.loads(path.read_bytes())["exchanges"]]
    assert "json" in requests[0] and "extends" not in requests[0]
    assert requests[1]["extends"] == 1 and "json" not in requests[1]


def test_a_secret_in_a_grown_message_is_in_the_files_bytes() -> None:
    """Strings are cut far from where they changed, at whitespace: a key-shaped string near the
    change lies whole in the stored text, where the secret scan reads it."""
    start = "Thought: " + "look around. " * 800
    for where in range(0, 200, 7):
        grown = start + "x" * where + " sk-ant-api03-" + "Q" * 40 + " and then " * 500
        sent = [
            (URLS["chat"], msgspec.json.encode({"messages": [{"role": "user", "content": text}]}))
            for text in (start, grown)
        ]
        data = encode_cassette(cassette_of(sent))
        assert b'"extends"' in data
        assert any("Anthropic" in finding.describe() for finding in scan_secrets(data)), where


def test_a_cut_string_raises_no_false_alarm() -> None:
    """The near miss: a long message that grows around a key-shaped word without one (a cut
    must not make `xsk-...` look like `sk-...`)."""
    start = "log: " + "xsk-" + "a" * 30 + " " + "step done. " * 600
    grown = start + "xsk-" + "b" * 30 + " more " * 700
    sent = [
        (URLS["chat"], msgspec.json.encode({"messages": [{"role": "user", "content": text}]}))
        for text in (start, grown)
    ]
    data = encode_cassette(cassette_of(sent))
    assert b'"text": ' in data  # the grown message is stored as a cut
    assert scan_secrets(data) == []


# slow: 1.5-1.9 s of CPU in a serial run (issue 33)
@pytest.mark.slow
def test_a_file_the_reader_would_refuse_is_never_written() -> None:
    huge = "word " * (MAX_FILE_BYTES // 10)
    sent = [
        (URLS["chat"], msgspec.json.encode({"messages": [{"role": "user", "content": text}]}))
        for text in (huge, "other " * (MAX_FILE_BYTES // 10))
    ]
    with pytest.raises(FixtureError) as raised:
        encode_cassette(cassette_of(sent), "fixtures/cassettes/test_x.json")
    assert str(raised.value).startswith(
        "fixtures/cassettes/test_x.json: would be refused when read back, so it is not written:"
    )
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: r.update(extends=5), "exchange 2 extends exchange 5, which is not an earlier"),
        (lambda r: r.update(extends=2), "exchange 2 extends exchange 2, which is not an earlier"),
        (lambda r: r["edits"][0].update(keep=99), "keeps 99 items of an array of 2"),
        (lambda r: r["edits"][0].update(at="/nothing"), "no member 'nothing'"),
        (lambda r: r["edits"][0].update(value=1), "holds add, keep, value"),
        (lambda r: r.update(json={}), "exchange 2 both holds a body and extends exchange 1"),
        (lambda r: r.pop("extends"), "exchange 2 has edits but extends no exchange"),
    ],
)
def test_a_damaged_edit_is_refused_in_one_line(tmp_path: Path, change: Any, said: str) -> None:
    tools = [tool(f"t{i}", "d" * 300) for i in range(5)]
    bodies = [
        msgspec.json.encode({"messages": ["a", "b", "c"][:n], "tools": tools}) for n in (2, 3)
    ]
    document = json.loads(encode_cassette(cassette_of([(URLS["chat"], b) for b in bodies])))
    change(document["exchanges"][1]["request"])
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FixtureError) as raised:
        load_cassette(path)
    assert said in str(raised.value)
    assert str(raised.value).startswith(f"{path}: does not match the harness/capture format")


def test_a_format_2_file_with_edits_is_refused() -> None:
    tools = [tool(f"t{i}", "d" * 300) for i in range(5)]
    sent = [
        (URLS["chat"], msgspec.json.encode({"messages": ["a"] * n, "tools": tools})) for n in (1, 2)
    ]
    data = encode_cassette(cassette_of(sent)).replace(b'"format": 3', b'"format": 2', 1)
    with pytest.raises(FixtureError, match="format 2 has no requests that extend others"):
        decode(data, CaptureFile, "c.json")
