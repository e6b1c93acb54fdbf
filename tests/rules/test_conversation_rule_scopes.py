"""Which conversation finding belongs to which rule, and which rules abstain (issue 35).

A write the provider let expire is `ttl-expired`'s, not also `write-never-read`'s; a model the
rules know no minimum for is `unknown-model`'s alone, once per model, the rules that need the
minimum (`lookback-exceeded`, `write-never-read`) abstaining. Each through `harness lint` as a
user runs it; each shown failing on the rule that forgot its scope (hand-made mutants of
`harness/rules/_conversation_rules.py`), its near miss beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cache.test_lookback import agent_turns
from tests.rules.test_lint_rules import conversation, lint
from tests.support.bodies import ANTHROPIC_URL, claude, line

QUESTION = "Plan a trip. " + "x" * 400


def rules(found: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(f["rule"], f["request"]) for f in found]


def test_a_write_that_expired_unread_is_ttl_expireds_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = conversation([QUESTION])
    second = conversation([QUESTION, "Book it."])  # reads the whole write, if it is alive
    late = [line(first, ANTHROPIC_URL, time=0), line(second, ANTHROPIC_URL, time=6 * 60)]
    code, found = lint(tmp_path, capsys, *late)
    assert code == 0 and rules(found) == [("ttl-expired", 1)]
    # the near miss: a minute apart, the write is read and nothing is said
    soon = [line(first, ANTHROPIC_URL, time=0), line(second, ANTHROPIC_URL, time=60)]
    assert lint(tmp_path, capsys, *soon) == (0, [])


def test_an_unknown_model_is_unknown_models_alone_in_an_unread_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def pair(model: str) -> list[str]:
        first = conversation([QUESTION], model=model)
        unmarked = conversation([QUESTION, "Book it."], mark_last=False, model=model)
        return [line(first, ANTHROPIC_URL), line(unmarked, ANTHROPIC_URL)]

    _, found = lint(tmp_path, capsys, *pair("claude-test"))
    assert rules(found) == [("unknown-model", 0)]
    _, found = lint(tmp_path, capsys, *pair("claude-sonnet-4-5"))  # the near miss
    assert rules(found) == [("write-never-read", 0)]


def test_an_unknown_model_is_unknown_models_alone_past_the_lookback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = agent_turns(30)
    for body in (first, second):
        body["model"] = "claude-test"
    _, found = lint(tmp_path, capsys, line(first, ANTHROPIC_URL), line(second, ANTHROPIC_URL))
    assert rules(found) == [("unknown-model", 0)]
    # the near miss, the known model: tests/cache/test_lookback.py (lookback-exceeded at 1)


def test_unknown_model_is_said_once_for_each_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bodies = [claude(10, model=model) for model in ("claude-test", "claude-other", "claude-test")]
    _, found = lint(tmp_path, capsys, *(line(body, ANTHROPIC_URL) for body in bodies))
    assert [(f["rule"], f["request"]) for f in found if f["rule"] == "unknown-model"] == [
        ("unknown-model", 0),
        ("unknown-model", 1),
    ]
    assert "claude-other" in found[1]["message"]
