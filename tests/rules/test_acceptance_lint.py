"""`harness lint` as a user meets it, bodies written from the providers' documents (SPEC part D):
the issue's wording, each rule on its documented case and silent on the near miss, the project's
rows, sessions with `{url, body, time, response}` lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import RULE_NAMES

RESPONSES_URL = "https://api.openai.com/v1/responses"
CHAT_URL = "https://api.openai.com/v1/chat/completions"
BEDROCK_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
    "anthropic.claude-sonnet-4-5-20250929-v1:0/converse"
)
VERTEX_URL = (
    "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/"
    "anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
)
MARK = {"type": "ephemeral"}


def words(tokens: int) -> str:
    """About `tokens` tokens at bytes / 4."""
    return "word " * (tokens * 4 // 5)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lint(
    capsys: pytest.CaptureFixture[str], path: Path, value: Any, *args: str
) -> tuple[int, list[dict[str, Any]]]:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(v) + "\n" for v in value), encoding="utf-8")
    else:
        path.write_text(json.dumps(value), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path), "--format", "json", *args)
    return code, json.loads(out)["findings"]


def rules(findings: list[dict[str, Any]]) -> list[str]:
    return [finding["rule"] for finding in findings]


def claude(model: str, tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 100,
        "system": [{"type": "text", "text": words(tokens), "cache_control": MARK}],
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def test_a_116_token_prefix_on_opus_4_6_says_the_issues_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, findings = lint(capsys, tmp_path / "b.json", claude("claude-opus-4-6", 116))
    assert code == 0
    (finding,) = findings
    assert (finding["rule"], finding["severity"], finding["request"]) == (
        "below-minimum",
        "warning",
        0,
    )
    assert re.match(
        r"nothing is cached: [\d,]+ tokens, minimum 4,096 for claude-opus-4-6", finding["message"]
    ), finding["message"]


def test_the_same_prefix_on_a_model_with_a_lower_minimum_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, findings = lint(capsys, tmp_path / "b.json", claude("claude-opus-5", 700))
    assert findings == []
    _, findings = lint(capsys, tmp_path / "b.json", claude("claude-opus-4-6", 700))
    assert rules(findings) == ["below-minimum"]


def marked_turns(count: int, automatic: bool = False) -> dict[str, Any]:
    """A Messages body with `count` cache_control blocks (system, then user turns)."""
    messages: list[dict[str, Any]] = []
    for turn in range(count - 1):
        block = {"type": "text", "text": f"q{turn} " + words(50), "cache_control": MARK}
        messages += [{"role": "user", "content": [block]}, {"role": "assistant", "content": "a"}]
    messages.append({"role": "user", "content": "last"})
    body = claude("claude-sonnet-4-5", 2000)
    body["messages"] = messages
    if automatic:
        body["cache_control"] = MARK
    return body


@pytest.mark.parametrize(
    ("count", "automatic", "fires"),
    [(4, False, False), (5, False, True), (3, True, False), (4, True, True)],
)
def test_anthropic_breakpoints_the_automatic_one_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int, automatic: bool, fires: bool
) -> None:
    code, findings = lint(capsys, tmp_path / "b.json", marked_turns(count, automatic))
    assert ("too-many-breakpoints" in rules(findings)) is fires
    assert code == (1 if fires else 0)
    if fires:
        (finding,) = (f for f in findings if f["rule"] == "too-many-breakpoints")
        assert finding["severity"] == "error"


def explicit_responses(count: int, mode: str = "explicit") -> dict[str, Any]:
    mark = {"mode": "explicit"}
    items: list[dict[str, Any]] = []
    for turn in range(count):
        text = {
            "type": "input_text",
            "text": f"q{turn} " + words(300),
            "prompt_cache_breakpoint": mark,
        }
        items += [
            {"role": "user", "content": [text]},
            {"role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
        ]
    items.append({"role": "user", "content": [{"type": "input_text", "text": "last"}]})
    return {
        "model": "gpt-5.6",
        "instructions": words(1500),
        "input": items,
        "prompt_cache_options": {"mode": mode},
    }


def test_openai_explicit_mode_five_breakpoints_warn_four_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.json"
    code, findings = lint(capsys, path, {"url": RESPONSES_URL, "body": explicit_responses(5)})
    assert code == 0  # the API takes it: only the latest are written
    (finding,) = findings
    assert (finding["rule"], finding["severity"]) == ("too-many-breakpoints", "warning")
    _, findings = lint(capsys, path, {"url": RESPONSES_URL, "body": explicit_responses(4)})
    assert findings == []


def test_openai_explicit_mode_without_a_breakpoint_is_no_breakpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = explicit_responses(0)
    _, findings = lint(capsys, tmp_path / "b.json", {"url": RESPONSES_URL, "body": body})
    assert rules(findings) == ["no-breakpoint"]
    body["prompt_cache_options"] = {"mode": "implicit"}
    _, findings = lint(capsys, tmp_path / "b.json", {"url": RESPONSES_URL, "body": body})
    assert findings == []


def test_chat_completions_gpt_5_6_breakpoints_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = {"mode": "explicit"}
    messages: list[dict[str, Any]] = [{"role": "system", "content": words(1500)}]
    for turn in range(5):
        text = {"type": "text", "text": f"q{turn} " + words(200), "prompt_cache_breakpoint": mark}
        messages += [{"role": "user", "content": [text]}, {"role": "assistant", "content": "a"}]
    messages.append({"role": "user", "content": "last"})
    body = {"model": "gpt-5.6", "messages": messages, "prompt_cache_options": {"mode": "explicit"}}
    _, findings = lint(capsys, tmp_path / "b.json", {"url": CHAT_URL, "body": body})
    assert rules(findings) == ["too-many-breakpoints"]


def bedrock(points: int) -> dict[str, Any]:
    point = {"cachePoint": {"type": "default"}}
    messages: list[dict[str, Any]] = []
    for turn in range(points - 1):
        messages += [
            {"role": "user", "content": [{"text": f"q{turn} " + words(100)}, point]},
            {"role": "assistant", "content": [{"text": "a"}]},
        ]
    messages.append({"role": "user", "content": [{"text": "last"}]})
    return {"system": [{"text": words(2000)}, point], "messages": messages}


@pytest.mark.parametrize(("points", "fires"), [(4, False), (5, True)])
def test_bedrock_cache_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], points: int, fires: bool
) -> None:
    code, findings = lint(
        capsys, tmp_path / "b.json", {"url": BEDROCK_URL, "body": bedrock(points)}
    )
    assert rules(findings) == (["too-many-breakpoints"] if fires else [])
    assert code == (1 if fires else 0)


def test_a_large_claude_prefix_on_bedrock_with_no_cache_point_is_cached_implicitly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # AWS: "Anthropic models that support prompt caching on Amazon Bedrock support both Implicit
    # Prompt Caching and Explicit Prompt Caching": no cache point is no finding there
    body = {
        "system": [{"text": words(3000)}],
        "messages": [{"role": "user", "content": [{"text": "q"}]}],
    }
    _, findings = lint(capsys, tmp_path / "b.json", {"url": BEDROCK_URL, "body": body})
    assert rules(findings) == []


def test_a_large_anthropic_prefix_with_automatic_caching_is_not_no_breakpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = claude("claude-sonnet-4-5", 3000)
    del body["system"][0]["cache_control"]
    _, findings = lint(capsys, tmp_path / "b.json", body)
    assert rules(findings) == ["no-breakpoint"]
    body["cache_control"] = MARK
    _, findings = lint(capsys, tmp_path / "b.json", body)
    assert findings == []


@pytest.mark.parametrize(("first", "second", "fires"), [("5m", "1h", True), ("1h", "5m", False)])
def test_ttl_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str, fires: bool
) -> None:
    body = claude("claude-sonnet-4-5", 2000)
    body["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": first}
    body["messages"] = [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": words(300),
                    "cache_control": {"type": "ephemeral", "ttl": second},
                }
            ],
        }
    ]
    code, findings = lint(capsys, tmp_path / "b.json", body)
    assert rules(findings) == (["ttl-order"] if fires else [])
    assert code == (1 if fires else 0)


def test_ttl_order_on_bedrock_cache_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {
        "system": [{"text": words(2000)}, {"cachePoint": {"type": "default", "ttl": "5m"}}],
        "messages": [
            {
                "role": "user",
                "content": [{"text": words(300)}, {"cachePoint": {"type": "default", "ttl": "1h"}}],
            }
        ],
    }
    _, findings = lint(capsys, tmp_path / "b.json", {"url": BEDROCK_URL, "body": body})
    assert rules(findings) == ["ttl-order"]


@pytest.mark.parametrize(
    "volatile",
    [
        "Today is 2026-12-04T09:13:55Z.",
        "Session 3f2b8c1e-9a4d-4c2b-8f1e-2d3c4b5a6f70.",
        "Work in /tmp/tmpa8x3k2qz/ for scratch.",
        "Trace id 9f86d081884c7d659a2feaa0c55ad015.",
    ],
)
def test_volatile_values_in_the_system_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], volatile: str
) -> None:
    body = claude("claude-sonnet-4-5", 2000)
    body["system"][0]["text"] = volatile + " " + body["system"][0]["text"]
    _, findings = lint(capsys, tmp_path / "b.json", body)
    assert rules(findings) == ["volatile-in-prefix"]
    # the same value in the newest message is where it belongs
    body = claude("claude-sonnet-4-5", 2000)
    body["messages"] = [{"role": "user", "content": volatile}]
    _, findings = lint(capsys, tmp_path / "b.json", body)
    assert findings == []


def test_vertex_key_order_on_the_raw_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    system = [{"type": "text", "text": words(2000), "cache_control": MARK}]
    messages = [{"role": "user", "content": "hi"}]
    late = {"anthropic_version": "vertex-2023-10-16", "messages": messages, "system": system}
    early = {"anthropic_version": "vertex-2023-10-16", "system": system, "messages": messages}
    for body in (late, early):
        body["max_tokens"] = 10
    _, findings = lint(capsys, tmp_path / "b.json", {"url": VERTEX_URL, "body": late})
    assert rules(findings) == ["vertex-key-order"]
    _, findings = lint(capsys, tmp_path / "b.json", {"url": VERTEX_URL, "body": early})
    assert findings == []
    # the same late order on the Claude API is not a finding
    claude_api = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages}
    claude_api["system"] = system
    _, findings = lint(capsys, tmp_path / "b.json", claude_api)
    assert "vertex-key-order" not in rules(findings)


def conversation(turns: int, move_marker: bool = True) -> list[dict[str, Any]]:
    """Turns of one Messages conversation, the marker on the newest user block (or, with
    `move_marker` False, on a block that changes every turn: written, never read)."""
    bodies = []
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        if move_marker:
            for message in messages:
                for block in message["content"] if isinstance(message["content"], list) else []:
                    block.pop("cache_control", None)
        messages.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": f"q{turn}", "cache_control": MARK}],
            }
        )
        body = claude("claude-sonnet-4-5", 2000)
        del body["system"][0]["cache_control"]
        if not move_marker:  # a clock in the system prompt, marked: every turn writes anew
            body["system"][0]["cache_control"] = MARK
            body["system"][0]["text"] = f"turn {turn} at 09:0{turn}:17 " + body["system"][0]["text"]
            body["messages"] = [{"role": "user", "content": f"q{turn}"}]
        else:
            body["messages"] = json.loads(json.dumps(messages))
        bodies.append(body)
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{turn}"}]})
    return bodies


def test_a_session_whose_marker_moves_forward_is_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, findings = lint(capsys, tmp_path / "s.jsonl", conversation(4))
    assert (code, findings) == (0, [])


def test_wrapped_session_lines_with_time_and_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        {
            "url": "https://api.anthropic.com/v1/messages",
            "body": body,
            "time": {"start": 10 * number, "end": 10 * number + 2},
            "response": {"type": "message", "usage": {"input_tokens": 5, "output_tokens": 3}},
        }
        for number, body in enumerate(conversation(3))
    ]
    code, findings = lint(capsys, tmp_path / "s.jsonl", lines)
    assert code == 0
    assert "prefix-broken" not in rules(findings)


def test_an_unknown_model_in_a_session_is_one_note_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [claude("claude-nonexistent-9", 100) for _ in range(3)]
    code, findings = lint(capsys, tmp_path / "s.jsonl", bodies)
    assert code == 0
    assert rules(findings) == ["unknown-model"]
    assert findings[0]["severity"] == "info"


def test_fail_on_and_the_projects_rules_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b.json"
    code, _ = lint(capsys, path, claude("claude-opus-4-6", 116))
    assert code == 0
    code, _ = lint(capsys, path, claude("claude-opus-4-6", 116), "--fail-on", "below-minimum")
    assert code == 1
    code, out, err = run(capsys, "lint", str(path), "--fail-on", "below-minimun")
    assert code == 2 and out == "" and "below-minimun" in err and len(err.splitlines()) == 1
    monkeypatch.chdir(tmp_path)
    (tmp_path / "harness-rules.json").write_text(
        json.dumps(
            {"kind": "harness/rules", "format": 1, "fail_on": ["below-minimum"], "rows": []}
        ),
        encoding="utf-8",
    )
    code, _ = lint(capsys, path, claude("claude-opus-4-6", 116))
    assert code == 1


def test_a_projects_row_changes_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b.json"
    _, findings = lint(capsys, path, claude("claude-opus-4-6", 2000))
    assert rules(findings) == ["below-minimum"]
    rules_file = tmp_path / "negotiated.json"
    row = {
        "rule": "minimum",
        "providers": ["anthropic"],
        "models": ["claude-opus-4-6*"],
        "tokens": 1024,
        "source": "our measurement",
        "checked_on": "2026-12-01",
    }
    rules_file.write_text(
        json.dumps({"kind": "harness/rules", "format": 1, "rows": [row]}), encoding="utf-8"
    )
    _, findings = lint(capsys, path, claude("claude-opus-4-6", 2000), "--rules", str(rules_file))
    assert findings == []
    code, out, _ = run(capsys, "rules", "--format", "json", "--rules", str(rules_file))
    assert code == 0
    first = json.loads(out)["pack"][0]
    assert first["source"] == "our measurement" and first["checked_on"] == "2026-12-01"


def test_harness_rules_json_every_row_sourced_and_dated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert code == 0
    printed = json.loads(out)
    rows = printed["pack"]
    assert rows and all(row["source"] and row["checked_on"] for row in rows)
    named = {rule["name"] for rule in printed["rules"]}
    assert set(RULE_NAMES) <= named


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not valid JSON"),
        ('{"kind": "harness/rules", "format": 1, "rows": [{"rule": "minimum"}]}', ""),
    ],
)
def test_a_broken_rules_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    body = tmp_path / "b.json"
    body.write_text(json.dumps(claude("claude-opus-4-6", 116)), encoding="utf-8")
    broken = tmp_path / "mine.json"
    broken.write_text(content, encoding="utf-8")
    code, out, err = run(capsys, "lint", str(body), "--rules", str(broken))
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "mine.json" in line and says in line


def test_bad_paths_and_broken_bodies_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": "claude-sonnet-4-5",', encoding="utf-8")
    broken_session = tmp_path / "broken.jsonl"
    broken_session.write_text('{"model": "claude-sonnet-4-5"}\n{oops\n', encoding="utf-8")
    for command in ("lint", "cost"):
        for path in (tmp_path / "missing.json", broken, broken_session):
            code, out, err = run(capsys, command, str(path))
            assert (code, out) == (2, ""), (command, path)
            (line,) = err.strip().splitlines()
            assert path.name in line and "Traceback" not in err


def test_files_with_a_byte_order_mark_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Some exporters (PowerShell's Out-File, Windows tools) start UTF-8 with a BOM."""
    body = tmp_path / "b.json"
    body.write_text(json.dumps(claude("claude-opus-4-6", 116)), encoding="utf-8-sig")
    lines = tmp_path / "s.jsonl"
    lines.write_text(json.dumps(claude("claude-opus-4-6", 116)) + "\n", encoding="utf-8-sig")
    for path in (body, lines):
        code, out, _ = run(capsys, "lint", str(path), "--format", "json")
        assert code == 0
        assert rules(json.loads(out)["findings"]) == ["below-minimum"]
    code, out, _ = run(capsys, "diff", str(body), str(body))
    assert code == 0 and out.startswith("identical")


def test_a_folder_of_sessions_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    (logs / "day2").mkdir(parents=True)
    small = json.dumps(
        {"url": "https://api.anthropic.com/v1/messages", "body": claude("claude-opus-4-6", 116)}
    )
    (logs / "a.jsonl").write_text(small + "\n", encoding="utf-8")
    (logs / "day2" / "b.jsonl").write_text(small + "\n" + small + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(logs), "--format", "json")
    assert code == 0
    printed = json.loads(out)
    assert (printed["files"], printed["requests"]) == (2, 3)
    assert {f["file"] for f in printed["findings"]} == {
        str(logs / "a.jsonl"),
        str(logs / "day2" / "b.jsonl"),
    }
    code, out, _ = run(capsys, "cost", str(logs), "--format", "json")
    assert code == 0 and len(json.loads(out)["sessions"]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(capsys, "lint", str(empty))
    assert code == 2 and "empty" in err
