"""Conversations as a session `.jsonl` holds them: Anthropic turns sized in the rules' estimate,
with their recorded times and the provider's answers (usage counters, a miss reason)."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, MARK, sized, text_block

__all__ = [
    "COST_KEYS",
    "PRICES_CHECKED",
    "REGISTRY",
    "answer",
    "conversation",
    "cost",
    "entry",
    "size",
]

# The day genai-prices' rows were last compared with the providers' pages (the `checked_on` of
# harness/providers/prices/genai-prices.json), and how the output names the registry.
PRICES_CHECKED = "2026-12-05"
REGISTRY = f"genai-prices {metadata.version('genai-prices')}"

# The keys of one conversation in `harness cost --format json`, exactly as issue 21 names them.
COST_KEYS = {
    "file",
    "provider",
    "model",
    "requests",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "uncached_tokens",
    "hit_rate",
    "usd",
    "usd_without_cache",
    "recorded",
    "agreement",
    "prices_checked_on",
}


def tool(name: str) -> dict[str, Any]:
    return sized(
        {"name": name, "description": "", "input_schema": {"type": "object"}}, 300, "description"
    )


def conversation(
    turns: int,
    *,
    model: str = "claude-sonnet-4-5",
    ttl: str | None = None,
    tools: tuple[str, ...] = ("alpha", "beta", "gamma"),
    system_tokens: int = 1200,
) -> dict[str, Any]:
    """A Messages body of `turns` user turns (answers between), marked at the last user block."""
    mark = {**MARK, "ttl": ttl} if ttl else MARK
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": [text_block(200 + turn)]})
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": [text_block(150)]})
    messages[-1]["content"][-1]["cache_control"] = mark
    return {
        "model": model,
        "max_tokens": 256,
        "tools": [tool(name) for name in tools],
        "system": [text_block(system_tokens)],
        "messages": messages,
    }


def entry(
    body: dict[str, Any], start: float | None = None, end: float | None = None, **extra: Any
) -> str:
    value: dict[str, Any] = {"url": ANTHROPIC_URL, "body": body, **extra}
    if start is not None:
        value["time"] = {"start": start, "end": end if end is not None else start + 5}
    return json.dumps(value)


def answer(read: int, written: int, uncached: int = 0, reason: str | None = None) -> dict[str, Any]:
    usage = {
        "input_tokens": uncached,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "cache_creation": {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 100,
    }
    body: dict[str, Any] = {"type": "message", "usage": usage}
    if reason is not None:
        body["diagnostics"] = {"cache_miss_reason": {"type": reason}}
    return body


def cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str, args: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`harness cost --format json` on a session of `lines`: its one conversation."""
    path = tmp_path / f"session{len(list(tmp_path.glob('*.jsonl')))}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["cost", str(path), "--format", "json", *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert len(report["sessions"]) == 1
    found: dict[str, Any] = report["sessions"][0]
    return found


def size(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: dict[str, Any]) -> int:
    """A request's input tokens, as the cost model counts them."""
    tokens: int = cost(tmp_path, capsys, entry(body))["input_tokens"]
    return tokens
