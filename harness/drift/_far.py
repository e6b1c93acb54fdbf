"""Where two big values first differ, found member by member: no full encoding of either is made.

`compare_values` finds the first differing byte of two encodings by encoding both values whole.
For two 50 MB values that is 100 MB more held at once than the values themselves. `far_difference`
finds the same byte by walking both values in encoding order: identical members are skipped by
their encoded length (a string's, in chunks), differing ones are entered, and at the difference
only a small neighbourhood is encoded for the excerpt. `harness diff` takes this path for files
over `FAR` bytes; smaller values keep the exact excerpts of the whole encodings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from harness._shared._views import Window, common_prefix, encode_json, window
from harness.drift._locate import same_encoding

__all__ = ["FAR", "encoded_length", "far_difference"]

FAR: Final = 8 * 1024 * 1024
_CHUNK: Final = 1 << 16
_AROUND: Final = 64  # characters of a big string encoded on each side of its difference


def encoded_length(value: Any) -> int:
    """The length of `value`'s encoding; a long string's without encoding it whole."""
    if isinstance(value, str) and len(value) > _CHUNK:
        return 2 + _string_bytes(value, 0, len(value))
    return len(encode_json(value))


def _string_bytes(text: str, start: int, end: int) -> int:
    """The encoded length of `text[start:end]` without its quotes, a chunk at a time."""
    return sum(
        len(encode_json(text[i : min(i + _CHUNK, end)])) - 2 for i in range(start, end, _CHUNK)
    )


def far_difference(a: Any, b: Any) -> tuple[int, Window, Window]:
    """The offset of the first differing byte of the encodings of `a` and `b` (which differ),
    and the bytes around it on each side (an excerpt once printed)."""
    start = 0
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            keys = list(zip(a, b, strict=False))
            found = _members(
                start,
                [(encode_json(k), encode_json(m)) for k, m in keys],
                [(k, a[k], b[m]) for k, m in keys],
            )
        elif isinstance(a, list) and isinstance(b, list):
            found = _members(start, None, ((None, x, y) for x, y in zip(a, b, strict=False)))
        elif isinstance(a, str) and isinstance(b, str):
            return _in_strings(a, b, start)
        else:
            return _in_nodes(a, b, start, start + common_prefix(encode_json(a), encode_json(b)))
        if isinstance(found, int):
            return _in_nodes(a, b, start, found)
        start, a, b = found


def _members(
    start: int, keys: list[tuple[bytes, bytes]] | None, pairs: Iterable[tuple[Any, Any, Any]]
) -> int | tuple[int, Any, Any]:
    """Members in order: the offset where they differ (an int), or the differing pair to enter
    (its offset and its two values). When every common member is identical, one side has
    more: its "," differs from the other's closing bracket."""
    position = start + 1  # "{" or "["
    for index, (_, x, y) in enumerate(pairs):
        if index:
            position += 1  # ","
        if keys is not None:
            key_a, key_b = keys[index]
            if key_a != key_b:
                return position + common_prefix(key_a, key_b)
            position += len(key_a) + 1  # the key and ":"
        if not same_encoding(x, y):
            return position, x, y
        position += encoded_length(x)
    return position


def _in_strings(a: str, b: str, start: int) -> tuple[int, Window, Window]:
    at = common_prefix(a, b)
    inside = 0  # bytes the first differing characters' encodings share
    if at < len(a) and at < len(b):
        inside = common_prefix(encode_json(a[at])[1:-1], encode_json(b[at])[1:-1])
    offset = start + 1 + _string_bytes(a, 0, at) + inside
    low = max(at - _AROUND, 0)
    local = 1 + _string_bytes(a, low, at) + inside

    def shown(text: str) -> Window:
        return window(
            encode_json(text[low : at + 2 * _AROUND]), local, more_before=bool(start or low)
        )

    return offset, shown(a), shown(b)


def _in_nodes(a: Any, b: Any, start: int, offset: int) -> tuple[int, Window, Window]:
    def shown(value: Any) -> Window:
        return window(encode_json(value), offset - start, more_before=start > 0)

    return offset, shown(a), shown(b)
