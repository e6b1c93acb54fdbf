"""How many examples a property test draws: its full count, or a quarter of it in the fast loop.

`@settings(max_examples=examples(200))` draws 200 examples in every run that may include the slow
tests (the full suite, CI, one file or folder run alone) and 50 in the fast inner loop,
`pytest -m "not slow"`. The property and its explicit `@example`s are the same in both; only the
number of random draws differs, and the full run (CI's `.ci/run`) always draws the full count.
Hypothesis' own profiles cannot do this: a count given to `@settings` overrides any profile.

`FAST` is set once per test process, by `tests/conftest.py`'s `pytest_configure`, before the test
modules are imported (collection); xdist's workers run that hook with the same `-m`. A module
imported outside a pytest run (a PYTHONHASHSEED child of `prove_stable`) sees the full count.
Decision: docs/decisions/0038-fast-loop-examples.md.
"""

from __future__ import annotations

# The fast loop's share of a property's examples, and the fewest it draws (never more than full).
FAST_SHARE = 4
FAST_FLOOR = 10

FAST = False


def examples(full: int) -> int:
    """`full` in a full run; a quarter of it (at least `FAST_FLOOR`, at most `full`) in the fast
    loop."""
    if not FAST:
        return full
    return min(full, max(full // FAST_SHARE, FAST_FLOOR))


def is_fast_loop(markexpr: str) -> bool:
    """Whether `-m markexpr` is the fast loop, `not slow` (spacing aside). Any other expression
    draws the full counts: a run that narrows the fast loop further is rare, and erring towards
    the full count costs time, never strength."""
    return markexpr.split() == ["not", "slow"]
