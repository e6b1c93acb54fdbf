"""Request bodies as the providers document them, sized in the rules' own token estimate.

The rules estimate a prefix's tokens as its blocks' JSON bytes / 4 (`harness.cache._tokens`), so
`text_block(tokens)` makes a content block whose JSON is exactly `tokens` * 4 bytes: a prefix
of it is exactly `tokens` tokens to the rules, and a test can stand one token either side of a
minimum.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2

from harness.capture import CaptureSession

# The lint rules, in the order `harness rules` lists them, as issues 20 and 21 name them.
RULE_NAMES = [
    "too-many-breakpoints",
    "below-minimum",
    "no-breakpoint",
    "ttl-order",
    "misplaced-breakpoint",
    "ttl-unsupported",
    "lookback-exceeded",
    "volatile-in-prefix",
    "vertex-key-order",
    "write-never-read",
    "unknown-model",
    "prefix-broken",
    "ttl-expired",
    "provider-disagrees",
]

MARK = {"type": "ephemeral"}
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
RESPONSES_URL = "https://api.openai.com/v1/responses"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    "anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
)
VERTEX_URL = (
    "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/"
    "anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
)


def sized(block: dict[str, Any], tokens: int, key: str = "text") -> dict[str, Any]:
    """`block` with its `key` padded so its JSON (markers left out) is `tokens` * 4 bytes."""
    bare = {k: v for k, v in block.items() if k not in ("cache_control", "prompt_cache_breakpoint")}
    bare[key] = ""
    room = tokens * 4 - len(json.dumps(bare, separators=(",", ":")))
    assert room >= 0, f"{tokens} tokens is too small for {bare}"
    return {**block, key: "x" * room}


def text_block(tokens: int, mark: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": ""}
    if mark is not None:
        block["cache_control"] = mark
    return sized(block, tokens)


def claude(
    system_tokens: int,
    *,
    model: str = "claude-sonnet-4-5",
    mark: dict[str, Any] | None = MARK,
    turns: int = 1,
    **extra: Any,
) -> dict[str, Any]:
    """A Messages body: a system block of `system_tokens` (marked with `mark`), then `turns`
    user turns, plain text."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if turn:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        messages.append({"role": "user", "content": f"question {turn}"})
    return {
        "model": model,
        "max_tokens": 64,
        "system": [text_block(system_tokens, mark)],
        "messages": messages,
        **extra,
    }


def converse(system_tokens: int, points: int = 1) -> dict[str, Any]:
    """A Bedrock Converse body with `points` cache points in the system list."""
    system: list[dict[str, Any]] = [sized({"text": ""}, system_tokens)]
    for _ in range(points):
        system += [{"cachePoint": {"type": "default"}}, {"text": "more rules"}]
    return {"system": system, "messages": [{"role": "user", "content": [{"text": "hi"}]}]}


def responses(
    tokens: int, *, breakpoints: int = 0, mode: str | None = None, model: str = "gpt-5.6"
) -> dict[str, Any]:
    """A Responses body: one user item of content blocks, the last `breakpoints` marked."""
    parts = [sized({"type": "input_text", "text": ""}, tokens)]
    parts += [{"type": "input_text", "text": f"part {n}"} for n in range(max(breakpoints - 1, 0))]
    for part in parts[len(parts) - breakpoints :] if breakpoints else []:
        part["prompt_cache_breakpoint"] = {"mode": "explicit"}
    body: dict[str, Any] = {"model": model, "input": [{"role": "user", "content": parts}]}
    if mode is not None:
        body["prompt_cache_options"] = {"mode": mode}
    return body


def line(body: dict[str, Any], url: str | None = None, **extra: Any) -> str:
    """One line of a session `.jsonl`: the body alone, or wrapped with its URL."""
    value: dict[str, Any] = body if url is None else {"url": url, "body": body, **extra}
    return json.dumps(value)


def too_many() -> dict[str, Any]:
    """An Anthropic body with five cache_control blocks: the API refuses it."""
    body = claude(1100)
    body["messages"] = [{"role": "user", "content": [text_block(8, MARK) for _ in range(4)]}]
    return body


def record_cassette(
    path: Path, *bodies: dict[str, Any], url: str = ANTHROPIC_URL, moves_header: str | None = None
) -> Path:
    """A cassette as the plugin records one: the bodies sent through a capture session (as text
    with spaces, the way a hand-rolled client sends JSON) to a stand-in; `moves_header` the
    reason of the test's marker."""
    usage = {"input_tokens": 10, "output_tokens": 2}
    answer = {"id": "msg_1", "type": "message", "content": [], "usage": usage}
    upstream = httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer))
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream)
    session.moves_header = moves_header
    for body in bodies:
        session.httpx2_client().post(url, content=json.dumps(body))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(session.finish().files[0][1])
    return path
