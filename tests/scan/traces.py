"""Proxy-JSONL sessions as production logs hold them, for the scan's tests: Anthropic turns with
the provider's counters, a session id header and a deploy, and the one edit a test asks for."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL
from tests.support.conversations import conversation

__all__ = [
    "FINDING_KEYS",
    "SESSION_KEYS",
    "TOTALS_KEYS",
    "line",
    "run",
    "session_lines",
    "write_lines",
]

# The keys issue 31 names, exactly.
FINDING_KEYS: Final = {
    "session",
    "request",
    "request_id",
    "block",
    "verdict",
    "evidence",
    "deploy",
    "severity",
    "tokens_lost",
    "usd_lost",
    "pointer",
    "byte",
}
SESSION_KEYS: Final = {
    "session",
    "requests",
    "deploy",
    "status",
    "provider_hit_rate",
    "stable_hit_rate",
}
TOTALS_KEYS: Final = {"requests", "requests_not_judged"}
START: Final = 1_767_225_600.0


def line(
    body: dict[str, Any],
    *,
    session: str | None,
    time: float | None,
    read: int = 0,
    deploy: str | None = None,
    request_id: str | None = None,
    url: str = ANTHROPIC_URL,
) -> dict[str, Any]:
    headers = {}
    if session is not None:
        headers["x-session-id"] = session
    if deploy is not None:
        headers["x-deploy"] = deploy
    found: dict[str, Any] = {"url": url, "body": body, "headers": headers}
    if time is not None:
        found["time"] = time
    found["response"] = {
        "id": request_id or f"msg-{session}-{time}",
        "usage": {
            "input_tokens": 40,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": 300,
            "output_tokens": 20,
        },
    }
    return found


def session_lines(
    session: str | None,
    turns: int = 4,
    *,
    edit: Callable[[int, dict[str, Any]], None] | None = None,
    start: float = START,
    deploy: str | None = None,
    gap: float = 10.0,
) -> list[dict[str, Any]]:
    """`turns` requests of one conversation; `edit(turn, body)` changes a turn's body (1-based)."""
    found = []
    for turn in range(1, turns + 1):
        body = conversation(turn)
        if edit is not None:
            edit(turn, body)
        found.append(
            line(
                body,
                session=session,
                time=start + turn * gap,
                read=0 if turn == 1 else 2000,
                deploy=deploy,
            )
        )
    return found


def write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["scan", "--quiet", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
