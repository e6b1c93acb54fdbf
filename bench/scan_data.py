"""Synthetic production traces for `python -m bench.scan`, written fast and deterministically.

- `write_jsonl(path, requests)`: proxy JSONL (`{url, body, time, headers, response}`), Anthropic
  Messages bodies of about 7 KB on average, sessions of `SESSION` requests that grow turn by turn
  (the breakpoint moving forward, as a real agent's does), and 1% breaks: at 1% of the requests
  (never a session's first) the tool order flips for the rest of the session, so each is exactly
  one `tools_changed`.
- `write_digests(path, requests)`: the same sessions as a digest table (the scan table's columns
  in Parquet, no bodies): what the digest tier reads.
Both return the number of breaks they planted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import numpy as np

SESSION: Final = 20
BREAKS: Final = 0.01
URL: Final = "https://api.anthropic.com/v1/messages"
START: Final = 1_767_225_600


def _tools(reverse: bool) -> str:
    names = [f"tool_{n:02d}" for n in range(8)]
    if reverse:
        names.reverse()
    tools = [
        {
            "name": name,
            "description": f"Does {name} for the agent; " * 5,
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
        for name in names
    ]
    return json.dumps(tools, separators=(",", ":"))


def _plan(requests: int, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each request's turn in its session, and where a break flips the tool order."""
    rng = np.random.default_rng(seed)
    turn = np.arange(requests) % SESSION
    flips = (rng.random(requests) < BREAKS) & (turn > 0)
    return turn, flips


def write_jsonl(path: Path, requests: int, seed: int = 7) -> int:
    turn, flips = _plan(requests, seed)
    tools = (_tools(False), _tools(True))
    system = json.dumps([{"type": "text", "text": "You are the planner agent. " * 45}])
    user = "Please look into item {n} of the queue and report back in detail. " * 3
    answer = "Item {n} is done: the report is in the ticket, with the numbers. " * 2
    reversed_ = False
    with path.open("w", encoding="utf-8") as out:
        for index in range(requests):
            n = int(turn[index])
            session = index // SESSION
            if n == 0:
                reversed_ = False
                history: list[str] = []
            if flips[index]:
                reversed_ = not reversed_
            question = json.dumps(user.format(n=n))
            if len(history) > 1:  # the breakpoint moves to the newest turn
                history[-2] = history[-2].replace(',"cache_control":{"type":"ephemeral"}', "")
            history.append(
                '{"role":"user","content":[{"type":"text","text":'
                + question
                + ',"cache_control":{"type":"ephemeral"}}]}'
            )
            body = (
                '{"model":"claude-sonnet-4-5","max_tokens":1024,"tools":'
                + tools[reversed_]
                + ',"system":'
                + system
                + ',"messages":['
                + ",".join(history)
                + "]}"
            )
            read = 0 if n == 0 else 1400 + 60 * n
            out.write(
                '{"url":"'
                + URL
                + '","time":'
                + str(START + session * 3600 + n * 15)
                + ',"headers":{"x-session-id":"s'
                + str(session)
                + '"},"body":'
                + body
                + ',"response":{"usage":{"input_tokens":40,"cache_read_input_tokens":'
                + str(read)
                + ',"cache_creation_input_tokens":120,"output_tokens":30}}}\n'
            )
            history.append(
                '{"role":"assistant","content":[{"type":"text","text":'
                + json.dumps(answer.format(n=n))
                + "}]}"
            )
    return int(flips.sum())


def write_digests(path: Path, requests: int, seed: int = 7) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harness.scan._table import schema

    turn, flips = _plan(requests, seed)
    rng = np.random.default_rng(seed + 1)
    session = np.arange(requests) // SESSION
    items = 2 * turn + 1
    sessions = int(session.max()) + 1 if requests else 0
    words = rng.integers(0, 2**63, size=(sessions, 2 * SESSION), dtype=np.uint64)
    starts = np.concatenate([[0], np.cumsum(items)]).astype(np.int64)
    row = np.repeat(np.arange(requests), items)
    place = np.arange(starts[-1]) - np.repeat(starts[:-1], items)
    data = words[session[row], place]
    flipped = np.zeros(requests, dtype=bool)
    state = False
    for index in range(requests):  # the tool order, flipped at each break for the session's rest
        if turn[index] == 0:
            state = False
        state ^= bool(flips[index])
        flipped[index] = state
    tools = rng.integers(0, 2**63, size=(sessions, 2), dtype=np.uint64)
    head = rng.integers(0, 2**63, size=(sessions, 2), dtype=np.uint64)

    def digests(values: np.ndarray[Any, Any]) -> Any:
        return pa.array([v.tobytes() for v in values], type=pa.binary())

    conv = pa.Array.from_buffers(
        pa.binary(),
        requests,
        [None, pa.py_buffer((starts * 8).astype(np.int32).tobytes()), pa.py_buffer(data.tobytes())],
    )
    columns: dict[str, Any] = {
        "session": pa.array([f"s{s}" for s in session]),
        "grouped": pa.array(np.zeros(requests, dtype=bool)),
        "seq": pa.array(np.arange(requests, dtype=np.int64)),
        "time": pa.array((START + session * 3600 + turn * 15).astype(np.float64)),
        "endpoint": pa.array(["api.anthropic.com/v1/messages"] * requests),
        "provider": pa.array(["anthropic"] * requests),
        "model": pa.array(["claude-sonnet-4-5"] * requests),
        "evidence": pa.array(["exact"] * requests),
        "d_settings": digests(head[session, 0]),
        "d_tools": digests(tools[session, flipped.astype(np.int64)]),
        "d_system": digests(head[session, 1]),
        "d_ttls": digests(np.zeros(requests, dtype=np.uint64)),
        "conv": conv,
        "items": pa.array(items.astype(np.int32)),
        "stored": pa.array(np.zeros(requests, dtype=bool)),
        "input_tokens": pa.array((1800 + 100 * turn).astype(np.int64)),
        "cache_read": pa.array(np.where(turn == 0, 0, 1400 + 60 * turn).astype(np.int64)),
        "cache_write": pa.array(np.full(requests, 120, dtype=np.int64)),
    }
    wanted = schema()
    table = pa.table(
        {f.name: columns.get(f.name, pa.nulls(requests, f.type)) for f in wanted}, schema=wanted
    )
    pq.write_table(table, path, row_group_size=128 * 1024)
    return int(flips.sum())
