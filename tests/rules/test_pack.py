"""The rules pack is data with its sources: every row dated and sourced, contested facts with
their conflicts, printed by `harness rules`, and overridden by a project's rows.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.providers._pack import PACK_FILES, Minimum, Setting, rules_pack
from harness.rules import LintRequest, analyse, overlay
from harness.rules._registry import rule_names
from tests.support.bodies import RULE_NAMES, claude

PACK = Path(__file__).resolve().parents[2] / "harness" / "providers" / "rules"


def test_the_rules_have_exactly_the_names_users_write() -> None:
    assert rule_names() == RULE_NAMES


def test_every_row_quotes_its_page_or_says_why_it_is_an_assumption() -> None:
    rows = rules_pack().rows
    assert len(rows) > 100
    for row in rows:
        if row.source == "assumption":
            assert row.note.strip(), row
        else:
            assert row.source.startswith("https://") and row.quote.strip(), row
        assert datetime.date(2026, 1, 1) <= row.checked_on <= datetime.date.today(), row
        assert all(conflict.claim and conflict.source for conflict in row.conflicts), row
    quoted = [row for row in rows if row.source != "assumption"]
    assert len(quoted) > 80


def test_the_pack_files_are_the_shipped_files_and_hold_only_rows() -> None:
    assert sorted(path.name for path in PACK.glob("*.json")) == sorted(PACK_FILES)
    for name in PACK_FILES:
        data = json.loads((PACK / name).read_text(encoding="utf-8"))
        assert (data["kind"], data["format"], set(data)) == (
            "harness/rules",
            1,
            {"kind", "format", "rows"},
        )


def test_contested_minimums_carry_their_conflicts() -> None:
    sonnet = rules_pack().first(Minimum, "anthropic", "claude-sonnet-4-6")
    assert sonnet is not None and sonnet.tokens == 1024
    sources = {conflict.source for conflict in sonnet.conflicts}
    assert "https://github.com/anthropics/anthropic-sdk-python/issues/1194" in sources
    assert "https://github.com/theopenco/llmgateway/pull/3010" in sources


@pytest.mark.parametrize(
    ("provider", "model", "tokens"),
    [
        ("anthropic", "claude-opus-5", 512),
        ("anthropic", "claude-fable-5-20261101", 512),
        ("anthropic", "claude-sonnet-5", 1024),
        ("anthropic", "claude-opus-4-8", 1024),
        ("anthropic", "claude-opus-4-7", 2048),
        ("anthropic", "claude-opus-4-6", 4096),
        ("anthropic", "claude-opus-4-5-20251101", 4096),
        ("anthropic", "claude-haiku-4-5", 4096),
        ("anthropic", "claude-sonnet-4-20250514", 1024),
        ("anthropic", "claude-opus-4-1-20250805", 1024),
        ("anthropic", "claude-3-5-haiku-20241022", 2048),
        ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1024),
        ("openai-responses", "gpt-5.6", 1024),
        ("gemini", "gemini-2.5-flash", 2048),
        ("gemini", "gemini-3.6-flash", 4096),
    ],
)
def test_minimums_per_model_family(provider: str, model: str, tokens: int) -> None:
    found = rules_pack().first(Minimum, provider, model)
    assert found is not None and found.tokens == tokens


def test_bookkeeping_is_a_row_not_a_constant() -> None:
    settings = rules_pack().settings("anthropic")
    assert settings["diagnostics"].effect == "bookkeeping"
    assert settings["tool_choice"].level == "messages"
    openai = rules_pack().settings("openai-responses")
    assert openai["prompt_cache_options.comparison_response_id"].effect == "bookkeeping"
    assert openai["prompt_cache_retention"].effect == "retention"
    assert isinstance(openai["model"], Setting)


def test_harness_rules_prints_the_rules_and_the_pack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"harness rules: {len(RULE_NAMES)} rules; the pack holds ")
    assert "too-many-breakpoints (error;" in out
    assert (
        "anthropic, bedrock: minimum 4,096 tokens for *claude-opus-4-6, *claude-opus-4-6-20??????*"
        in out
    )
    assert "  conflicts: caching observed only from about 2,048 tokens" in out
    assert '  quote: "4,096 tokens for Claude Opus 4.6 and Claude Opus 4.5"' in out
    assert main(["rules", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [rule["name"] for rule in data["rules"]] == RULE_NAMES
    assert {"name", "severity", "providers", "meaning", "fix"} == set(data["rules"][0])
    assert all(
        {"rule", "providers", "source", "checked_on", "quote", "conflicts"} <= set(row)
        for row in data["pack"]
    )


def test_harness_rules_shows_the_projects_rows_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    row = {
        "rule": "minimum",
        "providers": ["anthropic"],
        "models": ["claude-opus-4-6*"],
        "tokens": 2048,
        "source": "a negotiated deployment",
        "checked_on": "2026-12-01",
    }
    (tmp_path / "harness-rules.json").write_text(
        json.dumps({"kind": "harness/rules", "format": 1, "rows": [row]}), encoding="utf-8"
    )
    assert main(["rules", "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)["pack"][0]
    assert (first["tokens"], first["source"]) == (2048, "a negotiated deployment")


def test_an_overlay_overrides_a_row_until_it_ends() -> None:
    request = LintRequest(0, claude(3000, model="claude-opus-4-6"))
    before = analyse(request)
    assert before is not None and before.describe().startswith("nothing is cached")
    row = Minimum(
        providers=("anthropic",),
        models=("claude-opus-4-6",),
        tokens=2048,
        source="test",
        checked_on=datetime.date(2026, 12, 1),
    )
    with overlay([row]):
        during = analyse(request)
        assert during is not None and during.describe().startswith("caches ~3,000 tokens")
    after = analyse(request)
    assert after is not None and after.describe().startswith("nothing is cached")
