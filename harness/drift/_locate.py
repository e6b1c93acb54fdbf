"""Where two values first differ: the byte offset, and the JSON pointer that agrees with it.

This is the one first-difference helper of the harness. `first_byte_difference` is used by the
comparator, by the capture session (two request bodies) and by the proof (two bodies as sent);
`first_difference` and `walk` give the JSON pointer that agrees with that byte. It compares in
chunks (memcmp), so two 50 MB values cost milliseconds, not a copy per halving. What is shown
around the difference is kept raw (`harness._shared._views.window`) and made into an excerpt when
printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness._shared._views import common_prefix, encode_json, plain
from harness.drift._wording import ABSENT


def first_byte_difference(a: bytes, b: bytes) -> int:
    """The length of the common prefix of `a` and `b`: the offset of the first differing byte."""
    return common_prefix(a, b)


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
