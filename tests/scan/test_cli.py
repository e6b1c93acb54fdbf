"""`harness scan` as a user meets it: the JSON keys the issue names, exit codes, sessions and
their figures, bad input, keys, time windows, the loss gate, and the input left untouched."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.scan.traces import (
    FINDING_KEYS,
    SESSION_KEYS,
    START,
    TOTALS_KEYS,
    run,
    session_lines,
    write_lines,
)


def reorder_tools_from(turn_broken: int) -> Any:
    def edit(turn: int, body: dict[str, Any]) -> None:
        if turn >= turn_broken:
            body["tools"] = list(reversed(body["tools"]))

    return edit


def scan_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, *args, "--format", "json")
    assert err == "", err
    return code, json.loads(out)


def test_a_reordered_tool_list_is_found_where_and_what_it_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = session_lines("stable", deploy="v1") + session_lines(
        "racy", edit=reorder_tools_from(3), start=START + 100, deploy="v2"
    )
    path = write_lines(tmp_path / "proxy.jsonl", rows)
    code, report = scan_json(capsys, str(path), "--deploy-key", "headers.x-deploy")
    assert code == 1
    assert set(report) >= {"findings", "sessions", "introduced_by", "totals"}
    [finding] = report["findings"]
    assert set(finding) >= FINDING_KEYS
    assert finding["session"] == "racy" and finding["request"] == 3
    assert finding["verdict"] == "tools_changed" and finding["block"] == "tools"
    assert finding["evidence"] == "exact" and finding["severity"] == "error"
    assert finding["pointer"] == "/tools/0/name" and finding["byte"] > 0
    assert finding["tokens_lost"] > 0 and finding["usd_lost"] > 0
    assert finding["deploy"] == "v2"
    sessions = {s["session"]: s for s in report["sessions"]}
    assert all(set(s) >= SESSION_KEYS for s in sessions.values())
    assert sessions["stable"]["status"] == "stable" and sessions["racy"]["status"] == "broken"
    assert sessions["racy"]["requests"] == 4
    racy = sessions["racy"]
    assert racy["stable_hit_rate"] > racy["provider_hit_rate"]
    assert sessions["stable"]["stable_hit_rate"] == sessions["stable"]["provider_hit_rate"]
    assert report["introduced_by"] == {"tools_changed": "v2"}
    assert set(report["totals"]) >= TOTALS_KEYS
    assert report["totals"]["requests"] == 8 and report["totals"]["requests_not_judged"] == 0


def test_a_conversation_that_moves_its_breakpoint_forward_is_stable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the near miss: every turn moves cache_control to its newest block (bytes change at the old
    # marker's place), which is how a conversation keeps its cache
    path = write_lines(tmp_path / "ok.jsonl", session_lines("s", turns=6))
    code, report = scan_json(capsys, str(path))
    assert code == 0
    assert report["findings"] == []
    assert report["sessions"][0]["status"] == "stable"


def test_requests_are_numbered_by_time_not_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = session_lines("s", edit=reorder_tools_from(4))
    path = write_lines(tmp_path / "shuffled.jsonl", list(reversed(rows)))
    code, report = scan_json(capsys, str(path))
    assert code == 1
    assert [(f["request"], f["verdict"]) for f in report["findings"]] == [(4, "tools_changed")]


def test_a_session_key_overrides_the_formats_own_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = session_lines(None, edit=reorder_tools_from(2))
    for row in rows:
        row["headers"]["x-tenant-session"] = "tenant-7"
    path = write_lines(tmp_path / "keyed.jsonl", rows)
    code, report = scan_json(capsys, str(path), "--session-key", "headers.x-tenant-session")
    assert code == 1
    assert [s["session"] for s in report["sessions"]] == ["tenant-7"]
    assert report["totals"]["sessions_grouped"] == 0


def test_requests_without_a_session_id_are_grouped_and_the_output_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "anon.jsonl", session_lines(None, edit=reorder_tools_from(3)))
    code, report = scan_json(capsys, str(path))
    # grouped by the conversation's opening message, not by the tools: the reorder stays in the
    # same group and is found
    assert code == 1
    assert len(report["sessions"]) == 1 and report["sessions"][0]["session"].startswith("~")
    assert report["findings"][0]["verdict"] == "tools_changed"
    assert any("no session id" in note for note in report["notes"])
    code, out, _ = run(capsys, str(path))
    assert "no session id" in out


def test_a_malformed_line_is_counted_named_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "log.jsonl", session_lines("s"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"url": "https://api.anthropic.com/v1/messages", "body": \n')
        handle.write('{"body": 12}\n')
    code, report = scan_json(capsys, str(path))
    assert code == 0
    assert report["totals"]["malformed"] == 2
    assert [m.split(": ")[0] for m in report["malformed"]] == [f"{path}:5", f"{path}:6"]
    code, out, _ = run(capsys, str(path))
    assert f"{path}:5" in out and "malformed" in out


@pytest.mark.parametrize(
    "content",
    ["", "\n\n", '{"hello": "world"}\n', "not json at all\n"],
    ids=["empty", "blank", "foreign", "garbage"],
)
def test_an_input_with_no_request_is_bad_input_never_a_green(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(content, encoding="utf-8")
    code, out, err = run(capsys, str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert str(path) in err


def test_a_file_of_no_known_format_named_by_the_user_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "package.json"
    path.write_text('{"name": "web", "version": "1.0.0"}', encoding="utf-8")
    good = write_lines(tmp_path / "good.jsonl", session_lines("s"))
    code, _, err = run(capsys, str(path), str(good))
    assert code == 2
    assert "no trace format" in err and "--from" in err and len(err.strip().splitlines()) == 1


def test_a_path_that_names_nothing_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, str(tmp_path / "missing.jsonl"))
    assert code == 2 and "does not exist" in err
    code, _, err = run(capsys, str(tmp_path / "*.jsonl"))
    assert code == 2 and "no file matches" in err


def test_folders_and_globs_are_expanded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    write_lines(tmp_path / "a" / "one.jsonl", session_lines("one"))
    write_lines(tmp_path / "a" / "two.jsonl", session_lines("two", edit=reorder_tools_from(2)))
    (tmp_path / "a" / "notes.txt").write_text("not a trace")
    code, report = scan_json(capsys, str(tmp_path / "a"))
    assert code == 1 and report["totals"]["sessions"] == 2
    code, report = scan_json(capsys, str(tmp_path / "a" / "one.*"))
    assert code == 0 and report["totals"]["sessions"] == 1


def test_since_and_until_keep_only_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = session_lines("s", edit=reorder_tools_from(4))  # times START+10 .. START+40
    path = write_lines(tmp_path / "w.jsonl", rows)
    code, report = scan_json(capsys, str(path), "--until", str(START + 30))
    assert code == 0 and report["totals"]["requests"] == 3
    assert report["totals"]["outside_window"] == 1
    code, report = scan_json(capsys, str(path), "--since", "2026-01-01T00:00:15Z")
    assert code == 1 and report["totals"]["requests"] == 3
    code, _, err = run(capsys, str(path), "--since", "2027-01-01")
    assert code == 2 and "no requests found" in err and "outside" in err
    code, _, err = run(capsys, str(path), "--since", "yesterday")
    assert code == 2 and "ISO 8601" in err


def test_fail_on_loss_gates_on_dollars(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "l.jsonl", session_lines("s", edit=reorder_tools_from(2)))
    code, report = scan_json(capsys, str(path))
    loss = report["totals"]["usd_lost"]
    assert code == 1 and loss > 0
    assert run(capsys, str(path), "--fail-on-loss", str(loss * 2))[0] == 0
    assert run(capsys, str(path), "--fail-on-loss", str(loss / 2))[0] == 1
    code, _, err = run(capsys, str(path), "--fail-on-loss", "-1")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_the_input_is_never_modified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "l.jsonl", session_lines("s", edit=reorder_tools_from(2)))
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    listing = sorted(p.name for p in tmp_path.iterdir())
    run(capsys, str(path), "--format", "json")
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing


def test_workers_without_dask_engine_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "l.jsonl", session_lines("s"))
    code, _, err = run(capsys, str(path), "--workers", "2")
    assert code == 2 and "--engine dask" in err
    code, _, err = run(capsys, str(path), "--engine", "dask", "--workers", "1", "--scheduler", "x")
    assert code == 2 and "not allowed with" in err


def test_a_truncated_gzip_keeps_what_it_holds_and_names_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gzip

    data = "".join(json.dumps(row) + "\n" for row in session_lines("s", turns=6)).encode()
    packed = gzip.compress(data)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    code, report = scan_json(capsys, str(path))
    assert code == 0 and 0 < report["totals"]["requests"] < 6
    assert report["totals"]["malformed"] == 1
    assert "cannot be decompressed" in report["malformed"][0]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("quiet", "ci", "engine", "shown"),
    [
        (False, None, "duckdb", True),
        (True, None, "duckdb", False),
        (False, "true", "duckdb", False),
        pytest.param(False, None, "dask", True, marks=pytest.mark.slow),
        pytest.param(True, None, "dask", False, marks=pytest.mark.slow),
    ],
)
def test_the_progress_line_only_on_a_terminal_outside_ci(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    quiet: bool,
    ci: str | None,
    engine: str,
    shown: bool,
) -> None:
    from harness.cli import main

    path = write_lines(tmp_path / "p.jsonl", session_lines("s"))
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    for name in ("CI", "GITHUB_ACTIONS", "CONTINUOUS_INTEGRATION"):
        monkeypatch.delenv(name, raising=False)
    if ci:
        monkeypatch.setenv("CI", ci)
    main(["scan", str(path), "--engine", engine, *(["--quiet"] if quiet else [])])
    assert ("requests read" in terminal.getvalue() or "judging" in terminal.getvalue()) == shown
