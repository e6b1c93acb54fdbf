"""`python -m bench.conversation` at toy sizes, so it cannot rot: it records, checks and renders
its table and the goal line. Structure, never timings."""

from __future__ import annotations

import pytest

from bench import conversation


@pytest.mark.slow  # child processes: one recording and one `harness check` per size
def test_a_toy_run_renders_its_table_and_judges_the_size_goal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert conversation.main(["--turns", "3,6", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n| 3 |") == 1 and out.count("\n| 6 |") == 1
    assert "a 6-turn cassette at most 5x its last request:" in out
    assert "CPU per byte sent, 3 -> 6 turns (medians, 2 run(s) each): recording x" in out


def test_the_bodies_grow_by_one_turn_and_move_the_marker() -> None:
    sent = list(conversation.bodies(3))
    assert len(sent) == 3 and len(sent[0]) < len(sent[1]) < len(sent[2])
    for turn, body in enumerate(sent):
        text = body.decode()
        assert text.count('"cache_control"') == 1  # on the newest question only
        assert text.index('"cache_control"') > text.index(f"question {turn}:")
