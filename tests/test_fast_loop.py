"""The fast loop (`pytest -m "not slow"`) draws a quarter of each property's examples; every other
run, CI's full suite among them, draws the full count (`tests.support.properties`)."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from tests.support import properties
from tests.support.properties import examples, is_fast_loop


@pytest.mark.parametrize(
    ("markexpr", "fast"),
    [
        ("not slow", True),
        ("  not   slow ", True),
        ("", False),
        ("slow", False),
        ("not slow and not network", False),
        ("not slower", False),
        ("not (slow)", False),
    ],
)
def test_only_not_slow_is_the_fast_loop(markexpr: str, fast: bool) -> None:
    assert is_fast_loop(markexpr) is fast


def test_this_run_draws_what_its_mark_expression_says(pytestconfig: pytest.Config) -> None:
    """A property with `examples(40)` runs 40 times in a full run and 10 in the fast loop."""
    calls = 0

    @settings(max_examples=examples(40), deadline=None, database=None, phases=[Phase.generate])
    @given(st.uuids())
    def draw(_: object) -> None:
        nonlocal calls
        calls += 1

    draw()
    fast = is_fast_loop(pytestconfig.getoption("markexpr") or "")
    assert properties.FAST is fast
    assert calls == (10 if fast else 40)


def test_the_fast_share_is_a_quarter_never_below_the_floor_nor_above_the_full_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(properties, "FAST", False)
    assert [examples(n) for n in (5, 40, 200)] == [5, 40, 200]
    monkeypatch.setattr(properties, "FAST", True)
    assert [examples(n) for n in (5, 25, 40, 200)] == [5, 10, 10, 50]
