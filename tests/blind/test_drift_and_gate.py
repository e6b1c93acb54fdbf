"""Blind spots of the drift report and the prefix-chain gate (issue 35): a tool added in front
of system and messages loses all three caches in the report; the gate stays hard after a
compaction (an edit of an earlier message in a conversation that already holds a compaction
item is a break, not a `context_compacted` warning)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.capture import CaptureSession
from harness.cli import main
from harness.drift import compare
from harness.providers import split_request
from tests.support.bodies import ANTHROPIC_URL, claude
from tests.support.conversations import tool

RESPONSES = "https://api.openai.com/v1/responses"


def diff(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    a: Any,
    b: Any,
    url: str = ANTHROPIC_URL,
) -> dict[str, Any]:
    """`harness diff --format json` of two bodies sent to `url`, as files `a.json`, `b.json`."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"url": url, "body": a}))
    second.write_text(json.dumps({"url": url, "body": b}))
    main(["diff", str(first), str(second), "--format", "json"])
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


# slow: 0.83-0.96 s of CPU in a serial run (issue 33)
@pytest.mark.slow
def test_a_tool_added_in_front_loses_system_and_messages_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = claude(1100), claude(1100)
    a["tools"], b["tools"] = [tool("beta")], [tool("alpha"), tool("beta")]
    whole = diff(tmp_path, capsys, b, b)["prefix_bytes_kept"]  # the new prompt's bytes
    report = diff(tmp_path, capsys, a, b)
    assert report["verdict"] == "tools_changed" and report["tools_added"] == ["alpha"]
    assert report["invalidated"] == ["tools", "system", "messages"]
    # the whole cached prefix (one tool and the system: 1,400 tokens) is lost, nothing kept of it
    assert report["tokens_lost"] == 1400 and report["prefix_bytes_lost"] == 5600
    assert report["prefix_bytes_kept"] < 100
    assert report["prefix_bytes_kept"] + report["prefix_bytes_lost"] <= whole
    # near miss: the same tool added at the end keeps the first tool... and loses the system
    c = claude(1100)
    c["tools"] = [tool("beta"), tool("alpha")]
    later = diff(tmp_path, capsys, a, c)
    assert later["prefix_bytes_kept"] > 1000


def responses(turns: int, first: str = "q0") -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "compaction", "encrypted_content": "gAAAA-summary"}]
    for turn in range(turns):
        if turn:
            items.append(
                {"role": "assistant", "content": [{"type": "output_text", "text": f"r{turn}"}]}
            )
        text = first if turn == 0 else f"q{turn}"
        items.append({"role": "user", "content": [{"type": "input_text", "text": text}]})
    items[-1]["content"][-1]["prompt_cache_breakpoint"] = {"mode": "explicit"}
    return {"model": "gpt-5.6", "instructions": "Be brief.", "input": items}


def test_an_edit_after_a_compaction_is_still_a_break() -> None:
    upstream = httpx2.MockTransport(lambda r: httpx2.Response(200, json={"id": "resp_1"}))
    capture = CaptureSession(upstream=upstream)
    for body in (responses(2), responses(3, first="q0 edited")):
        capture.httpx2_client().post(RESPONSES, content=json.dumps(body))
    chain = capture.prefix_chain()
    assert chain.warnings == []
    (found,) = chain.breaks
    assert found.severity == "error" and found.verdict != "context_compacted"
    # near miss: the same compacted conversation, extended, is no break and no warning
    clean = CaptureSession(upstream=upstream)
    for body in (responses(2), responses(3)):
        clean.httpx2_client().post(RESPONSES, content=json.dumps(body))
    assert (clean.prefix_chain().breaks, clean.prefix_chain().warnings) == ([], [])


def test_kept_plus_lost_is_the_new_prompt_wherever_the_change_falls() -> None:
    def view(body: dict[str, Any]) -> Any:
        split = split_request(body, url=ANTHROPIC_URL)
        assert split is not None
        return split.view

    a = claude(1100, turns=2)
    a["tools"] = [tool("beta")]
    edits: list[dict[str, Any]] = [
        {**a, "tools": [tool("alpha"), tool("beta")]},  # a tool in front
        {**a, "tools": [tool("beta"), tool("alpha")]},  # a tool at the end
        {**a, "system": [{"type": "text", "text": "other"}]},
        {**a, "messages": [*a["messages"], {"role": "assistant", "content": "more"}]},
        {**a, "messages": [{"role": "user", "content": "changed"}, *a["messages"][1:]]},
    ]
    whole = {json.dumps(b): compare(view(b), view(b)).prefix_bytes_kept for b in edits}
    for b in edits:
        report = compare(view(a), view(b))
        kept, lost = report.prefix_bytes_kept, report.prefix_bytes_lost
        assert kept + lost == whole[json.dumps(b)], b
        assert kept >= 0 and lost >= 0
    in_front = compare(view(a), view(edits[0]))
    assert in_front.prefix_bytes_kept < 100  # the tools' first bytes only
