"""When a response's usage is believed (`harness.cache._tokens.PLAUSIBLE`: 1.5 to 12 bytes a
token, both ends included) and what it changes, through `harness lint` and `harness cost`: the
request's tokens are the provider's count, its prefixes scaled by its own ratio (so a prefix
may reach the minimum, or fall short of it), and the conversation's other requests are
calibrated by that ratio. A usage outside the bounds (a stand-in's made-up count) is bytes / 4.

The request is 4,800 bytes of blocks (a marked system block of 4,000, a question of 800): 1,200
tokens at bytes / 4, its system prefix 1,000 (below Sonnet 4.5's 1,024).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from tests.support.bodies import ANTHROPIC_URL, MARK, text_block

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "system": [text_block(1000, MARK)],
    "messages": [{"role": "user", "content": [text_block(200)]}],
}


def line(tokens: int | None, start: float = 0.0) -> str:
    value: dict[str, Any] = {"url": ANTHROPIC_URL, "body": BODY, "time": start}
    if tokens is not None:
        usage = {
            "input_tokens": tokens,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "output_tokens": 5,
        }
        value["response"] = {"type": "message", "usage": usage}
    return json.dumps(value)


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str) -> tuple[str, str]:
    """`harness lint`'s findings and `harness cost`'s conversation line."""
    path = tmp_path / "usage.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    main(["lint", str(path)])
    findings = capsys.readouterr().out
    assert main(["cost", str(path)]) == 0
    return findings, capsys.readouterr().out.splitlines()[0]


def figures(said: str) -> tuple[int, int]:
    """Written and input tokens of a `harness cost` line."""
    found = re.search(r"written ([\d,]+), uncached [\d,]+ of ([\d,]+) input tokens", said)
    assert found is not None, said
    written, whole = (int(group.replace(",", "")) for group in found.groups())
    return written, whole


@pytest.mark.parametrize(
    ("tokens", "prefix"),
    [(400, 333), (3200, 2667)],
    ids=["12-bytes-a-token", "1.5-bytes-a-token"],
)
def test_a_usage_at_either_bound_is_believed_and_scales_the_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokens: int, prefix: int
) -> None:
    findings, said = run(tmp_path, capsys, line(tokens))
    assert figures(said)[1] == tokens
    assert "tokens: the provider's recorded usage" in said
    if prefix < 1024:  # 4,000 of 4,800 bytes: 333 tokens, below the minimum
        assert (
            "below-minimum: nothing is cached: 333 tokens, minimum 1,024 for claude-sonnet-4-5"
            " (tokens: scaled by the response's usage)"
        ) in findings
        assert figures(said)[0] == 0
    else:  # 2,667 tokens: written
        assert "below-minimum" not in findings
        assert figures(said)[0] == prefix


@pytest.mark.parametrize("tokens", [399, 3201, 0])
def test_a_usage_past_either_bound_is_not_believed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokens: int
) -> None:
    findings, said = run(tmp_path, capsys, line(tokens))
    assert figures(said) == (0, 1200)
    assert "tokens: bytes / 4" in said
    assert "nothing is cached: 1,000 tokens, minimum 1,024 for claude-sonnet-4-5" in findings
    assert "(tokens: bytes / 4)" in findings


def test_the_other_requests_are_calibrated_by_the_recorded_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, said = run(tmp_path, capsys, line(3200), line(None, 30.0))
    # the second has no usage: 1.5 bytes a token, as the first recorded, not 4
    assert figures(said)[1] == 2 * 3200
    assert (
        "tokens: the provider's recorded usage (1 of 2 requests; the others scaled by their ratio)"
    ) in said
    _, said = run(tmp_path, capsys, line(3201), line(None, 30.0))  # nothing believed
    assert figures(said)[1] == 2 * 1200
