"""The scan's verdicts are the cache model's: on one session, `harness scan` finds exactly the
breaks `harness lint` reports as `prefix-broken`, in the same words, whatever the digest tier
cleared or sent on; and the digest tier's near misses (a breakpoint moved forward, two
conversations taking turns, a conversation held on the server) stay clear."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.scan.traces import START, line, run, session_lines, write_lines
from tests.support.conversations import conversation


def lint_breaks(path: Path, capsys: pytest.CaptureFixture[str]) -> list[tuple[int, str]]:
    main(["lint", str(path), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    return [
        (f["request"] + 1, f["message"].split(":")[0])
        for f in report["findings"]
        if f["rule"] == "prefix-broken"
    ]


def scan_breaks(path: Path, capsys: pytest.CaptureFixture[str]) -> list[tuple[int, str]]:
    _, out, _ = run(capsys, str(path), "--format", "json")
    return [
        (f["request"], f["verdict"])
        for f in json.loads(out)["findings"]
        if f["verdict"] != "unexplained_miss"
    ]


def at(
    turn: int, change: Callable[[dict[str, Any]], None]
) -> Callable[[int, dict[str, Any]], None]:
    def edit(number: int, body: dict[str, Any]) -> None:
        if number >= turn:
            change(body)

    return edit


def reorder(body: dict[str, Any]) -> None:
    body["tools"] = list(reversed(body["tools"]))


def edit_system(body: dict[str, Any]) -> None:
    body["system"][0]["text"] += " Today is 2026-01-01."


def other_model(body: dict[str, Any]) -> None:
    body["model"] = "claude-opus-4-5"


def tool_choice(body: dict[str, Any]) -> None:
    body["tool_choice"] = {"type": "any"}


def ttl_from(turn: int) -> Callable[[int, dict[str, Any]], None]:
    """The system marked on every turn, its TTL 5m, then 1h from `turn` on (one place)."""

    def edit(number: int, body: dict[str, Any]) -> None:
        ttl = "1h" if number >= turn else "5m"
        body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": ttl}

    return edit


def rewrite_history(body: dict[str, Any]) -> None:
    body["messages"][1]["content"][0]["text"] = "a different answer"


def more_output(body: dict[str, Any]) -> None:
    body["max_tokens"] = 4096  # bookkeeping: the digests differ, the cache model finds nothing


EDITS = {
    "tools reordered": at(3, reorder),
    "system edited": at(2, edit_system),
    "model changed": at(3, other_model),
    "tool_choice set": at(2, tool_choice),
    "longer TTL at one place": ttl_from(3),
    "history rewritten": at(3, rewrite_history),
    "max_tokens changed": at(2, more_output),
    "breakpoint moved forward": None,
}


@pytest.mark.parametrize("name", list(EDITS))
def test_scan_and_lint_find_the_same_breaks_in_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = write_lines(tmp_path / "s.jsonl", session_lines("s", turns=5, edit=EDITS[name]))
    expected = lint_breaks(path, capsys)
    assert scan_breaks(path, capsys) == expected
    if name in ("max_tokens changed", "breakpoint moved forward"):
        assert expected == []  # the near misses
    elif name not in ("tool_choice set",):
        assert expected, f"{name}: the cache model should call this a break"


def test_two_conversations_taking_turns_on_one_endpoint_are_not_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planner = [conversation(turn) for turn in (1, 2, 3)]
    helper = [conversation(turn, tools=("delta", "epsilon")) for turn in (1, 2, 3)]
    for body in helper:
        body["messages"][0]["content"][0]["text"] = (
            "helper: " + body["messages"][0]["content"][0]["text"]
        )
    rows = []
    for turn in range(3):  # planner, helper, planner, helper... in one session
        rows.append(line(planner[turn], session="s", time=START + 20 * turn, read=100))
        rows.append(line(helper[turn], session="s", time=START + 20 * turn + 10, read=100))
    path = write_lines(tmp_path / "turns.jsonl", rows)
    assert scan_breaks(path, capsys) == lint_breaks(path, capsys) == []


def test_a_responses_chain_is_one_session_and_its_settings_are_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "https://api.openai.com/v1/responses"
    tools = [{"type": "function", "name": n, "parameters": {}} for n in ("a", "b", "c")]
    rows = []
    previous = None
    for turn in range(1, 5):
        body: dict[str, Any] = {
            "model": "gpt-5",
            "instructions": "Plan the day.",
            "tools": tools if turn < 4 else list(reversed(tools)),
            "input": [{"role": "user", "content": f"question {turn}"}],
        }
        if previous:
            body["previous_response_id"] = previous
        previous = f"resp_{turn}"
        rows.append(
            {
                "url": url,
                "time": START + turn,
                "body": body,
                "response": {"id": previous, "usage": {"input_tokens": 50}},
            }
        )
    path = write_lines(tmp_path / "responses.jsonl", rows)
    code, out, _ = run(capsys, str(path), "--format", "json")
    report = json.loads(out)
    assert code == 1
    assert len(report["sessions"]) == 1 and report["sessions"][0]["requests"] == 4
    assert [(f["request"], f["verdict"]) for f in report["findings"]] == [(4, "tools_changed")]


def test_a_body_whose_top_level_keys_moved_is_judged_not_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Claude on Vertex caches the raw key order: `messages` before `system` misses. The digests
    # must send such a pair to the cache model, whatever it then says.
    url = "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:rawPredict"
    rows = []
    for turn in (1, 2, 3):
        body = conversation(turn)
        body.pop("model")
        body["anthropic_version"] = "vertex-2023-10-16"
        if turn == 3:
            body = {"messages": body.pop("messages"), **body}
        rows.append({**line(body, session="v", time=START + turn, read=10), "url": url})
    path = write_lines(tmp_path / "vertex.jsonl", rows)
    assert scan_breaks(path, capsys) == lint_breaks(path, capsys) == [(3, "key_order_changed")]


def small_session(tmp_path: Path, written: int) -> Path:
    """Three small turns (under Sonnet's 1,024-token minimum by bytes / 4), the tools reordered
    at the third; the provider's counters say `written` tokens were written each turn."""
    rows = []
    for turn in (1, 2, 3):
        body = conversation(turn, system_tokens=10)
        for message in body["messages"]:
            for block in message["content"]:
                block["text"] = block["text"][:40]
        for tool in body["tools"]:
            tool["description"] = "x"
        if turn == 3:
            reorder(body)
        row = line(body, session="s", time=START + turn)
        row["response"]["usage"]["cache_creation_input_tokens"] = written
        rows.append(row)
    return write_lines(tmp_path / "small.jsonl", rows)


@pytest.mark.parametrize("written", [300, 0])
def test_the_loss_is_the_cache_models_in_lints_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: int
) -> None:
    # The counters reach the cache model as lint reads them: where the provider wrote, the
    # loss is its entry; where it wrote nothing (a prompt under the minimum), nothing is lost.
    path = small_session(tmp_path, written)
    main(["lint", str(path), "--format", "json"])
    (message,) = [
        f["message"]
        for f in json.loads(capsys.readouterr().out)["findings"]
        if f["rule"] == "prefix-broken"
    ]
    _, out, _ = run(capsys, str(path), "--format", "json")
    (finding,) = [f for f in json.loads(out)["findings"] if f["verdict"] == "tools_changed"]
    clause = finding["summary"].split("broke first; ")[1]
    assert clause.split(":")[0] in message
    if written:
        assert finding["tokens_lost"] > 0 and f"~{finding['tokens_lost']:,} cached" in message
    else:
        assert finding["tokens_lost"] == 0 and finding["usd_lost"] == 0
        assert clause.startswith("nothing was cached by request 2")
