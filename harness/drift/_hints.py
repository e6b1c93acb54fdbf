"""Hints about volatile content in a header: timestamps, dates, UUIDs, absolute paths, counters.

A header that holds today's date or a per-run id changes on every run, and every run pays full
price. A hint quotes what it saw and says what to do; with two sides, only what differs is named.
Hints are made when a report is printed, from texts the printer redacted
(`harness.drift._printed.volatile_hints`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, NamedTuple

_MAX_HINTS: Final = 10


def _holds(*pieces: str) -> Callable[[str], bool]:
    """Whether a text holds one of `pieces` (a substring search, in C)."""
    return lambda text: any(piece in text for piece in pieces)


def _finds(pattern: str) -> Callable[[str], bool]:
    """Whether `pattern`, which starts with a character class (so the regex engine skips to
    the characters it can start at), is found in a text."""
    search = re.compile(pattern).search
    return lambda text: search(text) is not None


# A month by its name or its usual short forms (never any word that starts like one: "Marching"),
# a day with or without its ordinal suffix, and a weekday: a date written out, as an agent's
# system prompt says it ("Thursday, 3 December 2026", "December 3rd, 2026").
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\b\.?"
)
_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?\b"
_ORDINAL_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b"
_WEEKDAY = (
    r"(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
    r"|(?:Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)\b\.?)"
)
_YEAR = r"(?:1[89]|2\d)\d\d\b"
# With a year, any written-out day and month is a date; without one, a weekday or an ordinal day
# must say so ("Thursday, 3 December", "December 3rd"): "May 3 agents" and "in May 2026" stay
# silent. European numeric dates (03.12.2026) need a real day and month, and no "v" or dot before.
_NAMED_DATE = (
    rf"\b(?:{_WEEKDAY},?\s+)?{_MONTH}\s+{_DAY},?\s+{_YEAR}"
    rf"|\b(?:{_WEEKDAY},?\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}"
    rf"|\b{_WEEKDAY},?\s+(?:the\s+)?(?:{_MONTH}\s+{_DAY}|{_DAY}(?:\s+of)?\s+{_MONTH})"
    rf"|\b(?:the\s+)?{_ORDINAL_DAY}(?:\s+of)?\s+{_MONTH}|\b{_MONTH}\s+{_ORDINAL_DAY}"
)
_DOTTED_DATE = (
    r"(?<!\w)(?<!\w\.)(?:0?[1-9]|[12]\d|3[01])\.(?:0?[1-9]|1[0-2])\.(?:19|20)\d\d(?!\w|\.\w)"
)
# Every branch of `_NAMED_DATE` holds a `_MONTH` after a word boundary: without one, none matches.
_MONTH_STEM: Final = re.compile(rf"\b{_MONTH}")
# Every name of `_MONTH` starts with one of these.
_MONTH_STARTS: Final = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)


def _names_a_month(text: str) -> bool:
    return any(start in text for start in _MONTH_STARTS) and bool(_MONTH_STEM.search(text))


# Every match of these holds a digit followed by a dash, a colon, or a dash, slash or dot.
_DIGIT_DASH: Final = _finds(r"\d-\d")
_DIGIT_COLON: Final = _finds(r"\d:\d")
_DIGIT_SEPARATOR: Final = _finds(r"\d[-/.]")
_NUMERIC_DATE = r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b"
_EVERY_RUN = (
    "volatile content in a header breaks the cache on every run;"
    " move it into the messages or pin it"
)
_EVERY_MACHINE = (
    "machine-specific content in a header breaks the cache on every other machine and checkout;"
    " make it relative or pin it"
)


class _Pattern(NamedTuple):
    noun: str  # with its article: "looks like <noun>"
    regex: re.Pattern[str]
    advice: str
    # `quick` is `regex` less the branches that need `gate` in the text: where `gate` is not
    # found, `quick` finds exactly what `regex` would (the written dates need a month's name,
    # and were 29 of the 44 ms a 200-tool header's scan took).
    gate: Callable[[str], bool] | None = None
    quick: re.Pattern[str] | None = None
    # What every match of `regex` (`needs`), or of `quick` (`quick_needs`), holds: a text
    # without it has no match, and is not scanned (a scan tries the pattern at every position:
    # a header's scan is most of `harness lint`'s work on one small cassette).
    needs: Callable[[str], bool] | None = None
    quick_needs: Callable[[str], bool] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if self.needs is not None and not self.needs(text):
            return iter(())
        if self.gate is not None and self.quick is not None and not self.gate(text):
            if self.quick_needs is not None and not self.quick_needs(text):
                return iter(())
            return self.quick.finditer(text)
        return self.regex.finditer(text)


# In priority order: a span claimed by an earlier pattern is not reported again by a later one.
_PATTERNS: Final = (
    _Pattern(
        "a timestamp",
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        _EVERY_RUN,
        needs=lambda text: _DIGIT_DASH(text) and _DIGIT_COLON(text),
    ),
    _Pattern(
        "a UUID",
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        _EVERY_RUN,
    ),
    _Pattern(
        "a date",
        re.compile(rf"{_NUMERIC_DATE}|{_NAMED_DATE}|{_DOTTED_DATE}"),
        _EVERY_RUN,
        _names_a_month,
        re.compile(rf"{_NUMERIC_DATE}|{_DOTTED_DATE}"),
        quick_needs=_DIGIT_SEPARATOR,
    ),
    _Pattern(
        "a time of day",
        re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"),
        _EVERY_RUN,
        needs=_DIGIT_COLON,
    ),
    _Pattern("a Unix time", re.compile(r"\b1\d{9}(?:\d{3}|\d{6})?\b"), _EVERY_RUN),
    _Pattern(
        "an absolute path",
        re.compile(
            r"(?:/home/|/tmp/|/Users/|/var/folders/|/private/var/|/private/tmp/|/root/)"
            r"[^\s\"'`<>|,;()\[\]{}\\]*"
            r"|\b[A-Za-z]:(?:\\\\|\\|/)[^\s\"'`<>|,;()\[\]{}]*"
        ),
        _EVERY_MACHINE,
        needs=_holds(
            "/home/", "/tmp/", "/Users/", "/var/folders/", "/private/", "/root/", ":\\", ":/"
        ),
    ),
    _Pattern(
        "a hex id",
        re.compile(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}\b"),
        _EVERY_RUN,
    ),
)
_COUNTER_ADVICE = (
    "a number that changes between runs breaks the cache on every run; derive it"
    " deterministically or move it into the messages"
)


def volatile_matches(text: str, nouns: frozenset[str]) -> list[tuple[str, str]]:
    """`(noun, what it matched)` for each volatile thing in `text` whose noun is in `nouns` ("a
    timestamp", "a UUID", "a date", "a hex id"...), a span claimed once, in priority order."""
    found: list[tuple[int, str, str]] = []
    claimed: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if _overlaps(match.span(), claimed):
                continue
            claimed.append(match.span())
            if pattern.noun in nouns:
                found.append((match.start(), pattern.noun, match.group()))
    return [(noun, value) for _, noun, value in sorted(found)]


def hints_between(a_text: str, b_text: str, *, differential: bool) -> tuple[str, ...]:
    """Hints for each text alone, or (`differential`) for what differs between the two."""
    found_hints: list[str] = []
    seen: set[str] = set()

    def add(hint: str) -> None:
        if hint not in seen and len(found_hints) < _MAX_HINTS:
            seen.add(hint)
            found_hints.append(hint)

    texts = [(a_text, b_text), (b_text, a_text)] if differential else [(a_text, ""), (b_text, "")]
    claimed: list[list[tuple[int, int]]] = [[], []]
    for pattern in _PATTERNS:
        for side, (text, other) in enumerate(texts):
            for match in pattern.finditer(text):
                span = match.span()
                if _overlaps(span, claimed[side]):
                    continue
                claimed[side].append(span)
                found = match.group()
                if differential and found in other:
                    continue
                add(f'looks like {pattern.noun}: "{_clip(found, 80)}" — {pattern.advice}')
    if differential:
        for number_a, number_b in _counters(a_text, b_text, claimed[0], claimed[1]):
            add(
                f'looks like a counter: "{number_a}" became "{number_b}" at the same place —'
                f" {_COUNTER_ADVICE}"
            )
    return tuple(found_hints)


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters (hints read texts the printer redacted already)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _overlaps(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)


_NUMBER = re.compile(r"(\d+)")


def _counters(
    a_text: str,
    b_text: str,
    claimed_a: Sequence[tuple[int, int]],
    claimed_b: Sequence[tuple[int, int]],
) -> list[tuple[str, str]]:
    """Numbers that differ at the same place: token-level diff of number and non-number runs."""
    if len(a_text) + len(b_text) > 400_000:
        return []
    tokens_a, tokens_b = _NUMBER.split(a_text), _NUMBER.split(b_text)
    starts_a, starts_b = _starts(tokens_a), _starts(tokens_b)
    matcher = difflib.SequenceMatcher(None, tokens_a, tokens_b, autojunk=False)
    found: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 != j2 - j1:
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            x, y = tokens_a[i], tokens_b[j]
            if not (x.isdigit() and y.isdigit()) or x == y:
                continue
            if _in_word(tokens_a, i) or _in_word(tokens_b, j):
                continue  # "m1" -> "m2" is a name, not a count
            span_a = (starts_a[i], starts_a[i] + len(x))
            span_b = (starts_b[j], starts_b[j] + len(y))
            if _overlaps(span_a, claimed_a) or _overlaps(span_b, claimed_b):
                continue
            found.append((x, y))
    return found


def _in_word(tokens: Sequence[str], index: int) -> bool:
    """Whether the number at `index` is glued to letters (split tokens alternate text, number)."""
    before = tokens[index - 1] if index > 0 else ""
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    return bool(before[-1:].isalpha() or before[-1:] == "_" or after[:1].isalpha())


def _starts(tokens: Sequence[str]) -> list[int]:
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token)
    return starts
