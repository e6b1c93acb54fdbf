"""Properties where examples are thin (issue 35 item 3): the cost model's totals add up and are
never negative, and the prefix-chain gate calls any appended turn an extension and any change
before the newest breakpoint a break. Redaction's property (a key of every shape the scan knows,
glued anywhere into a request, a response, a file name or a printed difference, never reaches
a file or a printed line) is `tests/reliability/test_secret_property.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.capture import CaptureSession
from harness.cli import main
from tests.support.conversations import conversation, entry
from tests.support.properties import examples

ANTHROPIC = "https://api.anthropic.com/v1/messages"
FAST = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def cost(tmp_path: Path, capsys: pytest.CaptureFixture[str], *lines: str) -> dict[str, Any]:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["cost", str(path), "--format", "json"]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)["sessions"][0]
    return found


KEYS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "uncached_tokens")


# slow: 0.93-1.05, at the fast loop's example count s of CPU in a serial run (issue 33)
@pytest.mark.slow
@FAST
@given(
    turns=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    gaps=st.lists(st.sampled_from([1.0, 30.0, 200.0, 400.0, 4000.0]), min_size=5, max_size=5),
    ttl=st.sampled_from([None, "1h"]),
    marked_system=st.booleans(),
)
def test_a_sessions_figures_add_up_and_are_never_negative(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    turns: list[int],
    gaps: list[float],
    ttl: str | None,
    marked_system: bool,
) -> None:
    bodies = [conversation(n, ttl=ttl) for n in turns]
    if marked_system:
        for body in bodies:
            body["system"][0]["cache_control"] = {
                "type": "ephemeral",
                **({"ttl": ttl} if ttl else {}),
            }
    times, now = [], 0.0
    for gap in gaps[: len(bodies)]:
        times.append(now)
        now += gap
    whole = cost(tmp_path, capsys, *(entry(b, t) for b, t in zip(bodies, times, strict=True)))
    read, written, uncached = (whole[key] for key in KEYS[1:])
    assert read + written + uncached == whole["input_tokens"]
    assert all(whole[key] >= 0 for key in KEYS)
    assert whole["usd"] >= 0 and whole["usd_without_cache"] >= 0
    assert 0.0 <= whole["hit_rate"] <= 1.0
    # a session's input is the sum of its requests' (each request alone: nothing to read)
    alone = [cost(tmp_path, capsys, entry(b))["input_tokens"] for b in bodies]
    assert whole["input_tokens"] == sum(alone)
    assert read <= sum(alone[:-1])  # nothing reads what no earlier request sent


def chain(*bodies: dict[str, Any]) -> Any:
    upstream = httpx2.MockTransport(lambda r: httpx2.Response(200, json={"id": "msg_1"}))
    capture = CaptureSession(upstream=upstream)
    for body in bodies:
        capture.httpx2_client().post(ANTHROPIC, content=json.dumps(body))
    return capture.prefix_chain()


def history(texts: list[str]) -> dict[str, Any]:
    """A Messages conversation of user turns `texts` (answers between), the system and the last
    user block marked."""
    messages: list[dict[str, Any]] = []
    for turn, text in enumerate(texts):
        if turn:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
        text = STEM + text  # long enough that a text grown at its end is recognised as grown
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    system = [{"type": "text", "text": "You plan trips.", "cache_control": {"type": "ephemeral"}}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": system, "messages": messages}


STEM = "Plan a trip to Lisbon for a week in May. " * 8
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=30)


@settings(max_examples=examples(40), deadline=None)
@given(before=st.lists(TEXT, min_size=1, max_size=4), after=st.lists(TEXT, min_size=1, max_size=3))
def test_any_appended_turns_extend_the_prefix(before: list[str], after: list[str]) -> None:
    found = chain(history(before), history(before + after))
    assert (found.breaks, found.warnings) == ([], [])


@settings(max_examples=examples(40), deadline=None)
@given(
    texts=st.lists(TEXT, min_size=2, max_size=4),
    data=st.data(),
)
def test_any_change_before_the_newest_breakpoint_is_a_break(
    texts: list[str], data: st.DataObject
) -> None:
    turn = data.draw(st.integers(0, len(texts) - 1), label="turn")  # up to the newest breakpoint
    edited = list(texts)
    grown = st.builds(lambda tail: texts[turn] + tail, TEXT)  # grown at its end: a break too
    other = data.draw(TEXT.filter(lambda t: t != texts[turn]) | grown, label="other")
    edited[turn] = other
    # the next request continues the edited history: turn `turn` differs from what was cached
    found = chain(history(texts), history([*edited, "next"]))
    assert len(found.breaks) == 1
    (one,) = found.breaks
    assert one.severity == "error" and one.verdict == "messages_changed"
