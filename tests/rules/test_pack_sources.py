"""Facts honestly dated: a row that cites a page quotes the sentence that decides it, a row no
page decides says it is an assumption and why, and `harness rules --stale DAYS` lists the rows not
compared with their source for DAYS days.

A project's own row may cite no page (`"source": "our measurement"`) and then needs no quote
(decision 0017); a project row that cites a page is held to the pack's rule.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, claude, line

PACK = Path(__file__).resolve().parents[2] / "harness" / "providers" / "rules"
TODAY = datetime.date.today()


def minimum_row(**extra: Any) -> dict[str, Any]:
    return {
        "rule": "minimum",
        "providers": ["anthropic"],
        "models": ["claude-in-house*"],
        "tokens": 2048,
        "checked_on": "2026-12-01",
        **extra,
    }


def rules_file(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    path = tmp_path / "harness-rules.json"
    path.write_text(
        json.dumps({"kind": "harness/rules", "format": 1, "rows": list(rows)}), encoding="utf-8"
    )
    return path


def lint(tmp_path: Path, rules: Path) -> int:
    session = tmp_path / "session.jsonl"
    session.write_text(line(claude(3000, model="claude-in-house-1"), ANTHROPIC_URL) + "\n")
    return main(["lint", str(session), "--rules", str(rules), "--format", "json"])


def test_a_row_citing_a_page_without_its_quote_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = rules_file(tmp_path, minimum_row(source="https://example.com/our-gateway"))
    assert lint(tmp_path, rules) == 2
    err = capsys.readouterr().err
    assert str(rules) in err and "quote" in err and len(err.strip().splitlines()) == 1
    # near miss: the same row with the sentence it rests on
    quoted = minimum_row(source="https://example.com/our-gateway", quote="Caches from 2,048.")
    assert lint(tmp_path, rules_file(tmp_path, quoted)) == 0


def test_a_projects_own_measurement_needs_no_quote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lint(tmp_path, rules_file(tmp_path, minimum_row(source="our measurement"))) == 0
    capsys.readouterr()


def test_an_assumption_must_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = rules_file(tmp_path, minimum_row(source="assumption"))
    assert lint(tmp_path, rules) == 2
    assert "note" in capsys.readouterr().err
    why = minimum_row(source="assumption", note="the vendor's engineers told us")
    assert lint(tmp_path, rules_file(tmp_path, why)) == 0


def test_a_rows_quote_in_harness_capture_config_is_checked_too() -> None:
    from harness._shared._errors import UsageError
    from harness.capture import CaptureConfig

    row = minimum_row(source="https://example.com/page")
    with pytest.raises(UsageError, match="quote"):
        CaptureConfig.of({"rules": [row]})
    CaptureConfig.of({"rules": [{**row, "quote": "It says so."}]})


def test_every_shipped_row_carries_a_quote_key_or_is_an_assumption() -> None:
    for path in sorted(PACK.glob("*.json")):
        for row in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            assert "quote" in row, (path.name, row)
            if row["source"] == "assumption":
                assert row.get("note"), (path.name, row)
            else:
                assert row["source"].startswith("https://") and row["quote"], (path.name, row)


def test_harness_rules_json_carries_every_quote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "json"]) == 0
    pack = json.loads(capsys.readouterr().out)["pack"]
    sonnet = [row for row in pack if "*claude-sonnet-5-5" in row.get("models", ())]
    assert sonnet and sonnet[0]["tokens"] == 512
    assert "Claude Sonnet 5.5" in sonnet[0]["quote"]
    assert (
        sonnet[0]["source"]
        == "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
    )


# -- harness rules --stale -----------------------------------------------------------------------


def dated(days_ago: int, tokens: int) -> dict[str, Any]:
    checked = (TODAY - datetime.timedelta(days=days_ago)).isoformat()
    return minimum_row(source="our measurement", checked_on=checked, tokens=tokens)


def test_stale_lists_the_rows_not_checked_for_days(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rules_file(tmp_path, dated(31, 1111), dated(30, 2222), dated(0, 3333))
    assert main(["rules", "--stale", "30"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("harness rules: 1 of ")
    assert "rows not checked for 30 days" in out
    assert "minimum 1,111 tokens" in out and "31 days ago" in out
    assert "2,222" not in out and "3,333" not in out  # exactly 30 days: not stale
    assert "too-many-breakpoints" not in out  # the listing, not the rule table


def test_stale_in_json_keeps_the_rules_and_the_pack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rules_file(tmp_path, dated(400, 1111), dated(10, 2222))
    assert main(["rules", "--stale", "90", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"rules", "pack", "stale"} <= set(data)
    stale = data["stale"]
    assert stale["days"] == 90
    assert stale["checked_before"] == (TODAY - datetime.timedelta(days=90)).isoformat()
    assert [row["tokens"] for row in stale["rows"]] == [1111]
    assert stale["rows"][0]["source"] == "our measurement"


def test_the_shipped_pack_is_all_checked_within_a_year(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--stale", "365", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["stale"]["rows"] == []


@pytest.mark.parametrize("days", ["-1", "soon"])
def test_stale_takes_a_number_of_days(days: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--stale", days]) == 2
    err = capsys.readouterr().err
    assert "number of days" in err and len(err.strip().splitlines()) == 1
