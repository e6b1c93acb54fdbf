"""What the cache model remembers between requests is keyed by their bytes, never by luck.

Every request of a conversation repeats the ones before it, so the layout of a block (the tools,
the system, each message) and each unit's running digest are kept by what they are made of and
taken again when the same bytes come back (`harness.cache._layout`). Each test runs the same
process over two conversations whose requests differ by one byte in a place the cache model
remembers, and checks that the second is judged on its own bytes: a cache read where the bytes
are the same, none where they are not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, MARK, text_block

QUESTION = "question A " + "x" * 6000  # about 1,500 tokens: above Sonnet 4.5's minimum


def turn(*texts: str) -> dict[str, Any]:
    """A Messages body of user turns (answers between), marked at its last block."""
    messages: list[dict[str, Any]] = []
    for number, text in enumerate(texts):
        if number:
            messages.append({"role": "assistant", "content": [text_block(20)]})
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    messages[-1]["content"][-1]["cache_control"] = MARK
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}


def read_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str], *bodies: Any) -> int:
    """`harness cost`'s cache reads over a session of `bodies`, a minute apart."""
    path = tmp_path / f"session{len(list(tmp_path.glob('*.jsonl')))}.jsonl"
    lines = [
        json.dumps({"url": ANTHROPIC_URL, "body": body, "time": {"start": 60.0 * n}})
        for n, body in enumerate(bodies)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["cost", str(path), "--format", "json"]) == 0
    found: int = json.loads(capsys.readouterr().out)["totals"]["cache_read_tokens"]
    return found


def test_a_message_one_byte_apart_is_not_the_message_laid_out_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the conversation grows: the second request reads what the first wrote
    assert read_tokens(tmp_path, capsys, turn(QUESTION), turn(QUESTION, "and then?")) > 1000
    # the same process, the same place, the same length, one byte apart: nothing to read
    edited = "question B" + QUESTION[len("question B") :]
    assert len(edited.encode()) == len(QUESTION.encode())
    assert read_tokens(tmp_path, capsys, turn(QUESTION), turn(edited, "and then?")) == 0
    # and the first conversation, asked again, still reads
    assert read_tokens(tmp_path, capsys, turn(QUESTION), turn(QUESTION, "and then?")) > 1000


def test_a_system_one_byte_apart_is_not_the_system_laid_out_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def with_system(text: str, *turns: str) -> dict[str, Any]:
        body = turn(*turns)
        body["system"] = [{"type": "text", "text": text, "cache_control": MARK}]
        return body

    system = "You are terse. " + "y" * 6000
    other = "You are tersE. " + "y" * 6000
    same = read_tokens(tmp_path, capsys, with_system(system, "hi"), with_system(system, "hello"))
    assert same > 1000  # the system's entry is read; the new question is not
    moved = read_tokens(tmp_path, capsys, with_system(system, "hi"), with_system(other, "hello"))
    assert moved == 0


def test_a_message_moved_to_another_place_is_laid_out_at_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same message bytes at another index are another unit (its pointer names the index):
    the breakpoint `harness lint` names follows the request, not the last one that held the
    same message."""
    long = "z" * 200  # under every minimum: below-minimum names the breakpoint
    for body, where in ((turn(long), 0), (turn("a", long), 2), (turn(long), 0)):
        path = tmp_path / "request.json"
        path.write_text(json.dumps({"url": ANTHROPIC_URL, "body": body}), encoding="utf-8")
        assert main(["lint", str(path), "--format", "json"]) == 0
        found = json.loads(capsys.readouterr().out)["findings"]
        pointers = {f["pointer"] for f in found if f["rule"] == "below-minimum"}
        assert pointers == {f"/messages/{where}/content/0"}, found


def test_a_header_one_byte_apart_is_scanned_for_volatile_values_on_its_own_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`volatile-in-prefix` keeps each unit's scan by its bytes: in one process, a system prompt
    whose timestamp moved by a second is quoted as it is now, and a Unix time one byte from a
    number no clock reads (1212345678: 1998) is silent."""

    def quoted(system: str) -> list[str]:
        body = turn("hi")
        body["system"] = system
        path = tmp_path / "request.json"
        path.write_text(json.dumps({"url": ANTHROPIC_URL, "body": body}), encoding="utf-8")
        main(["lint", str(path), "--format", "json"])
        findings = json.loads(capsys.readouterr().out)["findings"]
        return [f["message"] for f in findings if f["rule"] == "volatile-in-prefix"]

    first = quoted("You are terse. Built 2026-12-01T10:00:00Z.")
    assert len(first) == 1 and "2026-12-01T10:00:00Z" in first[0]
    moved = quoted("You are terse. Built 2026-12-01T10:00:01Z.")
    assert len(moved) == 1 and "2026-12-01T10:00:01Z" in moved[0]
    epoch = quoted("You are terse. Build 1712345678.")
    assert len(epoch) == 1 and "1712345678" in epoch[0]
    assert quoted("You are terse. Build 1212345678.") == []  # one byte apart: no clock's
