"""`harness diff` as a user meets it with provider bodies written from the providers' documents:
bookkeeping fields in a `{"url", "body"}` file (what `harness lint` reads), retention and TTL
words, a breakpoint marker that moves forward (an extension, not a change), reorders.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

RESPONSES_URL = "https://api.openai.com/v1/responses"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    "anthropic.claude-sonnet-4-5-20250929-v1:0/converse"
)


def words(tokens: int) -> str:
    """About `tokens` tokens at bytes / 4."""
    return "word " * (tokens * 4 // 5)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def responses_body() -> dict[str, Any]:
    return {
        "model": "gpt-5.6",
        "instructions": words(2000),
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "q1"}]}],
    }


def test_wrapped_openai_bodies_differing_only_in_bookkeeping_are_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = responses_body()
    after = copy.deepcopy(before)
    after["prompt_cache_options"] = {"comparison_response_id": "resp_1"}
    after["user"] = "someone"
    after["metadata"] = {"run": "2"}
    a = write(tmp_path / "a.json", {"url": RESPONSES_URL, "body": before})
    b = write(tmp_path / "b.json", {"url": RESPONSES_URL, "body": after})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0, out
    assert out.startswith("identical:")
    for field in ("prompt_cache_options.comparison_response_id", "metadata", "user"):
        assert field in out
    assert "spacing" not in out  # the bodies differ in bookkeeping, not in spacing


def test_wrapped_chat_bodies_with_a_stream_flag_are_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {
        "model": "gpt-5.6",
        "messages": [
            {"role": "system", "content": words(2000)},
            {"role": "user", "content": "hi"},
        ],
    }
    after = {**before, "stream": True, "user": "u-2"}
    a = write(tmp_path / "a.json", {"url": CHAT_URL, "body": before})
    b = write(tmp_path / "b.json", {"url": CHAT_URL, "body": after})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0, out
    assert "stream" in out and "user" in out


@pytest.mark.parametrize(
    ("setting", "value"),
    [("prompt_cache_retention", "24h"), ("prompt_cache_options", {"ttl": "12h"})],
)
def test_a_wrapped_retention_or_ttl_change_gets_its_own_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, value: Any
) -> None:
    before = responses_body()
    after = {**before, setting: value}
    a = write(tmp_path / "a.json", {"url": RESPONSES_URL, "body": before})
    b = write(tmp_path / "b.json", {"url": RESPONSES_URL, "body": after})
    _code, out, _ = run(capsys, "diff", a, b, "--format", "json")
    verdict = json.loads(out)["verdict"]
    assert "retention" in verdict or "ttl" in verdict
    assert "model_changed" not in out


def anthropic_turns(marker: str = "cache_control") -> tuple[dict[str, Any], dict[str, Any]]:
    first: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": words(2000)}],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "q1", marker: {"type": "ephemeral"}}],
            }
        ],
    }
    second = copy.deepcopy(first)
    del second["messages"][0]["content"][0][marker]
    second["messages"] += [
        {"role": "assistant", "content": "a1"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "q2", marker: {"type": "ephemeral"}}],
        },
    ]
    return first, second


def test_an_anthropic_cache_control_moving_forward_is_an_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = anthropic_turns()
    code, out, _ = run(
        capsys, "diff", write(tmp_path / "a.json", first), write(tmp_path / "b.json", second)
    )
    assert code == 0, out
    assert out.startswith("extends:")
    assert "messages_changed" not in out


def test_an_openai_prompt_cache_breakpoint_moving_forward_is_an_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = {"mode": "explicit"}
    first = responses_body()
    first["input"][0]["content"][0]["prompt_cache_breakpoint"] = mark
    second = copy.deepcopy(first)
    del second["input"][0]["content"][0]["prompt_cache_breakpoint"]
    second["input"] += [
        {"role": "assistant", "content": [{"type": "output_text", "text": "a1"}]},
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "q2", "prompt_cache_breakpoint": mark}],
        },
    ]
    a = write(tmp_path / "a.json", {"url": RESPONSES_URL, "body": first})
    b = write(tmp_path / "b.json", {"url": RESPONSES_URL, "body": second})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0, out
    assert "input_changed" not in out


def test_a_bedrock_cache_point_moving_forward_is_an_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    point = {"cachePoint": {"type": "default"}}
    first = {
        "system": [{"text": words(2000)}],
        "messages": [{"role": "user", "content": [{"text": "q1"}, point]}],
    }
    second = {
        "system": [{"text": words(2000)}],
        "messages": [
            {"role": "user", "content": [{"text": "q1"}]},
            {"role": "assistant", "content": [{"text": "a1"}]},
            {"role": "user", "content": [{"text": "q2"}, point]},
        ],
    }
    a = write(tmp_path / "a.json", {"url": BEDROCK_URL, "body": first})
    b = write(tmp_path / "b.json", {"url": BEDROCK_URL, "body": second})
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0, out
    assert "messages_changed" not in out


def test_a_marker_moving_forward_with_a_changed_system_is_still_a_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = anthropic_turns()
    second["system"][0]["text"] += " (edited)"
    code, out, _ = run(
        capsys, "diff", write(tmp_path / "a.json", first), write(tmp_path / "b.json", second)
    )
    assert code == 1
    assert out.startswith("system_changed")


def test_a_shorter_conversation_is_not_called_an_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = anthropic_turns()
    _code, out, _ = run(
        capsys, "diff", write(tmp_path / "a.json", second), write(tmp_path / "b.json", first)
    )
    assert not out.startswith("extends:")


def test_a_reorder_of_many_tools_gives_no_counter_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [f"tool_{n}_v{n * 7}" for n in range(1, 9)]
    tools = [
        {
            "name": name,
            "description": f"does {name}",
            "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
        for name in names
    ]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "tools": tools,
        "messages": [{"role": "user", "content": "hi"}],
    }
    moved = {**body, "tools": [*tools[4:], *tools[:4]]}
    code, out, _ = run(
        capsys, "diff", write(tmp_path / "a.json", body), write(tmp_path / "b.json", moved)
    )
    assert code == 1
    assert out.startswith("tools_changed")
    assert "counter" not in out


def test_tools_added_on_the_next_turn_are_not_an_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = anthropic_turns()
    second["tools"] = [{"name": "search", "description": "d", "input_schema": {"type": "object"}}]
    code, out, _ = run(
        capsys, "diff", write(tmp_path / "a.json", first), write(tmp_path / "b.json", second)
    )
    assert code == 1
    assert out.startswith("tools_changed")
    lines = [json.dumps(first), json.dumps(second)]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(tmp_path / "s.jsonl"), "--format", "json")
    assert code == 1
    (finding,) = [f for f in json.loads(out)["findings"] if f["rule"] == "prefix-broken"]
    assert finding["message"].startswith("tools_changed") and finding["request"] == 1
