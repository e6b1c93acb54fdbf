"""Cache markers set aside from a body's JSON text, as the cache model sets them aside.

`unmarked(value, ttls, needles)` is `value` (a block's JSON text) without the members that are
cache markers (`needles`: the marker keys of the body's provider, quoted, as its split names
them) and the TTLs they ask for added to `ttls`. A marker is a member whose value is a flat
object (`"cache_control":{"type":"ephemeral"}`); an object that held only a marker (a Bedrock
`{"cachePoint":{...}}` block) goes whole. In JSON text a key is never preceded by a backslash,
so a quoted marker inside a string is left alone. A marker this does not match (a nested value)
is left in: the digests then differ, and the cache model, which sets the markers aside, judges
the pair.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Final

import msgspec

__all__ = ["needles_of", "unmarked"]

_SPACE: Final = b" \t\r\n"
_TTL: Final = re.compile(rb'"ttl"\s*:\s*"([^"]*)"')


@functools.cache
def needles_of(markers: tuple[str, ...]) -> tuple[bytes, ...]:
    """The marker keys as they start a member in JSON text (quoted)."""
    return tuple(msgspec.json.encode(name) for name in markers)


def ttls_of(member: bytes) -> list[bytes]:
    """The TTLs a marker asks for (b"" for the default)."""
    return _TTL.findall(member) or [b""]


@functools.cache
def _member(needle: bytes) -> re.Pattern[bytes]:
    """A marker member: its key, and a flat object for its value."""
    return re.compile(re.escape(needle) + rb"[ \t\r\n]*:[ \t\r\n]*\{[^{}]*\}")


def unmarked(value: bytes, ttls: set[bytes], needles: tuple[bytes, ...]) -> bytes:
    """`value` without its cache markers; the TTLs they ask for (b"" for the default) are added
    to `ttls`. A member goes with one comma beside it; an object that held only a marker (a
    Bedrock `cachePoint` block) goes whole, with one comma beside it. The members are those
    `_member` finds scanning left to right; a match can only start at a quoted marker key, so
    only those places (found by a byte search, which runs in C) are tried. With one marker key
    (every provider's split names one) the matches are the pattern's own left-to-right search,
    which tries the same places in the same order."""
    if len(needles) == 1:
        needle = needles[0]
        if needle not in value:
            return value  # most values hold no marker: one search
        return _cut(value, ttls, ((m.start(), needle) for m in _member(needle).finditer(value)))
    first = [(place, needle) for needle in needles if (place := value.find(needle)) >= 0]
    if not first:
        return value  # most values hold no marker: one search each
    return _cut(value, ttls, sorted(_places(value, first)))


def _cut(value: bytes, ttls: set[bytes], starts: Iterable[tuple[int, bytes]]) -> bytes:
    """`value` without the marker members found at `starts` (in order; see `unmarked`)."""
    pieces: list[bytes] = []
    at = 0
    reach = 0  # where the last match ended: the next one starts at or after it
    for place, needle in starts:
        if place < reach:
            continue
        found = _member(needle).match(value, place)
        if found is None:
            continue
        start, end = found.span()
        reach = end
        if start < at:
            continue
        ttls.update(ttls_of(found.group()))
        before = _back(value, start)
        after = _forward(value, end)
        if before > 0 and value[before - 1 : before] == b"{" and value[after : after + 1] == b"}":
            start, end = before - 1, after + 1  # an object of its own: the whole item
            before, after = _back(value, start), _forward(value, end)
        if value[after : after + 1] == b",":
            end = _forward(value, after + 1)
        elif before > 0 and value[before - 1 : before] == b",":
            start = before - 1
        pieces.append(value[at:start])
        at = end
    if not pieces:
        return value
    pieces.append(value[at:])
    return b"".join(pieces)


def _places(value: bytes, first: list[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """Every place of each needle, from its first."""
    for place, needle in first:
        while place >= 0:
            yield place, needle
            place = value.find(needle, place + 1)


def _back(value: bytes, index: int) -> int:
    while index > 0 and value[index - 1] in _SPACE:
        index -= 1
    return index


def _forward(value: bytes, index: int) -> int:
    while index < len(value) and value[index] in _SPACE:
        index += 1
    return index
