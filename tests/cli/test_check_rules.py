"""`harness check` and `harness show` under the cache rules: the rules on every captured request.

`check` lists the findings after the cassettes, fails (exit 1) on an error or a rule `--fail-on`
names, and passes on warnings; the gate's breaks of uncertain effect are warnings there too.
`show` says per request whether and what it caches.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.support.bodies import RESPONSES_URL, claude, record_cassette, responses, too_many


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def cassettes(tmp_path: Path) -> Path:
    return tmp_path / "fixtures" / "cassettes" / "tests" / "test_agent"


def test_check_fails_on_a_rule_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record_cassette(cassettes(tmp_path) / "test_ok.json", claude(1100), claude(1100, turns=2))
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"))
    assert code == 0 and out.rstrip().endswith("harness check: 1 cassettes, no finding")
    bad = record_cassette(cassettes(tmp_path) / "test_bad.json", too_many())
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"))
    assert code == 1
    assert "cache rules (1 finding(s)):" in out
    assert f"{bad}: request 0: error too-many-breakpoints: 5 breakpoints, at most 4" in out
    assert out.rstrip().endswith(
        "2 cassettes, no prefix break or redaction problem;"
        " cache rules: 1 finding(s), 1 error(s) and 0 warning(s)"
    )
    assert "no finding;" not in out  # issue 34: never "no finding" beside rule findings


def test_check_passes_on_a_warning_unless_it_fails_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record_cassette(cassettes(tmp_path) / "test_small.json", claude(500, model="claude-opus-4-6"))
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"))
    assert code == 0 and "warning below-minimum: nothing is cached: 500 tokens" in out
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"), "--fail-on", "below-minimum")
    assert code == 1 and "error below-minimum" in out
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"), "--format", "json")
    assert code == 0 and '{"finding":{"rule":"below-minimum","severity":"warning"' in out


def test_check_counts_a_toy_request_under_the_minimum_and_lists_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 34: a tutorial's toy request (no marker, under the minimum) is an info: counted
    record_cassette(cassettes(tmp_path) / "test_toy.json", responses(50), url=RESPONSES_URL)
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"))
    assert code == 0 and "info below-minimum" not in out, out
    assert (
        "cache rules (1 finding(s); 1 request(s) under the model's minimum not listed:"
        " harness lint lists them)"
    ) in out
    assert out.rstrip().endswith("harness check: 1 cassettes, no finding")
    # near miss: a marked request under the minimum is a warning, listed beside the count
    record_cassette(cassettes(tmp_path) / "test_small.json", claude(500, model="claude-opus-4-6"))
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"))
    assert code == 0 and "warning below-minimum: nothing is cached: 500 tokens" in out
    assert "cache rules (2 finding(s); 1 request(s) under the model's minimum not listed" in out
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"), "--format", "json")
    assert '"rule":"below-minimum","severity":"info"' in out  # JSON keeps every finding


def test_check_lists_a_gate_break_of_uncertain_effect_as_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = responses(1100), responses(1100)
    first["truncation"], second["truncation"] = "auto", "disabled"
    second["input"].append({"role": "user", "content": [{"type": "input_text", "text": "more"}]})
    record_cassette(cassettes(tmp_path) / "test_truncation.json", first, second, url=RESPONSES_URL)
    code, out = cli(capsys, "check", str(tmp_path / "fixtures"))
    assert code == 0, out  # was a certain break: model_changed, exit 1
    assert "request 1: warning prefix-broken: unknown_setting_changed:" in out


def test_show_says_what_each_request_caches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record_cassette(
        cassettes(tmp_path) / "test_turns.json",
        claude(500, model="claude-opus-4-6"),
        claude(1100, model="claude-sonnet-4-5", turns=2),
        claude(1100, model="claude-test", turns=3),
    )
    code, out = cli(capsys, "show", str(path))
    lines = out.splitlines()
    assert code == 0
    assert lines[1].endswith(
        "caching: nothing is cached: 500 tokens, minimum 4,096 for claude-opus-4-6"
        " (tokens: bytes / 4)"
    )
    assert lines[2].endswith("; caching: caches ~1,100 tokens up to /system/0 (5m)")
    assert "written 0; caching:" in lines[1]  # the stand-in's cache signal, then the rules
    assert lines[3].endswith(
        "caching: whether it caches is unknown: the rules know no minimum for claude-test"
    )
