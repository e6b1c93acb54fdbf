"""What the refusal rules tell a user (issue 35): `misplaced-breakpoint` and `ttl-unsupported`
name what the API refuses, where (the finding's pointer and its message), for which model and
what that model takes instead, and the top-level automatic marker that clashes with the last
block's own. The refusal itself (an error, exit 1) is `tests/cache/test_refused.py`'s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, BEDROCK_URL, claude, line, sized

HOUR = {"type": "ephemeral", "ttl": "1h"}
POINT = {"cachePoint": {"type": "default"}}


def findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: Any, url: str
) -> list[dict[str, Any]]:
    path = tmp_path / "session.jsonl"
    path.write_text(line(body, url) + "\n", encoding="utf-8")
    main(["lint", str(path), "--format", "json"])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["findings"]
    return found


def only(found: list[dict[str, Any]], rule: str) -> dict[str, Any]:
    (finding,) = [f for f in found if f["rule"] == rule]
    return finding


def test_an_unsupported_ttl_names_where_which_model_and_what_it_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100, mark={"type": "ephemeral", "ttl": "10m"})
    finding = only(findings(tmp_path, capsys, body, ANTHROPIC_URL), "ttl-unsupported")
    assert (finding["severity"], finding["pointer"]) == ("error", "/system/0")
    assert finding["message"] == (
        "a 10m time to live at /system/0: claude-sonnet-4-5 takes 1h, 5m;"
        " the API refuses the request"
    )
    # without a model the sentence still says what is taken
    del body["model"]
    finding = only(findings(tmp_path, capsys, body, ANTHROPIC_URL), "ttl-unsupported")
    assert finding["message"].startswith("a 10m time to live at /system/0: this model takes 1h")


def test_an_automatic_marker_asking_another_ttl_than_the_last_block_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100, mark=HOUR)
    body["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": HOUR}]}
    ]
    body["cache_control"] = {"type": "ephemeral"}  # the default, 5 minutes
    found = findings(tmp_path, capsys, body, ANTHROPIC_URL)
    finding = only(found, "ttl-unsupported")
    assert (finding["severity"], finding["pointer"]) == ("error", "/messages/0/content/0")
    assert finding["message"] == (  # with what the API accepts instead
        "the top-level automatic cache_control asks for 5m where the last block's own marker at"
        " /messages/0/content/0 says 1h: the API refuses the request (the same TTL, or no marker"
        " on the last block, is accepted)"
    )
    assert [f["rule"] for f in found] == ["ttl-unsupported"]
    # near miss: the automatic marker asks for the last block's own TTL
    body["cache_control"] = HOUR
    assert findings(tmp_path, capsys, body, ANTHROPIC_URL) == []


def test_a_misplaced_cache_point_names_why_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = {"toolUseId": "t1", "content": [{"text": "42 degrees"}, POINT]}
    body = {
        "system": [sized({"text": ""}, 1100), POINT],
        "messages": [
            {"role": "user", "content": [{"text": "weather?"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}],
            },
            {"role": "user", "content": [{"toolResult": result}]},
        ],
    }
    where = "/messages/2/content/0/toolResult/content/1"
    finding = only(findings(tmp_path, capsys, body, BEDROCK_URL), "misplaced-breakpoint")
    assert (finding["severity"], finding["pointer"]) == ("error", where)
    assert finding["message"] == (
        f"a cache point nested inside another block's content at {where}:"
        " the API refuses the request"
    )
