"""What `harness lint` reads and says: cassettes, folders, bodies, sessions; JSON, exit codes,
`--fail-on`, the project's rules file, and bad input in one line (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.support.bodies import (
    ANTHROPIC_URL,
    RESPONSES_URL,
    claude,
    line,
    record_cassette,
    too_many,
)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_output_lists_findings_with_their_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps(too_many()), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(body), "--format", "json")
    assert code == 1
    report = json.loads(out)
    (finding,) = report["findings"]
    assert {"rule", "severity", "file", "request", "message"} <= set(finding)
    assert (finding["rule"], finding["severity"], finding["file"], finding["request"]) == (
        "too-many-breakpoints",
        "error",
        str(body),
        0,
    )
    assert (report["files"], report["requests"], report["errors"]) == (1, 1, 1)


def test_text_output_says_where_and_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps(claude(1100)), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(body))
    assert (code, out.strip()) == (0, "harness lint: no findings in 1 requests of 1 file(s)")
    body.write_text(json.dumps(too_many()), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(body))
    assert code == 1
    assert out.startswith(f"{body}: request 0: error too-many-breakpoints: 5 breakpoints")
    assert out.splitlines()[-1].startswith("harness lint: 1 finding(s) (1 error(s), 0 warning(s)")


def test_a_session_of_wrapped_and_bare_lines_counts_requests_not_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "proxy.jsonl"
    session.write_text(
        "\n".join(
            [
                line(claude(1100), ANTHROPIC_URL, time="2026-12-04T08:00:00Z", response={"ok": 1}),
                "",
                json.dumps(too_many()),  # a bare body: its provider is read from its shape
            ]
        ),
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "lint", str(session), "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["requests"] == 2
    assert [(f["rule"], f["request"]) for f in report["findings"]] == [("too-many-breakpoints", 1)]


def test_a_response_that_reports_cache_writes_is_the_providers_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rules say 4,095 tokens is under Opus 4.6's minimum; a response that reports a cache
    write says the provider cached: the rules do not contradict it."""
    body = claude(4095, model="claude-opus-4-6")
    written = {"usage": {"input_tokens": 5, "cache_creation_input_tokens": 4100}}
    session = tmp_path / "s.jsonl"
    session.write_text(line(body, ANTHROPIC_URL) + "\n", encoding="utf-8")
    assert json.loads(run(capsys, "lint", str(session), "--format", "json")[1])["findings"]
    session.write_text(line(body, ANTHROPIC_URL, response=written) + "\n", encoding="utf-8")
    assert json.loads(run(capsys, "lint", str(session), "--format", "json")[1])["findings"] == []


def test_cassettes_and_folders_of_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "fixtures" / "cassettes" / "tests" / "test_agent"
    good = record_cassette(folder / "test_ok.json", claude(1100), claude(1100, turns=2))
    bad = record_cassette(folder / "test_bad.json", too_many())
    code, out, _ = run(capsys, "lint", str(good), "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == []
    code, out, _ = run(capsys, "lint", str(tmp_path / "fixtures"), "--format", "json")
    report = json.loads(out)
    assert code == 1 and (report["files"], report["requests"]) == (2, 3)
    assert [(f["file"], f["rule"]) for f in report["findings"]] == [
        (str(bad), "too-many-breakpoints")
    ]


def test_without_a_path_it_reads_the_projects_fixtures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "lint")
    assert code == 2 and "fixtures" in err and len(err.strip().splitlines()) == 1
    record_cassette(tmp_path / "fixtures" / "cassettes" / "t.json", too_many())
    assert run(capsys, "lint")[0] == 1


def test_fail_on_makes_a_warning_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps(claude(1100, mark=None)), encoding="utf-8")  # no-breakpoint
    assert run(capsys, "lint", str(body))[0] == 0
    code, out, _ = run(capsys, "lint", str(body), "--fail-on", "below-minimum,no-breakpoint")
    assert code == 1 and "error no-breakpoint" in out
    assert run(capsys, "lint", str(body), "--fail-on", "all")[0] == 1
    code, _, err = run(capsys, "lint", str(body), "--fail-on", "no-such-rule")
    assert code == 2 and "unknown rule 'no-such-rule'" in err and "no-breakpoint" in err


def test_the_projects_rules_file_adds_rows_and_sets_what_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    body = tmp_path / "body.json"
    body.write_text(json.dumps(claude(1100, model="claude-test")), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(body), "--format", "json")
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["unknown-model"]
    rules = {
        "kind": "harness/rules",
        "format": 1,
        "fail_on": ["below-minimum"],
        "rows": [
            {
                "rule": "minimum",
                "providers": ["anthropic"],
                "models": ["claude-test*"],
                "tokens": 2048,
                "source": "our own measurement",
                "checked_on": "2026-12-01",
            }
        ],
    }
    (tmp_path / "harness-rules.json").write_text(json.dumps(rules), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(body), "--format", "json")
    (finding,) = json.loads(out)["findings"]
    assert code == 1 and (finding["rule"], finding["severity"]) == ("below-minimum", "error")
    assert "minimum 2,048 for claude-test" in finding["message"]
    rules["fail_on"] = ["below-minimun"]  # a typo is named with its file
    (tmp_path / "harness-rules.json").write_text(json.dumps(rules), encoding="utf-8")
    code, out, err = run(capsys, "lint", str(body))
    assert code == 2 and out == ""
    assert (
        f"{tmp_path / 'harness-rules.json'}: fail_on/severity: unknown rule 'below-minimun'" in err
    )


def test_a_rules_row_without_its_source_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.json"
    row = {"rule": "minimum", "providers": ["anthropic"], "tokens": 1, "checked_on": "2026-12-01"}
    rules.write_text(json.dumps({"kind": "harness/rules", "format": 1, "rows": [row]}))
    body = tmp_path / "body.json"
    body.write_text(json.dumps(claude(1100)), encoding="utf-8")
    code, _, err = run(capsys, "lint", str(body), "--rules", str(rules))
    assert code == 2 and str(rules) in err and "source" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("s.jsonl", '{"model": "x"\n', "s.jsonl:1: is not valid JSON"),
        ("s.jsonl", "[1, 2]\n", "s.jsonl:1: holds a JSON list, not an object"),
        ("s.jsonl", "\n\n", "holds no requests"),
        ("b.json", '{"hello": "world"}', "is not a request body any provider recognises"),
        ("b.json", "not json", "is not valid JSON"),
        ("r.json", '{"kind": "harness/requests", "format": 1}', "is a harness/requests file"),
    ],
    ids=["truncated-line", "not-an-object", "empty", "foreign-body", "not-json", "other-kind"],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    code, out, err = run(capsys, "lint", str(path))
    assert code == 2 and out == ""
    assert says in err and len(err.strip().splitlines()) == 1


def test_a_folder_without_cassettes_and_a_missing_path_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "lint", str(tmp_path))
    assert code == 2 and "holds no cassettes" in err
    code, _, err = run(capsys, "lint", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "does not exist" in err


def test_printed_findings_are_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-ant-api03-" + "A" * 90 + "AA"
    body = claude(1100)
    body["system"][0]["text"] = f"key {key} at 2026-12-04T08:00:00Z " + body["system"][0]["text"]
    path = tmp_path / "b.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path))
    assert code == 0 and "volatile-in-prefix" in out and key not in out


def test_responses_with_a_stored_conversation_are_linted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the stored conversation is part of the prompt but not of the body: its size is unknown,
    # so "nothing is cached: 3 tokens" would be a false alarm
    body = {"model": "gpt-5.6", "previous_response_id": "resp_1", "input": "and then?"}
    path = tmp_path / "s.jsonl"
    path.write_text(line(body, RESPONSES_URL) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == []
    del body["previous_response_id"]  # near miss: the whole prompt is sent, and it is small
    path.write_text(line(body, RESPONSES_URL) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert code == 0 and [f["rule"] for f in json.loads(out)["findings"]] == ["below-minimum"]


def test_a_gemini_request_on_an_explicit_cache_is_not_said_to_cache_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    body = {
        "cachedContent": "cachedContents/abc",
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    }
    path = tmp_path / "g.jsonl"
    path.write_text(line(body, url) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert code == 0 and json.loads(out)["findings"] == []
    del body["cachedContent"]
    path.write_text(line(body, url) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["below-minimum"]


def test_a_session_line_whose_body_is_json_text_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "proxy.jsonl"  # proxy logs keep the body as the text that was sent
    path.write_text(
        json.dumps({"url": ANTHROPIC_URL, "body": json.dumps(too_many())}) + "\n", encoding="utf-8"
    )
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert code == 1 and [f["rule"] for f in json.loads(out)["findings"]] == [
        "too-many-breakpoints"
    ]
    path.write_text(json.dumps({"url": ANTHROPIC_URL, "body": "{nope"}) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "lint", str(path))
    assert code == 2 and "proxy.jsonl:1: its body: is not valid JSON" in err


def test_session_lines_no_provider_recognises_are_never_a_silent_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ambiguous = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}  # Chat's too
    path = tmp_path / "s.jsonl"
    path.write_text(line(ambiguous) + "\n" + line(ambiguous) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "lint", str(path))
    assert code == 2 and out == "" and "holds no request body any provider recognises" in err
    assert '{"url": ..., "body": ...}' in err and len(err.strip().splitlines()) == 1
    path.write_text(line(too_many(), ANTHROPIC_URL) + "\n" + line(ambiguous) + "\n", "utf-8")
    code, out, _ = run(capsys, "lint", str(path))
    assert code == 1 and "(1 not judged: no provider recognises them)" in out
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert json.loads(out)["unjudged"] == 1
    path.write_text(line(ambiguous, ANTHROPIC_URL + "/count_tokens") + "\n", encoding="utf-8")
    code, out, err = run(capsys, "lint", str(path))
    assert code == 2 and "its URLs are none of the providers' message endpoints" in err
    path.write_text(line(ambiguous, ANTHROPIC_URL) + "\n", encoding="utf-8")  # its URL says
    code, out, _ = run(capsys, "lint", str(path), "--format", "json")
    assert code == 0 and json.loads(out)["unjudged"] == 0


def test_a_cassette_of_a_test_marked_moves_header_has_its_break_as_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"name": name, "input_schema": {"type": "object"}} for name in ("bash", "grep")]
    bodies = (claude(1100, tools=tools), claude(1100, turns=2, tools=tools[::-1]))
    folder = tmp_path / "fixtures" / "cassettes"
    marked = record_cassette(folder / "marked.json", *bodies, moves_header="tools reloaded")
    code, out, _ = run(capsys, "lint", str(marked), "--format", "json", "--fail-on", "all")
    (finding,) = json.loads(out)["findings"]
    assert code == 0 and (finding["rule"], finding["severity"]) == ("prefix-broken", "info")
    assert "expected: moves_header(reason='tools reloaded')" in finding["message"]
    unmarked = record_cassette(folder / "unmarked.json", *bodies)  # near miss: not marked
    code, out, _ = run(capsys, "lint", str(unmarked), "--format", "json")
    assert code == 1 and [f["severity"] for f in json.loads(out)["findings"]] == ["error"]
