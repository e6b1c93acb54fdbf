"""`harness cost` and `harness report` as a user meets them: the JSON shape the issue names, an
unknown `--model` (one line, exit 2, never a silent $0), `--markdown` on its own, bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.conversations import COST_KEYS


def words(tokens: int) -> str:
    return "word " * (tokens * 4 // 5)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def claude_body(model: str = "claude-sonnet-4-5", tokens: int = 3000) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": words(tokens), "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }


def session(path: Path, *bodies: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(body) + "\n" for body in bodies), encoding="utf-8")
    return str(path)


def test_cost_json_has_exactly_the_named_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude_body()
    later = {**body, "messages": [*body["messages"], {"role": "assistant", "content": "a"}]}
    later["messages"].append({"role": "user", "content": "more"})
    path = session(tmp_path / "s.jsonl", body, later)
    code, out, _ = run(capsys, "cost", path, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert set(report) == {"sessions", "totals", "prices"}
    (one,) = report["sessions"]
    assert set(one) == COST_KEYS
    assert one["requests"] == 2 and one["provider"] == "anthropic"
    assert one["cache_write_tokens"] > 0 and one["cache_read_tokens"] > 0
    assert one["input_tokens"] == (
        one["cache_read_tokens"] + one["cache_write_tokens"] + one["uncached_tokens"]
    )
    assert 0 < one["hit_rate"] < 1
    assert one["recorded"] is None and one["agreement"] is None
    assert one["usd"] < one["usd_without_cache"]


@pytest.mark.parametrize("command", ["cost", "report"])
def test_an_unknown_model_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    extra = ["--html", str(tmp_path / "r.html")] if command == "report" else []
    code, out, err = run(capsys, command, path, "--model", "claude-nonexistent-9", *extra)
    assert code == 2
    assert out == ""
    (said,) = err.strip().splitlines()
    assert "claude-nonexistent-9" in said and "harness-prices.json" in said
    assert not (tmp_path / "r.html").exists()


def test_a_known_model_reprices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    code, out, _ = run(capsys, "cost", path, "--model", "claude-opus-4-6", "--format", "json")
    assert code == 0
    assert json.loads(out)["sessions"][0]["model"] == "claude-opus-4-6"


def test_report_markdown_on_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    target = tmp_path / "summary.md"
    code, _out, _ = run(capsys, "report", path, "--markdown", str(target))
    assert code == 0
    assert "claude-sonnet-4-5" in target.read_text(encoding="utf-8")
    assert not list(tmp_path.glob("*.html"))


def test_report_without_an_output_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = session(tmp_path / "s.jsonl", claude_body())
    code, _, err = run(capsys, "report", path)
    assert code == 2
    assert "--html" in err and "--markdown" in err and len(err.strip().splitlines()) == 1


def turn(number: int) -> dict[str, Any]:
    """Turn `number` (0-based) of one Messages conversation on Sonnet 4.5, its system marked."""
    body = claude_body()
    body["messages"] = []
    for past in range(number + 1):
        body["messages"].append({"role": "user", "content": f"q{past}"})
        if past < number:
            body["messages"].append({"role": "assistant", "content": "a"})
    return body


def stream(read: int, written: int, output: int) -> list[dict[str, Any]]:
    """An Anthropic stream's events: usage in message_start, the output count growing in
    message_delta (cumulative, per the streaming docs)."""
    usage = {
        "input_tokens": 8,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "output_tokens": 1,
    }
    return [
        {"type": "message_start", "message": {"type": "message", "content": [], "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": output},
        },
        {"type": "message_stop"},
    ]


def test_a_streamed_answer_counts_its_final_output_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "https://api.anthropic.com/v1/messages"
    lines = [
        {"url": url, "body": turn(0), "time": 0, "response": stream(0, 3005, 40)},
        {"url": url, "body": turn(1), "time": 30, "response": stream(3005, 0, 60)},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in lines), encoding="utf-8")
    code, out, _ = run(capsys, "cost", str(path), "--format", "json")
    assert code == 0
    (one,) = json.loads(out)["sessions"]
    assert one["recorded"]["output_tokens"] == 100
    assert one["recorded"]["cache_read_tokens"] == 3005


def test_hand_worked_write_then_reads_and_a_ttl_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three turns a minute apart: one write, two reads; the third six minutes later (TTL 5m):
    a second write, and `ttl-expired` names it."""
    url = "https://api.anthropic.com/v1/messages"

    def costs(times: list[Any]) -> dict[str, Any]:
        path = tmp_path / "s.jsonl"
        lines = [{"url": url, "body": turn(n), "time": t} for n, t in enumerate(times)]
        path.write_text("".join(json.dumps(item) + "\n" for item in lines), encoding="utf-8")
        code, out, _ = run(capsys, "cost", str(path), "--format", "json")
        assert code == 0
        result: dict[str, Any] = json.loads(out)["sessions"][0]
        return result

    # each turn alone: what it writes (its marked system prompt) and what it sends after it
    alone = []
    for number in range(3):
        path = tmp_path / f"alone{number}.json"
        path.write_text(json.dumps(turn(number)), encoding="utf-8")
        _, out, _ = run(capsys, "cost", str(path), "--format", "json")
        alone.append(json.loads(out)["sessions"][0])
    prefix = alone[0]["cache_write_tokens"]
    assert prefix > 1024 and all(a["cache_write_tokens"] == prefix for a in alone)
    tails = sum(a["uncached_tokens"] for a in alone)

    warm = costs([0, 60, 120])
    assert (warm["cache_write_tokens"], warm["cache_read_tokens"]) == (prefix, 2 * prefix)
    assert warm["uncached_tokens"] == tails
    # Sonnet 4.5 list price per million: input 3, 5m write 3.75, read 0.30
    expected = (prefix * 3.75 + 2 * prefix * 0.30 + tails * 3.0) / 1e6
    assert warm["usd"] == pytest.approx(expected, abs=1e-6)
    assert warm["usd_without_cache"] == pytest.approx((3 * prefix + tails) * 3.0 / 1e6, abs=1e-6)

    cold = costs([0, 60, 60 + 6 * 60])
    assert (cold["cache_write_tokens"], cold["cache_read_tokens"]) == (2 * prefix, prefix)
    code, out, _ = run(capsys, "lint", str(tmp_path / "s.jsonl"), "--format", "json")
    assert code == 0  # a warning
    (finding,) = json.loads(out)["findings"]
    assert (finding["rule"], finding["request"]) == ("ttl-expired", 2)

    # turns 0 and 1 overlap (1 starts before 0's answer ends): 1 cannot read 0's write
    pair = costs([{"start": 0, "end": 5}, {"start": 0.5, "end": 6}, 60])
    assert pair["cache_write_tokens"] == 2 * prefix


def test_repricing_on_a_model_with_a_lower_minimum_shows_caching_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude_body("claude-opus-4-6", 1500)
    path = session(tmp_path / "s.jsonl", body, {**body, "messages": [*body["messages"]]})
    _, out, _ = run(capsys, "cost", path, "--format", "json")
    (before,) = json.loads(out)["sessions"]
    assert before["cache_read_tokens"] == 0 and before["cache_write_tokens"] == 0
    _, out, _ = run(capsys, "cost", path, "--model", "claude-sonnet-4-5", "--format", "json")
    (after,) = json.loads(out)["sessions"]
    assert after["model"] == "claude-sonnet-4-5"
    assert after["cache_write_tokens"] > 0 and after["cache_read_tokens"] > 0
