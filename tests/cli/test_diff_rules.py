"""`harness diff` on request bodies speaks the providers' rules: no false break, no false green.

Two bodies that differ only in bookkeeping are identical (exit 0) and the report names the
fields; an identical report says "stays cached" only when the rules say the prefix caches; on
Vertex the raw key order reaches the cache; a reorder makes no counter hints about tool names.
Each of these failed before the rules pack.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

MARK = {"type": "ephemeral"}
VERTEX = (
    "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/"
    "anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
)


def write(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], a: Any, b: Any, *args: str
) -> tuple[int, str]:
    code = main(["diff", write(tmp_path / "a.json", a), write(tmp_path / "b.json", b), *args])
    return code, capsys.readouterr().out


def claude(words: int, model: str = "claude-opus-4-6", **extra: Any) -> dict[str, Any]:
    """A marked system prompt of about `words` * 1.25 tokens (5 bytes a word, bytes / 4)."""
    return {
        "model": model,
        "max_tokens": 64,
        "system": [{"type": "text", "text": "word " * words, "cache_control": MARK}],
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def test_bodies_differing_only_in_diagnostics_are_identical_and_the_field_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = claude(4000, diagnostics={"previous_message_id": "msg_01"}, metadata={"user_id": "1"})
    b = claude(4000, diagnostics={"previous_message_id": "msg_02"}, metadata={"user_id": "2"})
    code, out = diff(tmp_path, capsys, a, b)
    assert code == 0, out  # was exit 1, model_changed
    assert out.startswith("identical:")
    assert "bookkeeping that never reaches the cache differs: diagnostics, metadata" in out
    code, out = diff(tmp_path, capsys, a, b, "--format", "json")
    report = json.loads(out)
    assert report["identical"] is True
    assert report["notes"] == [
        "bookkeeping fields differ, and never reach the cache: diagnostics, metadata"
    ]


def test_openai_comparison_ids_are_bookkeeping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {"model": "gpt-5.6", "instructions": "Be brief.", "input": "hi"}
    code, out = diff(
        tmp_path,
        capsys,
        {**body, "prompt_cache_options": {"comparison_response_id": "resp_1", "ttl": "30m"}},
        {**body, "prompt_cache_options": {"comparison_response_id": "resp_2", "ttl": "30m"}},
    )
    assert code == 0, out
    assert "prompt_cache_options.comparison_response_id" in out


def test_a_marked_prefix_below_the_minimum_is_never_said_to_stay_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = diff(tmp_path, capsys, claude(80), claude(80))
    assert code == 0
    assert "stays cached" not in out  # was "the whole prefix stays cached"
    assert re.search(r"nothing is cached: 1\d\d tokens, minimum 4,096 for claude-opus-4-6", out)


def test_a_prefix_over_the_minimum_stays_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = diff(tmp_path, capsys, claude(3400), claude(3400))
    assert code == 0
    assert re.search(
        r"stays cached under the rules: it caches ~4,2\d\d tokens up to /system/0 \(5m\)", out
    )


def test_an_unknown_model_is_never_said_to_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = diff(tmp_path, capsys, claude(5000, "claude-test"), claude(5000, "claude-test"))
    assert code == 0 and "stays cached" not in out
    assert "whether it caches is unknown: the rules know no minimum for claude-test" in out


def test_on_vertex_the_raw_key_order_is_part_of_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    system = [{"type": "text", "text": "You plan trips.", "cache_control": MARK}]
    messages = [{"role": "user", "content": "hi"}]
    ordered = {
        "method": "POST",
        "url": VERTEX,
        "json": {"anthropic_version": "vertex-2023-10-16", "system": system, "messages": messages},
    }
    late = {
        "method": "POST",
        "url": VERTEX,
        "json": {"anthropic_version": "vertex-2023-10-16", "messages": messages, "system": system},
    }
    code, out = diff(tmp_path, capsys, ordered, late)
    assert code == 1, out  # was "identical"
    assert out.startswith("key_order_changed: settings changed")
    assert "messages before system" in out
    code, out = diff(tmp_path, capsys, ordered, ordered)
    assert code == 0


def test_the_raw_key_order_does_not_matter_on_the_claude_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = claude(10)
    b = {key: a[key] for key in ("messages", "system", "max_tokens", "model")}
    code, out = diff(tmp_path, capsys, a, b)
    assert code == 0, out


def test_a_reorder_makes_no_counter_hints_about_the_moved_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [
        {"name": f"mcp-{n}", "description": "A tool.", "input_schema": {"type": "object"}}
        for n in (1, 2, 3)
    ]
    code, out = diff(tmp_path, capsys, claude(10, tools=tools), claude(10, tools=tools[::-1]))
    assert code == 1
    assert "tools_changed: tools reordered" in out
    assert "looks like a counter" not in out  # was: "1" became "3", "3" became "1"
    assert "hints:" not in out


def test_a_reorder_with_a_changed_tool_hints_only_about_that_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [
        {"name": f"mcp-{n}", "description": "A tool.", "input_schema": {"type": "object"}}
        for n in (1, 2, 3)
    ]
    edited = [*tools[::-1]]
    edited[0] = {**edited[0], "description": "A tool. Today is 2026-12-04T08:00:00Z."}
    code, out = diff(tmp_path, capsys, claude(10, tools=tools), claude(10, tools=edited))
    assert code == 1
    assert 'looks like a timestamp: "2026-12-04T08:00:00Z"' in out
    assert "looks like a counter" not in out
