"""What each request rule and conversation rule tells a user, to the character (issue 35).

`harness lint --format json` prints a finding's rule, severity, request, pointer and message; a
user reads the message to know what to fix. Each test pins the whole finding of one rule on the
body of `tests/rules/test_lint_rules.py` that fires it (where that file checks only a part), so
a changed word, figure or pointer fails here. The near misses are in `test_lint_rules.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.rules import test_lint_rules as lint_rules
from tests.rules.test_lint_rules import conversation, grown, marked, vertex
from tests.support.bodies import (
    ANTHROPIC_URL,
    BEDROCK_URL,
    MARK,
    RESPONSES_URL,
    VERTEX_URL,
    claude,
    converse,
    line,
    record_cassette,
    responses,
    text_block,
)

KEYS = ("rule", "severity", "request", "pointer", "message")


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str) -> list[dict[str, Any]]:
    """The findings of `harness lint --format json` on `lines`, each cut to `KEYS`."""
    _, found = lint_rules.lint(tmp_path, capsys, *lines)
    return [{key: f.get(key) for key in KEYS} for f in found]


def finding(rule: str, severity: str, request: int, message: str, pointer: str | None = None):
    return {
        "rule": rule,
        "severity": severity,
        "request": request,
        "pointer": pointer,
        "message": message,
    }


def test_too_many_breakpoints_says_what_counts_and_what_happens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lint(tmp_path, capsys, line(marked(5), ANTHROPIC_URL)) == [
        finding(
            "too-many-breakpoints",
            "error",
            0,
            "5 breakpoints, at most 4 (blocks with cache_control in tools, system and messages,"
            " and the top-level automatic cache_control): the API refuses the request",
        )
    ]
    assert lint(tmp_path, capsys, line(responses(1100, breakpoints=4), RESPONSES_URL)) == [
        finding(
            "too-many-breakpoints",
            "warning",
            0,
            "4 breakpoints, at most 3 (content blocks with prompt_cache_breakpoint (user, system"
            " or developer, tool; not assistant)): only the latest 3 are written, the earlier"
            " ones are not",
        )
    ]


def test_openai_past_80_breakpoints_matches_only_the_latest_80(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = responses(1100, breakpoints=81, mode="explicit")
    assert lint(tmp_path, capsys, line(body, RESPONSES_URL)) == [
        finding(
            "too-many-breakpoints",
            "warning",
            0,
            "81 breakpoints, at most 4 (content blocks with prompt_cache_breakpoint (user, system"
            " or developer, tool; not assistant)): only the latest 4 are written, the earlier"
            " ones are not",
        ),
        finding(
            "lookback-exceeded",
            "warning",
            0,
            "81 breakpoints: matching considers only the latest 80, so an entry written at an"
            " earlier one is not found",
        ),
    ]
    # near miss: 80 breakpoints are all considered
    body = responses(1100, breakpoints=80, mode="explicit")
    assert [f["rule"] for f in lint(tmp_path, capsys, line(body, RESPONSES_URL))] == [
        "too-many-breakpoints"
    ]


def test_below_minimum_names_the_marker_it_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(4095, model="claude-opus-4-6")
    assert lint(tmp_path, capsys, line(body, ANTHROPIC_URL)) == [
        finding(
            "below-minimum",
            "warning",
            0,
            "nothing is cached: 4,095 tokens, minimum 4,096 for claude-opus-4-6"
            " (tokens: bytes / 4)",
            "/system/0",
        )
    ]


def test_no_breakpoint_says_what_was_sent_and_the_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lint(tmp_path, capsys, line(claude(1100, mark=None), ANTHROPIC_URL)) == [
        finding(
            "no-breakpoint",
            "warning",
            0,
            "~1,108 tokens (bytes / 4) sent with no cache_control marker and no top-level"
            " automatic cache_control: nothing is cached (minimum 1,024 for claude-sonnet-4-5)",
        )
    ]
    explicit = responses(1100, mode="explicit")
    assert lint(tmp_path, capsys, line(explicit, RESPONSES_URL)) == [
        finding(
            "no-breakpoint",
            "warning",
            0,
            "prompt_cache_options.mode is explicit and no content block has a"
            " prompt_cache_breakpoint: nothing is cached",
        )
    ]


def test_ttl_order_names_both_breakpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100)  # the system block: 5m (the default)
    body["messages"] = [{"role": "user", "content": [text_block(8, {**MARK, "ttl": "1h"})]}]
    assert lint(tmp_path, capsys, line(body, ANTHROPIC_URL)) == [
        finding(
            "ttl-order",
            "error",
            0,
            "a 1h breakpoint at /messages/0/content/0 comes after a 5m one at /system/0: longer"
            " TTLs must come first; the API refuses the request",
            "/messages/0/content/0",
        )
    ]


def test_volatile_in_prefix_quotes_the_value_and_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100)
    body["system"][0]["text"] = "Now: 2026-12-04T08:00:00Z. " + body["system"][0]["text"]
    assert lint(tmp_path, capsys, line(body, ANTHROPIC_URL)) == [
        finding(
            "volatile-in-prefix",
            "warning",
            0,
            'looks like a timestamp: "2026-12-04T08:00:00Z" at /system/0, inside the cached'
            " prefix every request repeats: it changes from run to run and the cache with it;"
            " move it into the latest message or pin it",
            "/system/0",
        )
    ]


def test_vertex_key_order_names_the_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    late = vertex(("anthropic_version", "max_tokens", "messages", "system"))
    assert lint(tmp_path, capsys, line(late, VERTEX_URL)) == [
        finding(
            "vertex-key-order",
            "warning",
            0,
            "the body serialises messages before system: Claude on Vertex AI misses the cache"
            " when the growing conversation comes before the stable prefix",
        )
    ]


def test_lookback_exceeded_names_both_places_and_the_tokens_written_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lint(tmp_path, capsys, *(line(b, ANTHROPIC_URL) for b in grown(20))) == [
        finding(
            "lookback-exceeded",
            "warning",
            1,
            "the breakpoint at /messages/0/content/20 is 20 blocks after the cache entry request"
            " 0 wrote at /messages/0/content/0; a breakpoint looks back at most 20 blocks, so"
            " ~1,108 cached tokens are written again instead of read",
            "/messages/0/content/20",
        )
    ]


def test_write_never_read_names_the_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Plan a trip. " + "x" * 400
    first = conversation([question])
    unmarked = conversation([question, "Book it."], mark_last=False)
    found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(unmarked, ANTHROPIC_URL))
    assert found == [
        finding(
            "write-never-read",
            "warning",
            0,
            "the cache write of ~1,210 tokens up to /messages/0/content/0 is never read by a later"
            " request of the file: its write premium buys nothing",
            "/messages/0/content/0",
        )
    ]


def test_prefix_broken_names_the_verdict_and_the_request_it_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"name": name, "input_schema": {"type": "object"}} for name in ("bash", "grep")]
    first = claude(1100, tools=tools)
    second = claude(1100, turns=2, tools=tools[::-1])
    broken = finding(
        "prefix-broken",
        "error",
        1,
        'tools_changed: tools reordered; first out of place: "grep" at /tools/0, byte 60;'
        " ~1,124 cached tokens (4,496 bytes) lost (against request 0, the request it continues)",
        "/tools/0/name",
    )
    assert lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL)) == [
        broken
    ]
    # a test that says its header moves: an info, with the reason
    cassette = record_cassette(tmp_path / "c.json", first, second, moves_header="tools reloaded")
    main(["lint", str(cassette), "--format", "json"])
    (shown,) = json.loads(capsys.readouterr().out)["findings"]
    assert (shown["rule"], shown["severity"], shown["request"]) == ("prefix-broken", "info", 1)
    assert shown["message"] == (
        broken["message"] + "; expected: moves_header(reason='tools reloaded')"
    )


def test_unknown_model_names_the_model_or_its_absence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert lint(tmp_path, capsys, line(claude(10, model="claude-test"), ANTHROPIC_URL)) == [
        finding(
            "unknown-model",
            "info",
            0,
            "the rules know no minimum for model claude-test (anthropic): the rules that need"
            " one abstain; add a minimum row to the project's rules to judge it",
        )
    ]
    nameless = claude(10)
    del nameless["model"]
    found = lint(tmp_path, capsys, line(nameless, ANTHROPIC_URL))
    assert [f["message"] for f in found if f["rule"] == "unknown-model"] == [
        "the rules know no minimum for a request without a model (anthropic): the rules that"
        " need one abstain; add a minimum row to the project's rules to judge it"
    ]


def test_below_minimum_is_silent_on_a_refused_request_and_one_the_provider_cached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = claude(500)  # under Sonnet's 1,024: nothing is written
    assert [f["rule"] for f in lint(tmp_path, capsys, line(small, ANTHROPIC_URL))] == [
        "below-minimum"
    ]
    # refused (five markers): the refusal is the finding, not what a refused request writes
    refused = claude(500)
    refused["messages"] = [{"role": "user", "content": [text_block(8, MARK) for _ in range(4)]}]
    assert [f["rule"] for f in lint(tmp_path, capsys, line(refused, ANTHROPIC_URL))] == [
        "too-many-breakpoints"
    ]
    # the response says the provider read from its cache: whatever the estimate, it cached
    usage = {"input_tokens": 3, "cache_read_input_tokens": 1400, "output_tokens": 5}
    cached = json.dumps(
        {"url": ANTHROPIC_URL, "body": small, "response": {"type": "message", "usage": usage}}
    )
    assert lint(tmp_path, capsys, cached) == []


def test_below_minimum_judges_every_request_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a request the rule passes over (written; a model of no known minimum) does not end the file
    for first in (claude(1100), claude(10, model="claude-test")):
        found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(claude(500), ANTHROPIC_URL))
        assert [f["request"] for f in found if f["rule"] == "below-minimum"] == [1]


def test_below_minimum_points_at_the_last_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(300)
    body["messages"] = [{"role": "user", "content": [text_block(8, MARK), text_block(8, MARK)]}]
    (found,) = lint(tmp_path, capsys, line(body, ANTHROPIC_URL))
    assert (found["rule"], found["pointer"]) == ("below-minimum", "/messages/0/content/1")


def test_openais_cache_options_ask_for_caching_a_warning_not_an_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def severity(**options: Any) -> list[tuple[str, str]]:
        body = responses(1023)
        body.update(options)
        found = lint(tmp_path, capsys, line(body, RESPONSES_URL))
        return [(f["rule"], f["severity"]) for f in found]

    assert severity() == [("below-minimum", "info")]  # automatic caching nobody asked for
    assert severity(prompt_cache_key="agent-1") == [("below-minimum", "warning")]
    assert severity(prompt_cache_retention="24h") == [("below-minimum", "warning")]


def test_no_breakpoint_judges_every_request_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a request passed over (marked; too small; automatic caching; a model of no known
    # minimum) or found (OpenAI's explicit mode with no breakpoint) before an unmarked one does
    # not end the file
    unmarked = line(claude(1100, mark=None, turns=2), ANTHROPIC_URL)
    for first, found_first in (
        (line(claude(1100), ANTHROPIC_URL), []),
        (line(claude(900, mark=None), ANTHROPIC_URL), []),  # under the minimum
        (line(responses(1100), RESPONSES_URL), []),
        (line(claude(1100, model="claude-test"), ANTHROPIC_URL), []),
        (line(responses(1100, mode="explicit"), RESPONSES_URL), [0]),
    ):
        found = lint(tmp_path, capsys, first, unmarked)
        assert [f["request"] for f in found if f["rule"] == "no-breakpoint"] == [*found_first, 1]


def test_no_breakpoint_from_the_minimum_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at = lint(tmp_path, capsys, line(claude(1016, mark=None), ANTHROPIC_URL))  # 1,024 tokens
    assert [f["message"] for f in at] == [
        "~1,024 tokens (bytes / 4) sent with no cache_control marker and no top-level"
        " automatic cache_control: nothing is cached (minimum 1,024 for claude-sonnet-4-5)"
    ]
    assert lint(tmp_path, capsys, line(claude(1015, mark=None), ANTHROPIC_URL)) == []


def test_ttl_order_judges_every_request_of_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = claude(1100)  # the system block: 5m (the default), then a 1h one
    wrong["messages"] = [{"role": "user", "content": [text_block(8, {**MARK, "ttl": "1h"})]}]
    found = lint(tmp_path, capsys, line(claude(1100), ANTHROPIC_URL), line(wrong, ANTHROPIC_URL))
    assert [f["request"] for f in found if f["rule"] == "ttl-order"] == [1]


def test_ttl_order_a_project_says_is_ignored_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a project's own row for its model: TTLs out of order are ignored by its gateway
    monkeypatch.chdir(tmp_path)
    row = {
        "rule": "ttl",
        "providers": ["anthropic"],
        "models": ["claude-gateway*"],
        "values": ["1h", "5m"],
        "default": "5m",
        "order": "longer-first",
        "out_of_order": "ignored",
        "source": "our gateway's documentation",
        "checked_on": "2026-12-01",
    }
    rules = {"kind": "harness/rules", "format": 1, "rows": [row]}
    (tmp_path / "harness-rules.json").write_text(json.dumps(rules), encoding="utf-8")
    body = claude(1100, model="claude-gateway-1")
    body["messages"] = [{"role": "user", "content": [text_block(8, {**MARK, "ttl": "1h"})]}]
    found = [
        f for f in lint(tmp_path, capsys, line(body, ANTHROPIC_URL)) if f["rule"] == "ttl-order"
    ]
    assert found == [
        finding(
            "ttl-order",
            "warning",
            0,
            "a 1h breakpoint at /messages/0/content/0 comes after a 5m one at /system/0: longer"
            " TTLs must come first",
            "/messages/0/content/0",
        )
    ]


def test_volatile_in_prefix_quotes_three_values_of_a_place_at_most(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude(1100)
    stamps = [f"2026-12-04T08:0{n}:00Z" for n in range(4)]
    steps = " ".join(f"Step {n} at {s}." for n, s in enumerate(stamps))
    body["system"][0]["text"] = steps + " " + body["system"][0]["text"]
    found = lint(tmp_path, capsys, line(body, ANTHROPIC_URL))
    assert [f["rule"] for f in found] == ["volatile-in-prefix"] * 3
    assert [f["message"].split('"')[1] for f in found] == stamps[:3]


def test_volatile_in_prefix_quotes_80_characters_and_judges_every_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = "/tmp/tmpab12cd34/" + "run-42-" * 12 + "out"
    body = claude(1100)
    body["system"][0]["text"] = f"Work in {path} today. " + body["system"][0]["text"]
    found = lint(tmp_path, capsys, line(body, ANTHROPIC_URL), line(body, ANTHROPIC_URL))
    assert [(f["rule"], f["request"]) for f in found] == [
        ("volatile-in-prefix", 0),
        ("volatile-in-prefix", 1),
    ]
    assert found[0]["message"].startswith(f'looks like a temporary path: "{path[:80]}" at ')


def test_write_never_read_names_a_pre_warm_that_nothing_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Plan a trip. " + "x" * 400
    warm = conversation([question])
    warm["max_tokens"] = 0  # Anthropic's pre-warm: a request that only writes the cache
    unmarked = conversation([question, "Book it."], mark_last=False)
    found = lint(tmp_path, capsys, line(warm, ANTHROPIC_URL), line(unmarked, ANTHROPIC_URL))
    assert found == [
        finding(
            "write-never-read",
            "warning",
            0,
            "the pre-warm (max_tokens) writes ~1,210 tokens up to /messages/0/content/0, which is"
            " never read by a later request of the file: its write premium buys nothing",
            "/messages/0/content/0",
        )
    ]


def test_no_breakpoint_without_an_automatic_marker_names_the_marker_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bedrock's cachePoint models other than Claude and Nova: no automatic caching to name; the
    # shipped rules give them no minimum, so the project's own row does
    monkeypatch.chdir(tmp_path)
    row = {
        "rule": "minimum",
        "providers": ["bedrock"],
        "models": ["mistral.*"],
        "tokens": 1024,
        "source": "our own measurement",
        "checked_on": "2026-12-01",
    }
    rules = {"kind": "harness/rules", "format": 1, "rows": [row]}
    (tmp_path / "harness-rules.json").write_text(json.dumps(rules), encoding="utf-8")
    url = BEDROCK_URL.replace("anthropic.claude-sonnet-4-5-20250929-v1", "mistral.large-2407-v1")
    assert lint(tmp_path, capsys, line(converse(1100, points=0), url)) == [
        finding(
            "no-breakpoint",
            "warning",
            0,
            "~1,103 tokens (bytes / 4) sent with no cachePoint marker: nothing is cached"
            " (minimum 1,024 for mistral.large-2407-v1:0)",
        )
    ]
