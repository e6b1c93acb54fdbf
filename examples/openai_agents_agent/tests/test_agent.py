"""The support desk's tests: the agent is called as it is; the marker does the capture."""

from __future__ import annotations

import pytest

from support_desk import answer


@pytest.mark.header_capture
def test_runbook_question():
    """One question, one tool call, one answer: replayed from the cassette in CI."""
    assert "runbooks/deploy.md" in answer("Where is the deploy runbook?")
