"""`ttl-expired` and `provider-disagrees` through `harness lint`, each with its near miss: a gap
within the TTL, a read between that refreshes it, a 1h entry; counters that agree, a read within
the tolerance, a miss reason the gate agrees with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.conversations import answer, conversation, entry


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str) -> list[dict[str, Any]]:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    main(["lint", str(path), "--format", "json"])
    findings: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["findings"]
    return findings


def of(findings: list[dict[str, Any]], rule: str) -> list[dict[str, Any]]:
    return [finding for finding in findings if finding["rule"] == rule]


def turns(ttl: str | None = None) -> list[dict[str, Any]]:
    return [conversation(count, ttl=ttl) for count in (1, 2, 3)]


def test_ttl_expired_on_a_gap_longer_than_the_ttl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, three = turns()
    found = of(
        lint(tmp_path, capsys, entry(one, 0), entry(two, 30), entry(three, 400)), "ttl-expired"
    )
    assert [(f["request"], f["severity"]) for f in found] == [(2, "warning")]
    assert "starts 6m05s after the cache entry up to /messages/2/content/0" in found[0]["message"]
    assert "its TTL is 5m" in found[0]["message"]
    assert found[0]["pointer"] == "/messages/2/content/0"


@pytest.mark.parametrize(
    ("ttl", "starts"),
    [(None, (0, 30, 330)), (None, (0, 250, 500)), ("1h", (0, 30, 400)), (None, (None, None, None))],
    ids=["within-the-ttl", "a-read-refreshes-it", "a-1h-entry", "no-times"],
)
def test_ttl_expired_near_misses(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ttl: str | None,
    starts: tuple[float | None, ...],
) -> None:
    bodies = turns(ttl)
    if starts[1] == 250:  # the same first turn again at 250 s, then the second at 500 s
        bodies = [bodies[0], bodies[0], bodies[1]]
    lines = [entry(body, start) for body, start in zip(bodies, starts, strict=True)]
    assert of(lint(tmp_path, capsys, *lines), "ttl-expired") == []


def test_provider_disagrees_when_it_read_nothing_the_harness_predicts_a_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, _ = turns()
    one = json.loads(_cost(tmp_path, capsys, entry(first, 0)))["sessions"][0]["input_tokens"]
    two = json.loads(_cost(tmp_path, capsys, entry(second, 0)))["sessions"][0]["input_tokens"]
    found = of(
        lint(
            tmp_path,
            capsys,
            entry(first, 0, response=answer(0, one)),
            entry(second, 30, response=answer(0, two)),
        ),
        "provider-disagrees",
    )
    assert [f["request"] for f in found] == [1]
    assert (
        f"the provider read 0 tokens from its cache; the harness predicted {one:,}"
        in (found[0]["message"])
    )


def test_provider_disagrees_on_a_miss_reason_where_the_prefix_extended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, _ = turns()
    found = of(
        lint(
            tmp_path,
            capsys,
            entry(first, 0),
            entry(second, 30, response=answer(0, 3000, reason="tools_changed")),
        ),
        "provider-disagrees",
    )
    assert [f["request"] for f in found] == [1]
    assert found[0]["message"].startswith("the provider reports tools_changed, but the harness")


def test_provider_disagrees_on_another_word_than_the_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = conversation(1)
    moved = conversation(2, tools=("beta", "alpha", "gamma"))
    lines = [entry(first, 0)]
    agree = lint(
        tmp_path, capsys, *lines, entry(moved, 30, response=answer(0, 3000, reason="tools_changed"))
    )
    assert of(agree, "provider-disagrees") == []
    assert of(agree, "prefix-broken")[0]["message"].startswith("tools_changed")
    other = lint(
        tmp_path,
        capsys,
        *lines,
        entry(moved, 30, response=answer(0, 3000, reason="system_changed")),
    )
    found = of(other, "provider-disagrees")
    assert [f["message"] for f in found] == [
        "the provider reports system_changed; the harness says tools_changed"
    ]


def test_counters_that_agree_or_within_the_tolerance_are_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, _ = turns()
    one = json.loads(_cost(tmp_path, capsys, entry(first, 0)))["sessions"][0]["input_tokens"]
    two = json.loads(_cost(tmp_path, capsys, entry(second, 0)))["sessions"][0]["input_tokens"]
    for read in (one, one - 100):  # exact, and 100 tokens off (under the 128-token step)
        lines = [
            entry(first, 0, response=answer(0, one)),
            entry(second, 30, response=answer(read, two - read)),
        ]
        assert of(lint(tmp_path, capsys, *lines), "provider-disagrees") == []


def _cost(tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str) -> str:
    path = tmp_path / "one.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["cost", str(path), "--format", "json"]) == 0
    return capsys.readouterr().out
