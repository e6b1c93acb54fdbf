"""Cache markers set aside: what the prefix chain compares when a conversation moves its
breakpoint (moving a breakpoint forward is how a conversation keeps its cache).

`strip_pair` removes cache markers from both views except a TTL that differs where both mark the
same place, and takes a value in the API's shorthand on one side in its long form where that is
what the other side sends. `long_pair` does the shorthand part alone, markers kept (what `harness
diff` shows). `strip` removes the markers of one value. A conversation's repeated turns are paired
at once, compared and encoded in C; only the turns after them are walked.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Final

from harness._shared._views import CacheView, encode_json

__all__ = ["DEFAULT_TTL", "Shorthand", "long_pair", "strip", "strip_pair"]

DEFAULT_TTL: Final = "5m"

Shorthand = Callable[[Any], Any]


def strip_pair(
    a: CacheView,
    b: CacheView,
    markers: tuple[str, ...],
    shorthand: Shorthand | None = None,
) -> tuple[CacheView, CacheView]:
    """Both views without cache markers, except a TTL that differs where both mark a place. With
    `shorthand` (the provider's: `Provider.shorthand`), a value in the API's shorthand on one
    side whose long form is what the other side sends (Anthropic's `"content": "hi"` and
    `[{"type": "text", "text": "hi"}]`) is taken in its long form on both: one prefix."""
    if not markers and shorthand is None:
        return a, b
    pairs = {
        name: _pair(a.blocks.get(name, _NONE), b.blocks.get(name, _NONE), markers, shorthand)
        for name in [*a.blocks, *(n for n in b.blocks if n not in a.blocks)]
    }
    # each view keeps its own block order (its cache order): a block only `b` has stays where
    # `b` sends it, before the blocks it precedes
    blocks_a = {name: pairs[name][0] for name in a.blocks}
    blocks_b = {name: pairs[name][1] for name in b.blocks}
    return (
        CacheView(settings=a.settings, blocks=blocks_a, provider=a.provider),
        CacheView(settings=b.settings, blocks=blocks_b, provider=b.provider),
    )


_NONE: Final = object()


def long_pair(
    a: CacheView, b: CacheView, markers: tuple[str, ...], shorthand: Shorthand
) -> tuple[CacheView, CacheView]:
    """Both views with a shorthand on one side in its long form where that is what the other
    side sends, markers kept (what `harness diff` shows when nothing cached is lost: the real
    difference, not the API's two spellings of one block)."""

    def walk(x: Any, y: Any) -> tuple[Any, Any]:
        x, y = _long_forms(x, y, markers, shorthand)
        if isinstance(x, dict) and isinstance(y, dict):
            pairs = {key: walk(x[key], y[key]) for key in x if key in y}
            return (
                {key: pairs[key][0] if key in pairs else value for key, value in x.items()},
                {key: pairs[key][1] if key in pairs else value for key, value in y.items()},
            )
        if isinstance(x, list) and isinstance(y, list):
            pairs_ = [walk(p, q) for p, q in zip(x, y, strict=False)]
            n = len(pairs_)
            return [p for p, _ in pairs_] + x[n:], [q for _, q in pairs_] + y[n:]
        return x, y

    blocks = {name: walk(a.blocks[name], b.blocks[name]) for name in a.blocks if name in b.blocks}
    return (
        CacheView(
            settings=a.settings,
            blocks={k: blocks[k][0] if k in blocks else v for k, v in a.blocks.items()},
            provider=a.provider,
        ),
        CacheView(
            settings=b.settings,
            blocks={k: blocks[k][1] if k in blocks else v for k, v in b.blocks.items()},
            provider=b.provider,
        ),
    )


def _unmarked_equal(a: Any, b: Any, markers: tuple[str, ...]) -> bool:
    """Whether `a` and `b` are equal values with no marker key anywhere in them: then pairing
    them changes nothing, and each is returned as it is (its own key order, its own numbers'
    spelling, so the encoded comparison after still sees any difference the bytes hold). The
    equality and the encoding run in C: a long conversation's repeated turns cost no walk."""
    if not isinstance(a, dict | list) or type(a) is not type(b) or a != b:
        return False
    return not _holds_marker(a, markers)


def _holds_marker(value: Any, markers: tuple[str, ...]) -> bool:
    """Whether a marker key is anywhere in `value`: its JSON (`"key"`) is in the encoding
    wherever the key is, and the encoding runs in C."""
    encoded = encode_json(value)
    return any(encode_json(key) in encoded for key in markers)


def _pair(
    a: Any, b: Any, markers: tuple[str, ...], shorthand: Shorthand | None = None
) -> tuple[Any, Any]:
    if _unmarked_equal(a, b, markers):
        return a, b
    if shorthand is not None:
        a, b = _long_forms(a, b, markers, shorthand)
    if isinstance(a, dict) and isinstance(b, dict):
        # Each side keeps its own key order: the provider caches the bytes as sent, so two
        # objects whose keys come in another order are another prefix (defect 2, issue 24:
        # rebuilding both in `a`'s order hid a swapped `properties` from the gate).
        paired: dict[str, tuple[Any, Any]] = {}
        for key in [*a, *(k for k in b if k not in a)]:
            if key in markers:
                ttl_a, ttl_b = _ttl(a.get(key)), _ttl(b.get(key))
                if key in a and key in b and ttl_a != ttl_b:
                    paired[key] = ({"ttl": ttl_a}, {"ttl": ttl_b})
                continue
            paired[key] = _pair(a.get(key, _NONE), b.get(key, _NONE), markers, shorthand)
        out_a = {key: paired[key][0] for key in a if key in paired}
        out_b = {key: paired[key][1] for key in b if key in paired}
        return out_a, out_b
    if isinstance(a, list) and isinstance(b, list):
        same = _unmarked_run(a, b, markers)
        if same:  # the turns both sides repeat, then the new ones: a turn's work, not a walk
            rest_a, rest_b = _pair_items(a[same:], b[same:], markers, shorthand)
            return a[:same] + rest_a, b[:same] + rest_b
        return _pair_items(a, b, markers, shorthand)
    return strip(a, markers), strip(b, markers)


def _unmarked_run(a: list[Any], b: list[Any], markers: tuple[str, ...]) -> int:
    """How many items the two lists begin with that are equal and hold no marker key: each
    side's own, as `_unmarked_equal` keeps them. Found by comparing and encoding slices (in C,
    a conversation's repeated turns at once), the longest run by halving where a slice fails."""
    length = min(len(a), len(b))
    if not length:
        return 0

    def unmarked(count: int) -> bool:
        return not _holds_marker(a[:count], markers)

    same = _longest(length, lambda count: a[:count] == b[:count])
    return same if not same or unmarked(same) else _longest(same - 1, unmarked)


def _longest(length: int, holds: Callable[[int], bool]) -> int:
    """The largest count up to `length` for which `holds` (true of 0, and of every count below
    one it is true of)."""
    if holds(length):
        return length
    low, high = 0, length  # holds(low), not holds(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low


def _pair_items(
    a: list[Any], b: list[Any], markers: tuple[str, ...], shorthand: Shorthand | None
) -> tuple[list[Any], list[Any]]:
    items_a = [item for item in a if not _only_marker(item, markers)]
    items_b = [item for item in b if not _only_marker(item, markers)]
    pairs = [
        _pair(x, y, markers, shorthand)
        for x, y in itertools.zip_longest(items_a, items_b, fillvalue=_NONE)
    ]
    listed_a = [x for x, _ in pairs[: len(items_a)]]
    listed_b = [y for _, y in pairs[: len(items_b)]]
    return _ttl_points(a, b, markers, listed_a, listed_b)


def _points(items: list[Any], markers: tuple[str, ...]) -> dict[int, tuple[str, str]]:
    """The marker-only items of a list (Bedrock's cache points), by how many other items come
    before them: (marker key, TTL)."""
    found: dict[int, tuple[str, str]] = {}
    seen = 0
    for item in items:
        if _only_marker(item, markers):
            key = next(iter(item))
            found[seen] = (key, _ttl(item[key]))
        else:
            seen += 1
    return found


def _ttl_points(
    a: list[Any], b: list[Any], markers: tuple[str, ...], out_a: list[Any], out_b: list[Any]
) -> tuple[list[Any], list[Any]]:
    """A cache point of its own (Bedrock's `cachePoint` block) at the same place in both lists
    with another time to live is another entry: it stays on both sides as `{key: {"ttl": ...}}`
    (as a marker key's TTL does), every other cache point set aside."""
    points_a, points_b = _points(a, markers), _points(b, markers)
    differ = sorted(
        at
        for at in points_a.keys() & points_b.keys()
        if points_a[at][1] != points_b[at][1] and points_a[at][0] == points_b[at][0]
    )
    for at in reversed(differ):
        key = points_a[at][0]
        out_a.insert(at, {key: {"ttl": points_a[at][1]}})
        out_b.insert(at, {key: {"ttl": points_b[at][1]}})
    return out_a, out_b


def _long_forms(a: Any, b: Any, markers: tuple[str, ...], shorthand: Shorthand) -> tuple[Any, Any]:
    """`a` and `b`, a shorthand on one side replaced by its long form when that is what the
    other side holds (markers aside); otherwise as they are, so a real change is reported in
    the form it was sent."""
    if isinstance(a, str) and isinstance(b, list):
        long = shorthand(a)
        if long is not None and strip(long, markers) == strip(b, markers):
            return long, b
    elif isinstance(b, str) and isinstance(a, list):
        long = shorthand(b)
        if long is not None and strip(long, markers) == strip(a, markers):
            return a, long
    return a, b


def strip(value: Any, markers: tuple[str, ...]) -> Any:
    """`value` without its cache markers. A value whose JSON holds no marker key (`"key"` is in
    the encoding wherever the key is) is returned as it is: the encoding runs in C, the walk
    only where a marker is (a long conversation's turns are mostly unmarked)."""
    if not markers or not isinstance(value, dict | list):
        return value
    if not _holds_marker(value, markers):
        return value
    return _strip(value, markers)


def _strip(value: Any, markers: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, markers) for k, v in value.items() if k not in markers}
    if isinstance(value, list):
        return [_strip(item, markers) for item in value if not _only_marker(item, markers)]
    return value


def _only_marker(item: Any, markers: tuple[str, ...]) -> bool:
    """A list element that is nothing but a marker (Bedrock's `{"cachePoint": {...}}`)."""
    return isinstance(item, dict) and bool(item) and all(key in markers for key in item)


def _ttl(marker: Any) -> str:
    ttl = marker.get("ttl") if isinstance(marker, dict) else None
    return ttl if isinstance(ttl, str) else DEFAULT_TTL
