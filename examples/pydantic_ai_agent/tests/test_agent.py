"""The day planner's tests: the agent is called as it is; the marker does the capture."""

from __future__ import annotations

import pytest

from day_planner import build_agent, plan_day

QUESTION = "Is it a good day for a walk in Paris?"


@pytest.mark.header_capture
def test_plan_a_walk():
    """One question, one tool call, one answer: replayed from the cassette in CI."""
    assert "walk" in plan_day(QUESTION)


@pytest.mark.header_capture
def test_a_follow_up_extends_the_cached_prefix():
    """The second run continues the first one's history: the gate checks every request
    extends the cached prefix of the one before it (tools, instructions, then messages)."""
    agent = build_agent()
    first = agent.run_sync(QUESTION)
    second = agent.run_sync("And tomorrow?", message_history=first.all_messages())
    assert second.output
