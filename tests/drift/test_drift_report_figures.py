"""What `harness diff` and the drift report say that no other test read (issue 35, hand-made
mutants of `harness.drift._compare`): an identical pair names both files in order and what the
rules cache, and a note when no provider recognised the bodies; a break's cost is the cache
model's (the cached tokens and bytes lost), and a loss the rules cannot judge claims none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import CacheView
from harness.cli import main
from harness.drift import compare, compare_values
from harness.providers import split_request
from tests.blind.test_drift_and_gate import diff
from tests.support.bodies import ANTHROPIC_URL, CHAT_URL, MARK, RESPONSES_URL, claude, line
from tests.support.conversations import tool

OPAQUE_NOTE = (
    "no provider recognised this request: it was judged as opaque bytes, whole (a later request"
    " must extend the earlier one's bytes)"
)
BEDROCK_INVOKE = "https://bedrock-runtime.us-east-1.amazonaws.com/model/acme.mystery-v1/invoke"


def both_reports(text_a: str, text_b: str) -> list[Any]:
    """The comparator's reports on two texts, as values and as a request's system block."""
    return [
        compare_values({"log": text_a}, {"log": text_b}),
        compare(
            CacheView({"model": "m"}, {"system": text_a}),
            CacheView({"model": "m"}, {"system": text_b}),
        ),
    ]


def test_an_identical_pair_names_both_files_in_order_and_what_the_rules_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100, turns=2)
    report = diff(tmp_path, capsys, body, body)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert report["identical"] is True
    assert report["summary"].startswith(f"identical: {a} and {b} encode to the same ")
    assert report["summary"].endswith(
        "; the cached prefix stays cached under the rules: it caches ~1,100 tokens up to"
        " /system/0 (5m)"
    )
    assert "notes" not in report  # a provider recognised it: no note


def test_an_identical_pair_no_provider_recognises_says_it_was_judged_as_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {"prompt": "Summarise the file."}
    report = diff(tmp_path, capsys, body, body, url=BEDROCK_INVOKE)
    assert report["identical"] is True
    assert report["notes"] == [OPAQUE_NOTE]
    # one side recognised, the other not: the note is still there
    (tmp_path / "b.json").write_text(json.dumps({"url": ANTHROPIC_URL, "body": claude(1100)}))
    main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (report["identical"], report["notes"][0]) == (False, OPAQUE_NOTE)


def test_views_of_two_providers_are_compared_in_the_first_ones_words() -> None:
    # the expected side's provider has no invalidation table: every block either side holds is
    # lost, in their order, and no level neither request has is named
    opaque = split_request({"prompt": "hi"}, url=BEDROCK_INVOKE)
    anthropic = split_request(claude(1100), url=ANTHROPIC_URL)
    assert opaque is not None and anthropic is not None
    report = compare(opaque.view, anthropic.view)
    assert (report.verdict, report.invalidated) == ("model_changed", ("body", "system", "messages"))
    # and the other way round, Anthropic's table names its levels
    report = compare(anthropic.view, opaque.view)
    assert report.invalidated == ("tools", "system", "messages")


def test_a_break_costs_what_the_cache_model_says_was_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = claude(1100, turns=2)
    b = {**a, "system": [{"type": "text", "text": "other"}]}
    report = diff(tmp_path, capsys, a, b)
    assert report["verdict"] == "system_changed"
    # the cached system (1,100 tokens, 4,400 bytes) is lost, not the whole new prompt after
    # the first differing byte (the messages were never cached)
    assert (report["tokens_lost"], report["prefix_bytes_lost"]) == (1100, 4400)
    assert report["summary"].endswith("; ~1,100 cached tokens (4,400 bytes) lost")


def test_a_loss_the_rules_cannot_judge_claims_no_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = claude(1100, turns=2, model="claude-unknown-9")
    b = {**a, "system": [{"type": "text", "text": "other"}]}
    report = diff(tmp_path, capsys, a, b)
    assert report["verdict"] == "system_changed"
    assert (report["tokens_lost"], report["prefix_bytes_lost"]) == (0, 0)
    assert report["summary"].endswith(
        "whether it cached is unknown: no minimum for claude-unknown-9: what it loses is not judged"
    )


def test_a_break_that_keeps_an_earlier_breakpoint_counts_tokens_as_the_cache_model_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the tools are cached at their own breakpoint and kept; the system after them is lost: its
    # tokens are the cached prefix's less the kept one's, one more than its bytes / 4 here
    marked = {**tool("beta"), "description": "d" * 4802, "cache_control": MARK}
    a = claude(1100, turns=2)
    a["tools"] = [marked]
    a["system"] = [{"type": "text", "text": "y" * 4405, "cache_control": MARK}]
    b = {**a, "system": [{"type": "text", "text": "other"}]}
    report = diff(tmp_path, capsys, a, b)
    assert (report["tokens_lost"], report["prefix_bytes_lost"]) == (1108, 4430)
    assert report["summary"].endswith("; ~1,108 cached tokens (4,430 bytes) lost")


def test_the_structured_diff_is_bounded_when_only_the_new_request_is_large(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a small request against one whose system text is past the structured diff's limit: the
    # larger side decides, and the diff is shown around the first difference instead
    a = claude(1100, turns=2)
    b = {**a, "system": [{"type": "text", "text": "y" * 300_000}]}
    report = diff(tmp_path, capsys, a, b)
    assert report["verdict"] == "system_changed"
    assert report["deepdiff"]["note"].startswith(
        "deepdiff skipped: the first differing value is 300,002 bytes"
    )


def test_hints_of_tools_moved_and_changed_read_each_changed_tool_against_itself() -> None:
    # two tools swapped, and each retries once more: the hints read each changed tool against
    # the same-named tool (3 became 4, 7 became 8), not against what now stands in its place
    def job(name: str, retries: int) -> dict[str, Any]:
        return {
            "name": name,
            "description": f"Runs its job, retrying {retries} times.",
            "input_schema": {"type": "object"},
        }

    grep = {"name": "grep", "description": "Search.", "input_schema": {"type": "object"}}
    a = CacheView({"model": "m"}, {"tools": [job("job_one", 3), job("job_two", 7), grep]})
    moved = [job("job_two", 8), job("job_one", 4), grep]
    report = compare(a, CacheView({"model": "m"}, {"tools": moved}))
    assert report.kind == "reorder-and-content"
    assert [hint.split(" — ")[0] for hint in report.volatile_hints] == [
        'looks like a counter: "3" became "4" at the same place',
        'looks like a counter: "7" became "8" at the same place',
    ]
    # near miss: moved alone, no tool changed: nothing to hint at
    same = [job("job_two", 7), job("job_one", 3), grep]
    report = compare(a, CacheView({"model": "m"}, {"tools": same}))
    assert (report.kind, report.volatile_hints) == ("reorder", ())


# -- two JSON values (session logs, pins): no cache verdict, where they differ ------------------


def values(tmp_path: Path, capsys: pytest.CaptureFixture[str], a: Any, b: Any) -> str:
    (tmp_path / "x.json").write_text(json.dumps(a))
    (tmp_path / "y.json").write_text(json.dumps(b))
    main(["diff", str(tmp_path / "x.json"), str(tmp_path / "y.json"), "--format", "json"])
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    summary: str = found["summary"]
    return summary.replace(f"{tmp_path}/", "")


def test_two_values_say_where_they_differ_and_each_side_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = values(tmp_path, capsys, {"a": "hello world"}, {"a": "hello there"})
    assert (
        said == 'values differ at /a, byte 12: x.json has "hello world", y.json has "hello there"'
    )
    # a string against a number: each shown as its JSON
    said = values(tmp_path, capsys, {"a": "text"}, {"a": 5})
    assert said == 'values differ at /a, byte 5: x.json has "text", y.json has 5'
    said = values(tmp_path, capsys, {"a": 1}, {"a": 1})
    assert said == "identical: x.json and y.json encode to the same 7 bytes"


def test_two_long_strings_are_shown_fifty_characters_around_their_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "p" * 100 + "Q" + "r" * 100
    said = values(tmp_path, capsys, {"a": long}, {"a": long.replace("Q", "Z")})
    around = f'"…{"p" * 16}<<HERE>>%s{"r" * 33}…"'
    assert said == (
        f"values differ at /a, byte 106: x.json has {around % 'Q'}, y.json has {around % 'Z'}"
    )


def test_a_long_pointer_is_shown_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "k" * 60
    said = values(tmp_path, capsys, {key: {"b": 1}}, {key: {"b": 2}})
    assert said == f"values differ at /{key}/b, byte 69: x.json has 1, y.json has 2"


def test_the_structured_diff_of_two_values_is_bounded_by_the_larger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"log": "x"}))
    (tmp_path / "y.json").write_text(json.dumps({"log": "y" * 300_000}))
    main(["diff", str(tmp_path / "x.json"), str(tmp_path / "y.json"), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    assert found["deepdiff"]["note"].startswith(
        "deepdiff skipped: the first differing value is 300,002 bytes"
    )


def test_identical_values_past_the_far_size_report_their_encoded_size() -> None:
    # `size` is the caller's estimate (a file's bytes, spaces and all; past 8 MiB the values are
    # compared member by member): the report says what the values encode to
    report = compare_values({"a": 1}, {"a": 1}, size=9 * 1024 * 1024)
    assert report.identical
    assert report.summary == "identical: expected and actual encode to the same 7 bytes"


def test_hints_on_long_texts_read_both_sides_of_their_difference_and_far_past_it() -> None:
    # past 64 KiB, hints read 32 KiB each side of the first difference: the date that differs is
    # whole in what they read, whether the difference is its last character or its month, and a
    # second date a thousand characters on is read too (both in values and in a request's block)
    pad, gap = "x" * 16_500, "y" * 1_000  # 34 KB a text
    for day_a, day_b in (("2026-12-02", "2026-12-03"), ("2026-11-30", "2026-12-01")):
        text_a = f"{pad} built {day_a} {gap} checked 2026-10-05 {pad}"
        text_b = f"{pad} built {day_b} {gap} checked 2026-10-06 {pad}"
        expected = [
            f'looks like a date: "{day_a}"',
            'looks like a date: "2026-10-05"',
            f'looks like a date: "{day_b}"',
            'looks like a date: "2026-10-06"',
        ]
        for report in both_reports(text_a, text_b):
            assert [hint.split(" — ")[0] for hint in report.volatile_hints] == expected


def test_a_block_that_is_not_tools_system_or_messages_is_named_as_a_block() -> None:
    def chat(response_format: dict[str, Any]) -> CacheView:
        body = {
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
            ],
            "response_format": response_format,
        }
        split = split_request(body, url=CHAT_URL)
        assert split is not None
        return split.view

    report = compare(chat({"type": "json_object"}), chat({"type": "text"}))
    assert (report.verdict, report.kind) == ("response_format_changed", "block")
    assert report.summary.startswith('response_format_changed: block "response_format" differs at')

    # a block a provider's view calls `body` is a block too, not a body judged as opaque bytes
    def hand_made(text: str) -> CacheView:
        return CacheView({"model": "m"}, {"system": "s", "body": text}, "anthropic")

    report = compare(hand_made("one"), hand_made("two"))
    assert (report.verdict, report.kind) == ("body_changed", "block")
    assert report.summary.startswith('body_changed: block "body" differs at /body')


def test_a_compaction_is_named_in_the_word_of_the_row_that_says_what_a_compaction_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def conversation(*texts: str, compacted: bool = False) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        if compacted:
            items.append({"type": "compaction", "encrypted_content": "gAAAA-summary"})
        items += [{"role": "user", "content": [{"type": "input_text", "text": t}]} for t in texts]
        return {"model": "gpt-5.6", "instructions": "Be brief.", "input": items}

    def broken() -> list[str]:
        main(["lint", "session.jsonl", "--format", "json"])
        found = json.loads(capsys.readouterr().out)["findings"]
        return [f["message"].split(":")[0] for f in found if f["rule"] == "prefix-broken"]

    monkeypatch.chdir(tmp_path)
    first, second = conversation("q0"), conversation("q0", "q1", compacted=True)
    lines = [line(first, RESPONSES_URL), line(second, RESPONSES_URL)]
    (tmp_path / "session.jsonl").write_text("\n".join(lines) + "\n")
    assert broken() == ["context_compacted"]  # OpenAI's word, from the shipped row
    # a project's own row (a gateway that compacts) names its own word
    row = {
        "rule": "compaction",
        "providers": ["openai-responses"],
        "item_types": ["compaction"],
        "word": "context_summarised",
        "source": "our gateway's documentation",
        "checked_on": "2026-12-01",
    }
    rules = {"kind": "harness/rules", "format": 1, "rows": [row]}
    (tmp_path / "harness-rules.json").write_text(json.dumps(rules))
    assert broken() == ["context_summarised"]


def test_hints_on_texts_under_64_kib_read_them_whole() -> None:
    # one long text against a short one, 41 KB in all: nothing is cut, so a date 38 KB past the
    # first difference is read (in values and in a request's block)
    text_a, text_b = f"{'x' * 38_000} built 2026-12-02", "y"
    for report in both_reports(text_a, text_b):
        hints = [hint.split(" — ")[0] for hint in report.volatile_hints]
        assert hints == ['looks like a date: "2026-12-02"']
