"""The pack's lookups answer as the rows say, however they are sped up.

A model pattern is a glob (`*claude-haiku-4-5-v[0-9]*`); the pack compiles one only for a model
that holds each of its plain runs (a run of plain characters matches only itself), and keeps each
lookup's answer for the rows it was asked of. Both must answer exactly as `fnmatchcase` over the
rows, in order, would.
"""

from __future__ import annotations

import datetime
import itertools
import random
from fnmatch import fnmatchcase

from harness.providers._model_names import model_matches
from harness.providers._pack import (
    Breakpoints,
    Caching,
    Minimum,
    Row,
    Ttl,
    overlay,
    rules_pack,
)


def _names() -> list[str]:
    """Every model a shipped row names (its patterns with each wildcard filled in), and near
    misses of each: a character changed, dropped or added at each end."""
    found = {"", "scripted-model", "claude", "gpt-4o"}
    for row in rules_pack().rows:
        for pattern in row.models:
            name = pattern.replace("*", "").replace("?", "1").replace("[0-9]", "7")
            found |= {name, name[1:], name[:-1], "x" + name, name + "x", "us.anthropic." + name}
            found |= {name.replace("-", "_", 1), name.upper(), f"{name}-20250101-v1:0"}
    return sorted(found)


def test_a_model_pattern_matches_exactly_as_fnmatch() -> None:
    patterns = sorted({p for row in rules_pack().rows for p in row.models})
    patterns += ["a[]]b*", "x[", "*[*", "[!c]laude*", "??", "a*b?c", "*-20??????*"]
    names = _names()[::9]  # every ninth: each family's near misses are spread over the list
    assert len(patterns) > 100 and len(names) > 100
    for pattern in patterns:
        for name in names:
            assert model_matches(name, pattern) == fnmatchcase(name, pattern), (name, pattern)
    rng = random.Random(33)
    for _ in range(1000):  # globs of the characters that make them hard
        pattern = "".join(rng.choice("ab[]!*?-") for _ in range(rng.randint(0, 7)))
        name = "".join(rng.choice("ab[]!-") for _ in range(rng.randint(0, 7)))
        assert model_matches(name, pattern) == fnmatchcase(name, pattern), (name, pattern)


def test_a_lookup_answers_as_the_rows_in_order() -> None:
    pack = rules_pack()
    kinds: tuple[type[Row], ...] = (Minimum, Caching, Breakpoints, Ttl)
    for kind, provider, model, surface in itertools.product(
        kinds, ("anthropic", "bedrock", "openai-responses"), [None, *_names()[::60]], ("", "vertex")
    ):
        every = [
            r for r in pack.rows if isinstance(r, kind) and r.applies(provider, model, surface)
        ]
        assert pack.every(kind, provider, model, surface) == every
        assert pack.first(kind, provider, model, surface) == (every[0] if every else None)


def test_a_lookup_kept_for_one_pack_is_not_the_next_packs() -> None:
    """The near miss: a project's row for a model, in force, is found; once it ends, not."""
    before = rules_pack().first(Minimum, "anthropic", "Claude-Opus-4-6")
    assert before is not None and before.tokens == 4096
    row = Minimum(
        providers=("anthropic",),
        models=("claude-opus-4-6",),
        tokens=2048,
        source="test",
        checked_on=datetime.date(2026, 12, 1),
    )
    with overlay([row]):
        during = rules_pack().first(Minimum, "anthropic", "claude-OPUS-4-6")
        assert during == row
    assert rules_pack().first(Minimum, "anthropic", "claude-opus-4-6") == before
