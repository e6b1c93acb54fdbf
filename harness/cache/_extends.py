"""What "extends" means to the prefix chain: cache markers set aside, a later request cut to the
shape of the earlier one's prefix, a growing message's text, an opaque body.

`cut_like` cuts a later view to the blocks of an earlier prefix, the last block no longer than the
prefix's (the conversation may have grown), and the last message's text to the earlier one's
where it only grew at its end (the cache holds every byte before it: a conversation inlined into
one growing message, DSPy's ReAct). `strip_pair` removes cache markers from both sides (moving a
breakpoint forward is how a conversation keeps its cache) except a TTL that differs where both
mark the same place. `opaque_cut` is `harness.providers._opaque`'s rule for a body no provider
claims. `message_grew`, `message_edited`, `message_text`, `head_of` and `words_of` serve the
gate's rules on one-message conversations (a growing message, one whose middle was edited; a head
whose words moved).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any, Final

from harness._shared._views import CacheView, common_prefix, encode_json
from harness.providers._base import role
from harness.providers._opaque import BODY, extends

__all__ = [
    "DEFAULT_TTL",
    "cut_like",
    "head_of",
    "message_edited",
    "message_grew",
    "message_text",
    "opaque_cut",
    "strip",
    "strip_pair",
    "text_grew",
    "words_of",
]

DEFAULT_TTL: Final = "5m"
# The start a growing message must share with the earlier one for an insertion to count.
_SHARED: Final = 16


# A growing message whose first line was rewritten still continues when the rest of it, this
# long at least, is found again in the later message.
_REWRITTEN_REST: Final = 64


def message_grew(a: Any, b: Any) -> bool:
    """Whether message `b` continues message `a` as one growing message (DSPy's ReAct): its text
    grew from `a`'s (`text_grew`: more at the end, or inserted before a kept tail), or holds all
    of `a`'s text but its first line (a rewritten start: the gate judges it, and it breaks)."""
    if role(a) != role(b):
        return False
    text_a, text_b = message_text(a), message_text(b)
    if text_a is None or text_b is None or len(text_b) <= len(text_a):
        return False
    if text_grew(text_a, text_b, inserted=True):
        return True
    rest = text_a.partition("\n")[2]
    return len(rest) >= _REWRITTEN_REST and rest in text_b


def message_edited(a: Any, b: Any) -> bool:
    """Whether message `b` continues message `a` as one growing message whose middle was edited
    (a step rewritten, an observation rendered anew, a step dropped) before a new step was
    added: `b` is longer, starts with `a`'s opening (its first paragraph: DSPy's question) and
    `_SHARED` characters or more, then differs, and still holds the last `_REWRITTEN_REST`
    characters of what `a` has before the end both share. A new question differs within its
    opening. An edit in `a`'s opening (the rewritten start `message_grew` takes), in its last
    step, or in a message too short to keep that much is not told from a new question."""
    if role(a) != role(b):
        return False
    text_a, text_b = message_text(a), message_text(b)
    if text_a is None or text_b is None or len(text_b) <= len(text_a):
        return False
    start = common_prefix(text_a, text_b)
    if start < max(_SHARED, _opening(text_a)):
        return False
    rest_a, rest_b = text_a[start:], text_b[start:]
    end = common_prefix(rest_a[::-1], rest_b[::-1])
    middle_a, middle_b = rest_a[: len(rest_a) - end], rest_b[: len(rest_b) - end]
    kept = middle_a[-_REWRITTEN_REST:]
    return len(kept) == _REWRITTEN_REST and kept in middle_b


def _opening(text: str) -> int:
    """How long a growing message's opening is: its first paragraph (DSPy's first input field,
    `[[ ## question ## ]]` and the question), else its first line."""
    for mark in ("\n\n", "\n"):
        found = text.find(mark)
        if found >= 0:
            return found + len(mark)
    return len(text)


def head_of(view: CacheView, conversation: tuple[str, ...]) -> bytes:
    """What comes before the conversation: the settings and every other block, encoded."""
    blocks = {k: v for k, v in view.blocks.items() if k not in conversation}
    return encode_json({"settings": view.settings, **blocks})


def words_of(encoded: bytes) -> list[bytes]:
    """The words of an encoding, sorted: two heads that hold the same words in another order
    (tools moved, however a prompt lists them: `['search', 'lookup']`, `search; lookup`,
    numbered lines) have the same."""
    return sorted(word for word in re.split(rb"[^A-Za-z0-9_]+", encoded) if word)


def message_text(message: Any) -> str | None:
    """A message's text when it is one text: its `content` string, or its one text part (Gemini's
    `parts`, a content list of one block); a bare string is its own text. A message of several
    blocks has none here (a conversation that adds blocks is not one growing text)."""
    if isinstance(message, str):
        return message
    if not isinstance(message, dict):
        return None
    content = message.get("content", message.get("parts"))
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if isinstance(text, str) else None
    return None


def opaque_cut(prefix: CacheView, view: CacheView) -> CacheView:
    """An opaque body cut to the earlier one's shape where it may have grown (`_opaque`)."""
    if BODY not in prefix.blocks or BODY not in view.blocks:
        return view
    body = extends(prefix.blocks[BODY], view.blocks[BODY])
    return CacheView(settings=view.settings, blocks={BODY: body}, provider=view.provider)


def cut_like(
    prefix: CacheView,
    view: CacheView,
    *,
    cut_content: bool,
    grows: bool = True,
    text: bool = True,
) -> CacheView:
    """`view` cut to the shape of `prefix`: its blocks, and when the last one `grows` (the
    conversation, or the block a breakpoint cut the prefix in) and is a list, that list no longer
    than prefix's. A string is never cut: a system prompt that gained text is not the earlier one
    followed by more turns (defect 3, issue 24); a growing message's text is judged inside the
    conversation list (`_grown_text`), and only where the provider caches an exact prefix of the
    prompt (`text`): a provider that keys its cache by content block (Anthropic, Bedrock) loses
    the entry of a block whose text grew, so there it is a change like any other."""
    blocks: dict[str, Any] = {}
    names = list(prefix.blocks)
    order = list(view.blocks)
    shared = [name for name in order if name in prefix.blocks]
    # a block the prefix lacks that comes before the prefix's end (tools added mid-conversation,
    # a response format) is kept, so it is seen as the change it is; only what follows is cut
    through = order.index(shared[-1]) + 1 if shared else 0
    for name in order[:through]:
        if name not in prefix.blocks:
            blocks[name] = view.blocks[name]
            continue
        value, shape = view.blocks[name], prefix.blocks[name]
        last = grows and name == names[-1]
        if last and isinstance(value, list) and isinstance(shape, list):
            value = value[: len(shape)]
            if cut_content and value and shape:
                value = [*value[:-1], _cut_message(value[-1], shape[-1])]
            if text and value and shape and len(value) == len(shape):
                grown = _grown_text(value[-1], shape[-1], inserted=len(shape) == 1)
                value = [*value[:-1], grown]
        blocks[name] = value
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def text_grew(old: str, new: str, *, inserted: bool) -> bool:
    """Whether `new` is `old` grown: `old` then more (the cache holds all of `old`), or, when
    `inserted`, `old` with text inserted after a shared start of `_SHARED` characters or more and
    its tail kept at the end (DSPy's ReAct adds each step to the trajectory before a fixed
    instruction tail: the cache holds everything up to the insertion; only that tail, the same
    every step and bounded, is read again)."""
    if new.startswith(old):
        return True
    if not inserted or len(new) <= len(old):
        return False
    shared = common_prefix(old, new)
    return shared >= _SHARED and new.endswith(old[shared:])


def _grown_text(message: Any, shape: Any, *, inserted: bool) -> Any:
    """The last message cut to the earlier one's text where it only grew (`text_grew`): the
    earlier bytes are all there, the cache holds them."""
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    for key in ("content", "parts"):
        value, cut = message.get(key), shape.get(key)
        if (
            isinstance(value, str)
            and isinstance(cut, str)
            and text_grew(cut, value, inserted=inserted)
        ):
            return {**message, key: cut}
        if isinstance(value, list) and isinstance(cut, list) and value and len(value) == len(cut):
            last, last_cut = value[-1], cut[-1]
            text, text_cut = _member(last, "text"), _member(last_cut, "text")
            texts = isinstance(text, str) and isinstance(text_cut, str)
            if texts and text_grew(text_cut, text, inserted=inserted):
                return {**message, key: [*value[:-1], {**last, "text": text_cut}]}
    return message


def _member(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _cut_message(message: Any, shape: Any) -> Any:
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    content, cut = message.get("content"), shape.get("content")
    if isinstance(content, list) and isinstance(cut, list) and len(content) > len(cut):
        return {**message, "content": content[: len(cut)]}
    return message


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
    encoded = encode_json(a)
    return not any(b'"' + key.encode() + b'"' in encoded for key in markers)


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
        encoded = encode_json(a[:count])
        return not any(b'"' + key.encode() + b'"' in encoded for key in markers)

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
    encoded = encode_json(value)
    if not any(encode_json(key) in encoded for key in markers):
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
