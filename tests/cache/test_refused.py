"""Requests the API refuses are errors, whatever the format: a Bedrock cache point where it may
not stand, a time to live the API does not take, TTLs out of order; and a refused request
caches nothing, so no other rule counts it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, BEDROCK_URL, MARK, claude, line, sized

POINT = {"cachePoint": {"type": "default"}}


def lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: Any, url: str
) -> tuple[int, list[tuple[str, str, str]]]:
    path = tmp_path / "session.jsonl"
    path.write_text(line(body, url) + "\n", encoding="utf-8")
    code = main(["lint", str(path), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return code, [(f["rule"], f["severity"], f.get("pointer", "")) for f in found]


def converse(**blocks: Any) -> dict[str, Any]:
    """A Converse body: a system text over the minimum, a cache point after it, one question."""
    body: dict[str, Any] = {
        "system": [sized({"text": ""}, 1100), POINT],
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
    }
    body.update(blocks)
    return body


def test_a_cache_point_nested_in_a_tool_result_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = {"toolUseId": "t1", "content": [{"text": "42 degrees"}, POINT]}
    nested = converse(
        messages=[
            {"role": "user", "content": [{"text": "weather?"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}],
            },
            {"role": "user", "content": [{"toolResult": result}]},
        ]
    )
    code, found = lint(tmp_path, capsys, nested, BEDROCK_URL)
    assert code == 1
    assert ("misplaced-breakpoint", "error", "/messages/2/content/0/toolResult/content/1") in found
    # near miss: the same cache point as a block of the message's own content, after the result
    hoisted = copy.deepcopy(nested)
    hoisted["messages"][2]["content"] = [
        {"toolResult": {**result, "content": [{"text": "42"}]}},
        POINT,
    ]
    assert lint(tmp_path, capsys, hoisted, BEDROCK_URL) == (0, [])


def test_an_orphan_cache_point_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    orphan = converse(system=[POINT, sized({"text": ""}, 1100)])
    code, found = lint(tmp_path, capsys, orphan, BEDROCK_URL)
    assert (code, found[0][:2]) == (1, ("misplaced-breakpoint", "error"))
    twice = converse(system=[sized({"text": ""}, 1100), POINT, POINT])
    assert lint(tmp_path, capsys, twice, BEDROCK_URL)[1][0][0] == "misplaced-breakpoint"
    assert lint(tmp_path, capsys, converse(), BEDROCK_URL) == (0, [])


def test_a_cache_point_after_a_reasoning_block_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thought = {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s"}}}
    body = converse(
        messages=[
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [thought, POINT]},
            {"role": "user", "content": [{"text": "go on"}]},
        ]
    )
    assert lint(tmp_path, capsys, body, BEDROCK_URL)[1][0][0] == "misplaced-breakpoint"
    body["messages"][1]["content"] = [thought, {"text": "ok"}, POINT]
    assert lint(tmp_path, capsys, body, BEDROCK_URL) == (0, [])


def test_a_ttl_the_api_does_not_take_is_refused_for_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anthropic = claude(1100, mark={"type": "ephemeral", "ttl": "10m"})
    code, found = lint(tmp_path, capsys, anthropic, ANTHROPIC_URL)
    assert (code, found[0][:2]) == (1, ("ttl-unsupported", "error"))
    bedrock = converse(
        system=[sized({"text": ""}, 1100), {"cachePoint": {"type": "default", "ttl": "10m"}}]
    )
    code, found = lint(tmp_path, capsys, bedrock, BEDROCK_URL)
    assert (code, found[0][:2]) == (1, ("ttl-unsupported", "error"))
    # near miss: a TTL the API takes
    assert lint(
        tmp_path, capsys, claude(1100, mark={"type": "ephemeral", "ttl": "1h"}), ANTHROPIC_URL
    ) == (0, [])


def test_a_refused_request_caches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = claude(1100, mark={"type": "ephemeral", "ttl": "10m"})
    path = tmp_path / "cost.jsonl"
    path.write_text(line(refused, ANTHROPIC_URL) + "\n", encoding="utf-8")
    assert main(["cost", str(path), "--format", "json"]) == 0
    session = json.loads(capsys.readouterr().out)["sessions"][0]
    assert session["cache_write_tokens"] == 0 and session["cache_read_tokens"] == 0
    ok = claude(1100, mark=MARK)
    path.write_text(line(ok, ANTHROPIC_URL) + "\n", encoding="utf-8")
    assert main(["cost", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions"][0]["cache_write_tokens"] == 1100
