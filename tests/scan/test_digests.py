"""The digests a session's requests are read into: a conversation extended from what the request
before it read (the scan's memory) has exactly the digests a read from scratch gives, on every
shipped sample and on conversations whose markers, items and spacing make extending hard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.scan import _conversation, _read
from harness.scan._conversation import Conversations, running
from harness.scan._extras import pyarrow
from harness.scan._markers import needles_of
from harness.scan._read import Options, Tally, read_file
from harness.scan._table import schema
from tests.scan.test_tier_agrees import SAMPLES
from tests.scan.traces import session_lines, write_lines
from tests.support.bodies import MARK

DIGESTS = ["d_settings", "d_tools", "d_system", "d_ttls", "conv", "items", "thread", "stored"]
CACHE_CONTROL = needles_of(("cache_control",))
CACHE_POINT = needles_of(("cachePoint",))


def rows(path: Path) -> list[dict[str, Any]]:
    batches = list(read_file(path, 0, Options(), Tally()))
    table = pyarrow().Table.from_batches(batches, schema=schema())
    return table.select(["source", *DIGESTS]).to_pylist()


def test_a_memory_that_keeps_nothing_keeps_nothing() -> None:
    memory = Conversations(kept=0)
    text = b'[{"role":"user","content":"hi"}]'
    memory.read(("s",), text, set(), CACHE_CONTROL)
    assert memory._known == {}  # the near miss of the reference below: nothing to extend


@pytest.mark.parametrize(
    "path", [p for p in SAMPLES if p.name.endswith((".jsonl", ".json"))], ids=lambda p: p.name
)
def test_every_sample_reads_alike_with_and_without_the_memory(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered = rows(path)
    monkeypatch.setattr(_read, "Conversations", lambda: Conversations(kept=0))
    assert rows(path) == remembered


def turns(count: int, mark: Any = MARK) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(count):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"turn {n} " * 9}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"ok {n}"}]})
    messages.pop()
    messages[-1]["content"][-1]["cache_control"] = mark
    return messages


def texts(name: str) -> list[bytes]:
    """A session's conversation texts, each as a request sends it."""
    compact = {"separators": (",", ":")}
    if name == "marker moves forward":
        return [json.dumps(turns(n), **compact).encode() for n in range(1, 6)]  # type: ignore[arg-type]
    if name == "markers kept on earlier turns":
        found = []
        for n in range(1, 6):
            messages = turns(n)
            for message in messages[:-1:4]:
                message["content"][-1]["cache_control"] = MARK
            found.append(json.dumps(messages, **compact).encode())  # type: ignore[arg-type]
        return found
    if name == "spaced JSON":
        return [json.dumps(turns(n), indent=1).encode() for n in range(1, 5)]
    if name == "a cache point alone at the end":
        found = []
        for n in range(1, 5):
            messages: list[Any] = [m for m in turns(n) if m]
            messages.append({"cachePoint": {"type": "default"}})
            found.append(json.dumps(messages, **compact).encode())  # type: ignore[arg-type]
        return found
    if name == "history rewritten":
        first = turns(3)
        second = turns(4)
        second[0]["content"][0]["text"] = "rewritten"
        return [json.dumps(m, **compact).encode() for m in (first, second, turns(5))]  # type: ignore[arg-type]
    if name == "a turn then nothing new":
        one = json.dumps(turns(2), **compact).encode()  # type: ignore[arg-type]
        return [one, one, json.dumps(turns(3), **compact).encode()]  # type: ignore[arg-type]
    raise AssertionError(name)


CASES = [
    ("marker moves forward", CACHE_CONTROL),
    ("markers kept on earlier turns", CACHE_CONTROL),
    ("spaced JSON", CACHE_CONTROL),
    ("a cache point alone at the end", CACHE_POINT),
    ("history rewritten", CACHE_CONTROL),
    ("a turn then nothing new", CACHE_CONTROL),
]


@pytest.mark.parametrize(("name", "needles"), CASES, ids=[name for name, _ in CASES])
def test_a_conversation_extended_has_the_digests_of_one_read_whole(
    name: str, needles: tuple[bytes, ...]
) -> None:
    memory = Conversations()
    for text in texts(name):
        ttls_whole: set[bytes] = set()
        ttls_extended: set[bytes] = set()
        whole = running(text, ttls_whole, needles)
        assert memory.read(("s",), text, ttls_extended, needles) == whole
        assert ttls_extended == ttls_whole


def test_a_conversation_moving_its_marker_forward_is_extended_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = []
    whole = _conversation._read

    def counted(text: bytes) -> Any:
        reads.append(text)
        return whole(text)

    monkeypatch.setattr(_conversation, "_read", counted)
    memory = Conversations()
    for text in texts("marker moves forward"):
        memory.read(("s",), text, set(), CACHE_CONTROL)
    assert len(reads) == 1  # the first request only; each later one adds its turn


def test_a_session_read_from_a_trace_reads_alike_with_and_without_the_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_lines(tmp_path / "s.jsonl", session_lines("s", turns=6))
    remembered = rows(path)
    monkeypatch.setattr(_read, "Conversations", lambda: Conversations(kept=0))
    assert rows(path) == remembered


def helicone_rows(turns_: int) -> list[dict[str, Any]]:
    """A Helicone export of one OpenAI conversation (the provider as Helicone spells it), its
    `prompt_cache_breakpoint` on the newest user turn each request."""
    rows = []
    for turn in range(1, turns_ + 1):
        messages = turns(turn, {"mode": "explicit"})
        for message in messages:
            block = message["content"][-1]
            if "cache_control" in block:
                block["prompt_cache_breakpoint"] = block.pop("cache_control")
        rows.append(
            {
                "request_id": f"r{turn}",
                "request_created_at": f"2026-01-01T00:00:{10 + turn}Z",
                "target_url": "https://api.openai.com/v1/chat/completions",
                "provider": "OPENAI",
                "model": "gpt-5.6",
                "request_body": {"model": "gpt-5.6", "messages": messages},
                "properties": {"Helicone-Session-Id": "s"},
                "prompt_tokens": 2000,
                "prompt_cache_read_tokens": 1024 if turn > 1 else 0,
            }
        )
    return rows


def test_a_moving_breakpoint_needs_no_bytes_read_again_however_the_trace_names_its_provider(
    tmp_path: Path,
) -> None:
    from harness.scan._tier import needs_bytes

    path = write_lines(tmp_path / "helicone.jsonl", helicone_rows(5))
    batches = list(read_file(path, 0, Options(), Tally()))
    table = pyarrow().Table.from_batches(batches, schema=schema())
    assert table["provider"].to_pylist() == ["OPENAI"] * 5
    _, wanted = needs_bytes(table)
    assert not wanted.any()  # the marker moved forward: the digests clear every request
