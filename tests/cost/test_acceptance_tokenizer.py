"""Token counters (decision 0021), offline: a project's registered counter changes the token
figures and the stated uncertainty of `harness lint` and `harness cost`; the provider's recorded
usage still wins; a counter that declines or fails is passed over; tiktoken without its cached
encoding is never asked to download it (bytes / 4 instead).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.rules import register_token_counter, unregister_token_counter

URL = "https://api.anthropic.com/v1/messages"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def small_body() -> dict[str, Any]:
    return {
        "model": "claude-opus-4-6",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "word " * 400, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }


@pytest.fixture
def halves() -> Iterator[None]:
    """A counter that says a token is two bytes (half of bytes / 4's count, twice its tokens)."""
    register_token_counter(
        lambda text, provider, model: len(text) // 2 if provider == "anthropic" else None,
        name="halves",
        uncertainty="a test's counter",
    )
    yield
    unregister_token_counter("halves")


def lint_message(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    _, out = run(capsys, "lint", str(path), "--format", "json")
    (finding,) = json.loads(out)["findings"]
    message: str = finding["message"]
    return message


def tokens_in(message: str) -> int:
    return int(message.split("nothing is cached: ")[1].split(" tokens")[0].replace(",", ""))


def test_a_registered_counter_changes_the_figures_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(small_body()), encoding="utf-8")
    before = lint_message(capsys, path)
    assert "(tokens: bytes / 4)" in before
    _, out = run(capsys, "cost", str(path), "--format", "json")
    input_before = json.loads(out)["sessions"][0]["input_tokens"]
    register_token_counter(lambda text, provider, model: len(text) // 2, name="halves")
    try:
        after = lint_message(capsys, path)
        _, out = run(capsys, "cost", str(path), "--format", "json")
        input_after = json.loads(out)["sessions"][0]["input_tokens"]
        _, text = run(capsys, "cost", str(path))
    finally:
        unregister_token_counter("halves")
    assert "(tokens: counted by halves)" in after
    assert tokens_in(after) == pytest.approx(2 * tokens_in(before), rel=0.02)
    assert input_after == pytest.approx(2 * input_before, rel=0.02)
    assert "tokens: counted by halves" in text and "±25%" not in text
    # unregistered: bytes / 4 again
    assert lint_message(capsys, path) == before


@pytest.mark.usefixtures("halves")
def test_the_counters_uncertainty_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(small_body()), encoding="utf-8")
    assert "(tokens: counted by halves (a test's counter))" in lint_message(capsys, path)


@pytest.mark.usefixtures("halves")
def test_recorded_usage_wins_over_a_counter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    usage = {"input_tokens": 520, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    line = {"url": URL, "body": small_body(), "response": {"type": "message", "usage": usage}}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    _, out = run(capsys, "cost", str(path), "--format", "json")
    assert json.loads(out)["sessions"][0]["input_tokens"] == 520
    _, text = run(capsys, "cost", str(path))
    assert "tokens: the provider's recorded usage" in text


@pytest.mark.parametrize(
    "count",
    [lambda text, provider, model: None, lambda text, provider, model: 1 // 0],
    ids=["declines", "fails"],
)
def test_a_counter_that_declines_or_fails_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: Any
) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps(small_body()), encoding="utf-8")
    register_token_counter(count, name="odd")
    try:
        assert "(tokens: bytes / 4)" in lint_message(capsys, path)
    finally:
        unregister_token_counter("odd")


def test_a_counter_must_be_callable_and_named() -> None:
    from harness import HarnessError

    with pytest.raises(HarnessError, match="not callable"):
        register_token_counter(42, name="x")  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="name"):
        register_token_counter(lambda text, provider, model: 1, name="")


def test_tiktoken_without_its_cached_encoding_never_downloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken")
    from harness.cache import _counters

    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(_counters, "_builtin", [])  # looked up again, under this cache

    tried: list[Any] = []

    def no_network(*args: Any, **kwargs: Any) -> Any:
        tried.append(args)  # an exception here could be swallowed: the list tells
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    body = {
        "model": "gpt-5.6",
        "instructions": "word " * 400,
        "input": [{"role": "user", "content": "hi"}],
    }
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"url": "https://api.openai.com/v1/responses", "body": body}))
    code, out = run(capsys, "cost", str(path))
    assert code == 0
    assert "tokens: bytes / 4, about ±25%" in out
    assert list(cache.iterdir()) == []
    assert tried == []
    import tiktoken.load

    assert tiktoken.load.read_file.__name__ == "read_file"  # tiktoken's own fetch is back
