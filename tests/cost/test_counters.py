"""Token counters as `harness cost` meets them (decision 0021, `harness.cache._counters`): the
order counters are asked in, what each is told (the text, the provider, the model), which answers
are believed (a positive whole number), and the built-in tiktoken counter once its encoding is
in tiktoken's cache: OpenAI requests only, never a download.

tiktoken's `o200k_base` file is not cached on a machine without network, so the encoding is a
stand-in here (`tiktoken.get_encoding` answers with one that counts a token every two
characters); what is tested is the harness's use of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.rules import register_token_counter, unregister_token_counter

ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
RESPONSES_URL = "https://api.openai.com/v1/responses"
TIKTOKEN = "counted by tiktoken o200k_base (GPT-4o and later's encoding, JSON framing aside)"


def claude_line(model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    body = {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": "word " * 800}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    return {"url": ANTHROPIC_URL, "body": body}


def openai_line() -> dict[str, Any]:
    body = {"model": "gpt-5", "instructions": "word " * 800, "input": "hi"}
    return {"url": RESPONSES_URL, "body": body}


def cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: dict[str, Any]
) -> tuple[int, str]:
    """`harness cost` on a session of one request: its input tokens, and how they were counted
    (the report's `... of N input tokens; tokens: HOW`)."""
    path = tmp_path / "session.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert main(["cost", str(path)]) == 0
    found = re.search(r"of ([\d,]+) input tokens; tokens: (.*)", capsys.readouterr().out)
    assert found is not None
    return int(found.group(1).replace(",", "")), found.group(2)


@pytest.fixture
def counters() -> Iterator[list[str]]:
    """Names registered by the test, unregistered after it."""
    names: list[str] = []
    yield names
    for name in names:
        unregister_token_counter(name)


def test_a_failing_counter_is_passed_over_for_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], counters: list[str]
) -> None:
    plain, how = cost(tmp_path, capsys, claude_line())
    assert how.startswith("bytes / 4")
    counters += ["fails", "halves"]
    register_token_counter(lambda text, provider, model: 1 // 0, name="fails")
    register_token_counter(lambda text, provider, model: len(text) // 2, name="halves")
    tokens, how = cost(tmp_path, capsys, claude_line())
    assert how == "counted by halves"
    assert tokens == pytest.approx(2 * plain, rel=0.02)


@pytest.mark.parametrize("answer", [0, -5, True, 12.5, "40"])
def test_an_answer_that_is_not_a_positive_whole_number_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], counters: list[str], answer: Any
) -> None:
    plain, _ = cost(tmp_path, capsys, claude_line())
    counters += ["odd", "halves"]
    register_token_counter(lambda text, provider, model: answer, name="odd")
    register_token_counter(lambda text, provider, model: len(text) // 2, name="halves")
    tokens, how = cost(tmp_path, capsys, claude_line())
    assert (how, tokens) == ("counted by halves", pytest.approx(2 * plain, rel=0.02))
    # near miss: a positive count is believed, however small
    register_token_counter(lambda text, provider, model: 1, name="odd")
    assert cost(tmp_path, capsys, claude_line()) == (1, "counted by odd")


def test_a_counter_is_told_the_provider_and_model_and_the_prompts_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], counters: list[str]
) -> None:
    told: list[tuple[str, str | None]] = []

    def opus_only(text: str, provider: str, model: str | None) -> int | None:
        told.append((provider, model))
        assert "word word" in text and "hi" in text
        return len(text) // 2 if model == "claude-opus-4-6" else None

    counters.append("opus")
    register_token_counter(opus_only, name="opus", uncertainty="exact for Opus")
    assert cost(tmp_path, capsys, claude_line("claude-opus-4-6"))[1] == (
        "counted by opus (exact for Opus)"
    )
    assert told[-1] == ("anthropic", "claude-opus-4-6")
    assert cost(tmp_path, capsys, claude_line())[1].startswith("bytes / 4")


def test_a_counter_of_the_same_name_replaces_and_unregistering_removes_only_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], counters: list[str]
) -> None:
    counters += ["a", "b"]
    register_token_counter(lambda text, provider, model: None, name="b")
    register_token_counter(lambda text, provider, model: 7, name="a")
    register_token_counter(lambda text, provider, model: len(text) // 2, name="a")
    assert cost(tmp_path, capsys, claude_line())[1] == "counted by a"
    register_token_counter(lambda text, provider, model: 9, name="b")
    unregister_token_counter("a")
    assert cost(tmp_path, capsys, claude_line()) == (9, "counted by b")
    unregister_token_counter("missing")  # no such counter: nothing to do


class Encoding:
    """A stand-in for tiktoken's `o200k_base`: a token every two characters."""

    def encode(self, text: str, disallowed_special: Any = "all") -> list[int]:
        assert disallowed_special == ()  # special tokens in a prompt are text, never refused
        return [0] * (len(text) // 2)


@pytest.fixture
def tiktoken_cached(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """tiktoken with its encoding in the cache: `get_encoding` answers without a download (the
    list holds the names it was asked for)."""
    tiktoken = pytest.importorskip("tiktoken")
    from harness.cache import _counters

    asked: list[str] = []

    def get_encoding(name: str) -> Encoding:
        asked.append(name)
        return Encoding()

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    monkeypatch.setattr(_counters, "_builtin", [])  # looked up again, from this tiktoken
    yield asked


def test_tiktoken_counts_openai_requests_once_its_encoding_is_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tiktoken_cached: list[str]
) -> None:
    tokens, how = cost(tmp_path, capsys, openai_line())
    assert how == TIKTOKEN
    assert tiktoken_cached == ["o200k_base"]
    plain = len(json.dumps("word " * 800)) // 4
    assert tokens == pytest.approx(2 * plain, rel=0.05)  # the stand-in's two characters a token
    # another vendor's request is not counted by OpenAI's tokenizer
    assert cost(tmp_path, capsys, claude_line())[1].startswith("bytes / 4")
    # a project's counter is asked first
    register_token_counter(lambda text, provider, model: 4321, name="mine")
    try:
        assert cost(tmp_path, capsys, openai_line()) == (4321, "counted by mine")
    finally:
        unregister_token_counter("mine")
    assert tiktoken_cached == ["o200k_base"]  # looked up once


def test_tiktoken_whose_encoding_would_be_downloaded_is_no_counter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken")
    import tiktoken
    import tiktoken.load

    from harness.cache import _counters

    fetched: list[str] = []
    own = tiktoken.load.read_file

    def get_encoding(name: str) -> Encoding:
        tiktoken.load.read_file("https://openaipublic.blob.core.windows.net/o200k_base")
        fetched.append(name)  # not reached: the harness refuses the download
        return Encoding()

    monkeypatch.setattr(tiktoken, "get_encoding", get_encoding)
    monkeypatch.setattr(_counters, "_builtin", [])
    assert cost(tmp_path, capsys, openai_line())[1].startswith("bytes / 4")
    assert fetched == []
    assert tiktoken.load.read_file is own  # tiktoken's own fetch is back
