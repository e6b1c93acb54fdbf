"""A text is scanned for volatile values only where one could be: the scan finds what the whole
patterns find, on every text.

Each pattern of the hints (and `volatile-in-prefix`'s own: a time to the second, a temporary
path) skips a text that lacks what every match holds (a digit then a colon, `/tmp/`...); the
written dates run only where a month's name is. The scan must find exactly what the patterns
alone find: checked on texts made of the characters those patterns turn on, and on the rules
corpus's request bodies.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from harness.drift import _hints
from harness.drift._hints import hints_between, volatile_matches
from harness.rules import _request_rules

CORPUS = Path(__file__).resolve().parent.parent / "rules" / "cases"
NOUNS = frozenset(pattern.noun for pattern in _hints._PATTERNS)
# Pieces the patterns turn on; texts are made of them, so near misses are everywhere.
PIECES = (
    *"0123456789-/.:T ,Zabcdef_x\\\n",
    "2026-12-05",
    "12:30",
    "12:30:59",
    "03.12.2026",
    "12/03/2026",
    "2026-12-05T10:00:00Z",
    "1712345678",
    "deadbeefcafe1234",
    "123e4567-e89b-12d3-a456-426614174000",
    " May ",
    "December 3rd",
    "Thursday, 3 ",
    "/tmp/",
    "/tmp/pytest-12/",
    "/var/folders/x1/",
    "/home/me",
    "/root/",
    "/private/tmp/a1",
    "C:\\Users\\me\\AppData\\Local\\Temp\\x1",
    "C:/",
    "e.g. ",
    '"default": ',
)


def _texts() -> list[str]:
    rng = random.Random(33)
    found = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14))) for _ in range(1500)]
    for path in sorted(CORPUS.glob("*.json")):  # real request bodies, sources with dates
        value = json.loads(path.read_text())
        items = value.get("cases") or list(value.get("sources", {}).values())
        found += [json.dumps(item) for item in items[:20]]
    return found


def _whole(pattern: _hints._Pattern, text: str) -> list[tuple[int, int]]:
    """What the pattern's whole regex finds (no gate, no check before)."""
    return [match.span() for match in pattern.regex.finditer(text)]


def test_each_pattern_finds_what_its_whole_regex_finds() -> None:
    for text in _texts():
        for pattern in _hints._PATTERNS:
            found = [match.span() for match in pattern.finditer(text)]
            assert found == _whole(pattern, text), (pattern.noun, text)


def test_the_scans_find_what_the_whole_patterns_find() -> None:
    for text in _texts()[::2]:
        claimed: list[tuple[int, int]] = []
        expected: list[tuple[int, str, str]] = []
        for pattern in _hints._PATTERNS:
            for start, end in _whole(pattern, text):
                if not any(start < e and s < end for s, e in claimed):
                    claimed.append((start, end))
                    expected.append((start, pattern.noun, text[start:end]))
        wanted = [(noun, value) for _, noun, value in sorted(expected)]
        assert volatile_matches(text, NOUNS) == wanted, text
        for name, regex in (("clock", _request_rules._CLOCK), ("temp", _request_rules._TEMP_PATH)):
            held = (
                _request_rules._CLOCK_NEEDS.search(text) is not None
                if name == "clock"
                else any(piece in text for piece in _request_rules._TEMP_PATH_NEEDS)
            )
            assert held or regex.search(text) is None, (name, text)


def test_a_near_miss_of_each_check_is_still_found() -> None:
    """One character of what the check looks for, and the value is found; without it, none."""
    cases = {
        "a timestamp": ("at 2026-12-05T10:00:00Z", "at 2026-12-05T10-00-00Z"),
        "a date": ("on 03.12.2026", "on 03,12,2026"),
        "a time of day": ("at 12:30 sharp", "at 12;30 sharp"),
        "an absolute path": ("in /root/x", "in /rooted/x"),
    }
    for noun, (found, missed) in cases.items():
        assert noun in dict(volatile_matches(found, NOUNS)), (noun, found)
        assert noun not in dict(volatile_matches(missed, NOUNS)), (noun, missed)
    assert hints_between("built 2026-12-05", "built 2026-12-06", differential=True)
    assert re.search("a temporary path", str(_request_rules._volatile_in(b"/tmp/tmpab12cd/x")))
