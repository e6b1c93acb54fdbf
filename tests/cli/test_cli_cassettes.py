"""The CLI reads cassettes: `harness check`, `harness diff` and `harness show` on an SDK project.

Cassettes are recorded here the way the plugin records them (a capture session over the real
`anthropic` SDK and a stand-in API), into a project folder laid out like the examples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness._shared._files import SecretWarning
from harness.capture import CaptureSession
from harness.cli import main
from tests.support.cassettes import whole_document
from tests.support.stand_ins import anthropic_message

TOOLS = ["get_weather", "get_forecast", "geocode"]
CACHE = {"type": "ephemeral"}


def upstream() -> httpx2.MockTransport:
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=anthropic_message()))


def converse(session: CaptureSession, late_tool: bool = False) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test", http_client=session.httpx2_client())
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Paris tomorrow?"}]
    for turn in range(2):
        names = TOOLS + (["late_tool"] if late_tool and turn else [])
        client.messages.create(
            model="claude-test",
            max_tokens=64,
            system=[{"type": "text", "text": "You plan trips.", "cache_control": CACHE}],
            tools=[{"name": n, "input_schema": {"type": "object"}} for n in names],  # type: ignore[misc]
            messages=messages,  # type: ignore[arg-type]
        )
        messages = [
            *messages,
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "And then?"},
        ]


def record(path: Path, *, late_tool: bool = False, moves_header: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    session = CaptureSession.for_test(path, "record", writes_allowed=True, upstream=upstream())
    session.moves_header = moves_header
    converse(session, late_tool)
    path.write_bytes(session.finish().files[0][1])
    return path


def project(tmp_path: Path) -> Path:
    cassettes = tmp_path / "fixtures" / "cassettes" / "tests" / "test_agent"
    record(cassettes / "test_turn.json")
    record(cassettes / "test_other_turn.json")
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_check_on_an_sdk_project_checks_every_cassette_and_counts_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path)
    code, out, _ = cli(capsys, "check", str(root))
    assert code == 0, out
    assert "test_turn.json: ok (2 requests)" in out
    assert "prefix chain: anthropic 4 (judged 2)" in out
    assert out.rstrip().endswith("harness check: 2 cassettes, no finding")


def test_check_fails_on_a_cassette_whose_prefix_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path)
    record(root / "fixtures" / "cassettes" / "test_late.json", late_tool=True)
    code, out, _ = cli(capsys, "check", str(root))
    assert code == 1
    assert "test_late.json: 1 finding(s) in 2 requests" in out
    assert "tools_changed: request 2 (POST api.anthropic.com/v1/messages) does not extend" in out
    assert 'tool added: "late_tool"' in out
    assert "harness check: 1 of 3 cassettes with findings" in out


def test_a_cassette_marked_moves_header_is_listed_not_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record(tmp_path / "moved.json", late_tool=True, moves_header="a tool arrives late")
    record(tmp_path / "stale.json", moves_header="nothing moves any more")
    code, out, _ = cli(capsys, "check", str(tmp_path))
    assert code == 0, out
    assert "moved.json: ok (1 expected header move(s): moves_header)" in out
    assert "stale.json: ok (2 requests; moves_header is stale: nothing moved)" in out


def test_check_fails_on_unredacted_headers_and_key_shaped_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(tmp_path / "leaky.json")
    data = whole_document(path)
    headers = data["exchanges"][0]["request"]["headers"]
    data["exchanges"][0]["request"]["headers"] = [
        [name, "plain-value-123456" if name == "authorization" else value]
        for name, value in headers
    ]
    data["exchanges"][1]["request"]["json"]["messages"][0]["content"] = "sk-ant-api03-" + "x" * 40
    path.write_text(json.dumps(data, indent=2))
    with pytest.warns(SecretWarning):  # reading a file that holds one warns, as everywhere
        code, out, _ = cli(capsys, "check", str(path))
    assert code == 1
    assert "exchange 1: request header 'authorization' is not redacted" in out
    assert "holds an Anthropic API key (sk-ant-...) at line" in out
    assert "plain-value-123456" not in out and "x" * 40 not in out


def test_check_under_github_actions_writes_the_summary_and_annotations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    record(tmp_path / "late.json", late_tool=True)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = cli(capsys, "check", str(tmp_path))
    assert code == 1
    assert "::error file=" in out and "title=header drift::tools_changed" in out
    written = summary.read_text()
    assert "| cassette | result |" in written and "late.json" in written
    assert "tools_changed" in written


def test_a_corrupt_cassette_and_an_empty_folder_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "harness/capture", "format": 1, "exchanges": [')
    code, _, err = cli(capsys, "check", str(bad))
    assert code == 2 and "bad.json" in err and len(err.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli(capsys, "check", str(empty))
    assert code == 2 and "holds no scenario folders and no cassettes" in err


def body(tools: list[str]) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "system": "You plan trips.",
        "tools": [{"name": n, "input_schema": {"type": "object"}} for n in tools],
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_diff_on_two_request_bodies_gives_the_provider_verdict_and_the_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(body(TOOLS)))
    b.write_text(json.dumps(body(TOOLS[::-1])))
    code, out, _ = cli(capsys, "diff", str(a), str(b))
    assert code == 1
    assert out.startswith('tools_changed: tools reordered; first out of place: "geocode"')
    assert "cost:" in out and "lost" in out

    c = tmp_path / "c.json"
    c.write_text(json.dumps({**body(TOOLS), "tool_choice": {"type": "any"}}))
    code, out, _ = cli(capsys, "diff", str(a), str(c))
    assert out.startswith("tool_choice_changed: settings changed")


def test_diff_on_two_cassettes_finds_the_first_request_that_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = record(tmp_path / "one.json")
    two = record(tmp_path / "two.json", late_tool=True)
    code, out, _ = cli(capsys, "diff", str(one), str(two), "--format", "json")
    report = json.loads(out)
    assert code == 1
    assert (report["verdict"], report["tools_added"]) == ("tools_changed", ["late_tool"])
    assert report["label_a"].endswith("one.json exchange 2")
    assert cli(capsys, "diff", str(one), str(one))[0] == 0


def test_show_summarises_a_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = record(tmp_path / "turn.json")
    code, out, _ = cli(capsys, "show", str(path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{path}: cassette, 2 exchanges, 0 proofs"
    assert lines[1].startswith("  1. POST api.anthropic.com/v1/messages -> 200: anthropic;")
    assert "claude-test" in lines[1] and "tools get_weather, get_forecast, geocode" in lines[1]
    assert "3 messages" in lines[2] and "prefix: breakpoint" in lines[2]
    assert lines[-1] == "  prefix chain: anthropic 2 (judged 1)"


def test_show_prints_whole_requests_as_they_were_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(tmp_path / "turn.json")
    stored = json.loads(path.read_text())["exchanges"][1]["request"]
    assert stored["extends"] == 1 and "json" not in stored  # the file holds what it adds
    code, out, _ = cli(capsys, "show", str(path), "--requests")
    assert code == 0
    assert f"{path}: the requests as they were sent" in out
    second = out[out.index("exchange 2: POST https://api.anthropic.com/v1/messages") :]
    sent = whole_document(path)["exchanges"][1]["request"]["json"]
    body = second[second.index("{") : second.rindex("}") + 1]
    assert json.loads(body) == sent  # the whole body, not the edits
    assert '"content": "And then?"' in body and '"name": "geocode"' in body
    assert "authorization: [redacted]" in second


def test_show_prints_one_request_or_names_the_ones_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(tmp_path / "turn.json")
    code, out, _ = cli(capsys, "show", str(path), "--request", "2")
    assert code == 0 and "exchange 1:" not in out and "exchange 2: POST" in out
    assert "cassette, 2 exchanges" not in out  # the summary is not asked for
    code, _, err = cli(capsys, "show", str(path), "--request", "3")
    assert code == 2
    assert "--request 3: the cassette holds exchanges 1 to 2" in err


def test_refresh_rewrites_a_format_2_cassette_as_format_3_with_the_same_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = record(tmp_path / "fixtures" / "cassettes" / "test_turn.json")
    document = whole_document(path)
    document["format"] = 2
    path.write_text(json.dumps(document, indent=2) + "\n")
    before = whole_document(path)["exchanges"]
    assert '"json"' in path.read_text() and '"extends"' not in path.read_text()
    code, out, _ = cli(capsys, "refresh")
    assert code == 0
    assert f"{Path('fixtures/cassettes/test_turn.json')}: rewrote format 2 as format 3" in out
    assert json.loads(path.read_text())["format"] == 3
    assert '"extends": 1' in path.read_text()
    assert whole_document(path)["exchanges"] == before
    assert cli(capsys, "refresh")[1].strip().endswith("test_turn.json: unchanged")
    assert cli(capsys, "check")[0] == 0


def test_refresh_writes_nothing_under_ci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = record(tmp_path / "fixtures" / "cassettes" / "test_turn.json")
    document = whole_document(path)
    document["format"] = 2
    path.write_text(json.dumps(document, indent=2) + "\n")
    before = path.read_bytes()
    monkeypatch.setenv("CI", "true")
    code, _, err = cli(capsys, "refresh")
    assert code == 2 and "refusing to write under CI" in err
    assert path.read_bytes() == before
