"""Where two values first differ: the byte offset, the JSON pointer, and an excerpt around it.

This is the one first-difference helper of the harness. `first_byte_difference` is used by the
comparator, by the capture session (two request bodies) and by the proof (two bodies as sent);
`first_difference` and `walk` give the JSON pointer that agrees with that byte. It compares in
chunks (memcmp), so two 50 MB values cost milliseconds, not a copy per halving.

An excerpt never shows a secret, whole or in part: the text around it is redacted before it is
cut (`harness._secrets.redact_text`), and `around` does the same for two differing strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar

from harness._secret_shapes import SECRET_PATTERNS, find_secrets
from harness._secrets import REDACTED, redact_text
from harness._views import encode_json, plain
from harness.drift._wording import ABSENT

_Seq = TypeVar("_Seq", str, bytes)

MARKER: Final = "<<HERE>>"  # where the difference starts, inside an excerpt
_CONTEXT_BEFORE: Final = 20
_CONTEXT_SIZE: Final = 80


_CHUNK: Final = 1 << 16
_REDACT_REACH: Final = 16 * 1024  # how far around an excerpt a secret is looked for


def first_byte_difference(a: bytes, b: bytes) -> int:
    """The length of the common prefix of `a` and `b`: the offset of the first differing byte."""
    return common_prefix(a, b)


def common_prefix(a: _Seq, b: _Seq) -> int:
    """The length of the common prefix of two strings or two byte strings."""
    limit = min(len(a), len(b))
    start = 0
    while start < limit and a[start : start + _CHUNK] == b[start : start + _CHUNK]:
        start += _CHUNK
    if start >= limit:
        return limit
    low, high = start, min(start + _CHUNK, limit)  # a[:low] == b[:low], they differ before high
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low if a[low : low + 1] != b[low : low + 1] else high


def first_difference(a: Any, b: Any) -> str | None:
    """The JSON pointer (RFC 6901) of the first difference in encoding order; None if equal.

    Both values are walked in the order they encode. In two objects, members are compared index
    by index: the same key with a different value descends into that value; a different key at
    the same index names the member when it exists on one side only (an insertion or a removal),
    and otherwise (a rename, a reorder) points at the object itself, whose key sequence is what
    differs. In two arrays, elements are compared in order. When one side runs out of members
    first, the pointer names the first extra or missing one. Anything else that differs (types,
    scalars, strings) is the difference itself. The result agrees with the first differing byte
    of the two encodings: that byte lies inside the encoding of the member the pointer names (its
    separator and key included), on one side or both, and every member before it encodes
    identically.
    """
    path = walk(plain(a), plain(b))
    return None if path is None else pointer_of(path)


def walk(a: Any, b: Any) -> list[str] | None:
    """The path of the first difference of two plain values in encoding order (see above)."""
    if same_encoding(a, b):
        return None
    path: list[str] = []
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            keys_a, keys_b = list(a), list(b)
            common = min(len(keys_a), len(keys_b))
            step: str | None = None
            for index in range(common):
                key_a, key_b = keys_a[index], keys_b[index]
                if key_a != key_b:
                    if key_a not in b and key_b in a:
                        return [*path, key_a]  # removed on side b
                    if key_b not in a and key_a in b:
                        return [*path, key_b]  # inserted on side b
                    return path  # renamed or reordered: the object's key sequence differs
                if not same_encoding(a[key_a], b[key_b]):
                    step = key_a
                    break
            if step is None:
                longer = keys_a if len(keys_a) > len(keys_b) else keys_b
                return [*path, longer[common]]
            path.append(step)
            a, b = a[step], b[step]
        elif isinstance(a, list) and isinstance(b, list):
            common = min(len(a), len(b))
            position = next((i for i in range(common) if not same_encoding(a[i], b[i])), None)
            if position is None:
                return [*path, str(common)]
            path.append(str(position))
            a, b = a[position], b[position]
        else:
            return path


def same_encoding(a: Any, b: Any) -> bool:
    """Whether two plain values encode to the same bytes. Unequal values never do; two equal
    strings always do (no encoding needed); equal containers may not (key order, 1 and 1.0)."""
    if type(a) is not type(b) or a != b:
        return False
    if isinstance(a, str):
        return True
    return encode_json(a) == encode_json(b)


def resolve(value: Any, path: Sequence[str]) -> Any:
    """The member a path names, or ABSENT."""
    for token in path:
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return ABSENT
    return value


def pointer_of(path: Sequence[str]) -> str:
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in path)


def excerpt(data: bytes, offset: int) -> str:
    """About 80 bytes around `offset`, with MARKER where the difference starts; a secret near
    it is shown as `[redacted]` (see the module doc)."""
    mark = min(max(offset, 0), len(data))
    reach = data[max(mark - _REDACT_REACH, 0) : mark + _REDACT_REACH].decode("utf-8", "replace")
    if find_secrets(reach, SECRET_PATTERNS):
        return _redacted_excerpt(data, mark)
    while 0 < mark < len(data) and _continuation(data[mark]):
        mark -= 1  # the marker goes before the character the differing byte belongs to
    start = max(0, mark - _CONTEXT_BEFORE)
    while 0 < start < len(data) and _continuation(data[start]):
        start -= 1
    end = min(len(data), start + _CONTEXT_SIZE)
    end = max(end, mark)
    while end < len(data) and _continuation(data[end]):
        end += 1
    before = data[start:mark].decode("utf-8", "replace")
    after = data[mark:end].decode("utf-8", "replace")
    return ("…" if start > 0 else "") + before + MARKER + after + ("…" if end < len(data) else "")


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _redacted_excerpt(data: bytes, mark: int) -> str:
    """`excerpt` in characters, on the text around `mark` with its secrets redacted first."""
    start = max(mark - _REDACT_REACH, 0)
    before = data[start:mark].decode("utf-8", "replace")
    after = data[mark : mark + _REDACT_REACH].decode("utf-8", "replace")
    text, at = _redact_marking(before + after, len(before))
    head = max(0, at - _CONTEXT_BEFORE)
    tail = min(len(text), head + _CONTEXT_SIZE)
    shown = text[head:at] + MARKER + text[at : max(tail, at)]
    more_before = head > 0 or start > 0
    more_after = tail < len(text) or mark + _REDACT_REACH < len(data)
    return ("…" if more_before else "") + shown + ("…" if more_after else "")


def _redact_marking(text: str, at: int) -> tuple[str, int]:
    """`text` with its secrets replaced by REDACTED, and where position `at` went (a secret
    holding `at` is replaced whole, and `at` moves to its start)."""
    pieces: list[str] = []
    position = 0
    moved = at
    for hit in find_secrets(text, SECRET_PATTERNS):
        start, end = hit.cut
        if start < position or end <= start:
            continue
        pieces += [text[position:start], REDACTED]
        if start < at < end:
            moved = sum(map(len, pieces[:-1]))
        elif end <= at:
            moved -= (end - start) - len(REDACTED)
        position = end
    pieces.append(text[position:])
    return "".join(pieces), moved


def around(a: str, b: str, width: int = 60) -> tuple[str, str]:
    """Two differing strings cut to the region around their first difference (not both at the
    same prefix), with MARKER there; redacted before they are cut. Strings that hold MARKER
    already (a report's own regions) are cut around it, not marked again."""
    if MARKER in a and MARKER in b:
        return _cut(a, a.index(MARKER), width, mark=False), _cut(b, b.index(MARKER), width, False)
    at = common_prefix(a, b)
    start = max(at - _REDACT_REACH, 0)
    shift = start
    a_window, b_window = a[start : at + _REDACT_REACH], b[start : at + _REDACT_REACH]
    a_shown, b_shown = redact_text(a_window), redact_text(b_window)
    if len(a) <= width and len(b) <= width:
        return a_shown, b_shown
    at = common_prefix(a_shown, b_shown)
    return (
        _cut(a_shown, at, width, True, shift > 0, len(a) > start + len(a_window)),
        _cut(b_shown, at, width, True, shift > 0, len(b) > start + len(b_window)),
    )


def _cut(
    text: str, at: int, width: int, mark: bool, before: bool = False, after: bool = False
) -> str:
    head = max(0, at - width // 3)
    tail = min(len(text), max(head + width, at))
    middle = text[head:at] + (MARKER if mark else "") + text[at:tail]
    return ("…" if head > 0 or before else "") + middle + ("…" if tail < len(text) or after else "")
