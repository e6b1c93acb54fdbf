"""A request as a provider's cache counts it: blocks in cache order, and the breakpoints between.

The rules count what the providers count: a breakpoint looks back a number of blocks (Anthropic:
about 20), a request carries at most so many markers, a prefix is cached only from so many
tokens. `layout(split)` reads a request's cache view (`RequestSplit.view`: settings, then the
prompt blocks in cache order) as a list of `Unit`s, one per block the provider counts: a tool, a
system block (a plain-string system is one), a message's content block (a plain-string content is
one), a Responses input item, a Gemini part. A `Mark` is a breakpoint: it sits after the unit it
marks (Anthropic's `cache_control`, OpenAI's `prompt_cache_breakpoint`), or after the unit before
it for a marker that is a block of its own (Bedrock's `cachePoint`). A top-level automatic marker
is added by the caller (it needs the body).

Each unit keeps its size (its JSON without markers, as the tokens are estimated from) and a
running digest of everything up to it, so two requests share a prefix up to boundary `k` exactly
when their digests there are equal (`Layout.digest(k)`); the settings are part of the first one,
except those that key only the conversation (Anthropic's `tool_choice`, `thinking`), which join
at the conversation's first unit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import attrgetter
from typing import Any, Final, NamedTuple

import msgspec

from harness._shared._reasons import GENERIC, Vocabulary, vocabulary_for
from harness._shared._views import RequestSplit, encode_json
from harness.providers._registry import provider_named

__all__ = ["Layout", "Mark", "Unit", "layout", "marker_count"]

# Blocks whose items hold a message's content (`content`) or a Gemini content's `parts`.
_INNER: Final = ("content", "parts")


class Unit(NamedTuple):
    """One block the provider counts: where it is (a JSON pointer into the view's blocks), its
    block (`tools`, `system`, `messages`...), its size in bytes without markers, and whether it is
    part of the conversation (the block that grows turn by turn)."""

    pointer: str
    block: str
    size: int
    conversation: bool
    text: bytes
    kind: str = ""  # the block's `type` (`text`, `tool_use`...) where it names one


_SIZE: Final = attrgetter("size")


class Mark(NamedTuple):
    """A breakpoint after `after` units (a boundary), its time to live if it names one, where its
    marker is, and whether it is the top-level automatic one."""

    after: int
    ttl: str | None
    pointer: str
    automatic: bool = False


@dataclass
class Layout:
    """A request's units and marks, and the digests and sizes of its prefixes."""

    units: list[Unit]
    marks: list[Mark]
    settings: bytes
    markers: int = 0  # every marker in the blocks, nested ones included (what a limit counts)
    # settings that key the cache from a later level on (Anthropic's tool_choice: the messages;
    # speed: the system), by the rank of that level (`rank`): folded in before its first unit
    late: tuple[tuple[int, bytes], ...] = ()
    _digests: list[bytes] = field(default_factory=list, compare=False, repr=False)
    _sizes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sizes = list(accumulate(map(_SIZE, self.units), initial=0))

    def digest(self, boundary: int) -> bytes:
        """The digest of the settings and the first `boundary` units (made on the first ask: a
        request that writes and reads no cache entry needs none)."""
        if not self._digests:
            self._digests = self._chain()
        return self._digests[min(max(boundary, 0), len(self.units))]

    def _chain(self) -> list[bytes]:
        running = hashlib.sha256(self.settings).digest()
        digests = [running]
        pending = sorted(self.late)
        ranks: dict[str, int] = {}
        for unit in self.units:
            if pending:
                at = ranks.get(unit.block)
                if at is None:
                    at = ranks[unit.block] = rank(unit.block)
                while pending and at >= pending[0][0]:
                    running = hashlib.sha256(running + pending.pop(0)[1]).digest()
            running = _chained(running, unit.text)
            digests.append(running)
        return digests

    def size(self, boundary: int) -> int:
        """The bytes of the first `boundary` units (what a prefix's tokens are estimated from)."""
        return self._sizes[min(max(boundary, 0), len(self.units))]

    @property
    def total(self) -> int:
        return self._sizes[-1]

    def pointer(self, boundary: int) -> str:
        """Where the prefix of `boundary` units ends: its last unit's pointer."""
        if boundary <= 0 or not self.units:
            return "(the start)"
        return self.units[min(boundary, len(self.units)) - 1].pointer

    def positions(self, runs: Sequence[str] = ()) -> list[int]:
        """The lookback positions before each boundary (`[0]` is 0): one per unit, except that a
        run of consecutive units of one kind in `runs` counts once (the Claude API counts a run
        of `tool_use` blocks, and one of `tool_result` blocks, as one position)."""
        counted = [0]
        previous = ""
        for unit in self.units:
            joined = unit.kind in runs and unit.kind == previous
            counted.append(counted[-1] + (0 if joined else 1))
            previous = unit.kind
        return counted

    def stable(self) -> Iterator[Unit]:
        """The units before the conversation (tools, system): what every request repeats."""
        return (unit for unit in self.units if not unit.conversation)


CONVERSATION: Final = frozenset({"messages", "input", "contents"})


def layout(
    split: RequestSplit, markers: Sequence[str] = (), vocabulary: Vocabulary | None = None
) -> Layout:
    """The units and marks of a request's view; `markers` are the keys that mark a breakpoint
    (default: the split's own). A value in the API's documented shorthand is counted in its
    long form (Anthropic: a string `content` or `system` is one text block), so both forms have
    the same digests. `vocabulary` (the provider's words for the request's model) says from
    which level each setting keys the cache."""
    keys = tuple(markers or split.markers)
    # A marker key is in a value's JSON as `"key"` wherever it is: a value whose JSON holds none
    # is its own stripped form (most units: a tool, a message's text), encoded once in C.
    needles = tuple(encode_json(key) for key in keys)
    units: list[Unit] = []
    marks: list[Mark] = []
    count = 0
    provider = provider_named(split.provider)
    longhand = provider.shorthand if provider is not None else _no_shorthand
    for name, value in split.view.blocks.items():
        for found_units, found_marks, found_count in _pieces(
            name, value, (provider, keys), needles, longhand
        ):
            if found_marks:
                offset = len(units)
                marks += [mark._replace(after=mark.after + offset) for mark in found_marks]
            units += found_units
            count += found_count
    vocabulary = vocabulary or vocabulary_for(split.provider)
    settings = split.view.settings
    by_rank: dict[int, dict[str, Any]] = {}
    early: dict[str, Any] = {}
    for key, value in settings.items():
        level = vocabulary.setting(key).level
        if level is None or rank(level) == 0:
            early[key] = value
        else:
            by_rank.setdefault(rank(level), {})[key] = value
    late = tuple((at, encode_json(found)) for at, found in sorted(by_rank.items()))
    return Layout(units, marks, encode_json(early), count, late=late)


# -- what was laid out before ---------------------------------------------------------------------
#
# A conversation's requests repeat each other: the tools and system whole, and every message but
# the newest. A block (a message, for a conversation) is laid out from its JSON bytes, so the
# bytes are the key: the same bytes at the same place under the same provider and marker keys
# are the same units, whatever Python values spelt them (a tuple sent as a JSON array is that
# array). Units are immutable; a piece is taken as it was.

_Block = tuple[tuple[Unit, ...], tuple[Mark, ...], int]
_Scope = tuple[object, tuple[str, ...]]  # the provider (its shorthand) and the marker keys
_Seen = tuple[_Scope, str, int, bytes]  # the scope, the block, the message's place (-1: whole)
_blocks: dict[_Seen, _Block] = {}
_MAX_BLOCKS: Final = 4096
_decode: Final = msgspec.json.decode


def _pieces(
    name: str,
    value: Any,
    scope: _Scope,
    needles: tuple[bytes, ...],
    longhand: Callable[[Any], Any],
) -> Iterator[_Block]:
    """The block's units in pieces: a conversation's list message by message, any other block
    whole, each taken from what was laid out before when its bytes were."""
    keys = scope[1]
    if name in CONVERSATION and type(value) is list:
        for index, item in enumerate(value):
            seen = (scope, name, index, encode_json(item))
            found = _blocks.get(seen)
            if found is None:
                plain = _decode(seen[3])
                found = _remember(seen, _piece(_item(name, index, plain, longhand), keys, needles))
            yield found
        return
    seen = (scope, name, -1, encode_json(value))
    found = _blocks.get(seen)
    if found is None:
        plain = _decode(seen[3])
        found = _remember(seen, _piece(_items(name, plain, longhand), keys, needles))
    yield found


def _remember(key: _Seen, block: _Block) -> _Block:
    if len(_blocks) >= _MAX_BLOCKS:
        _blocks.pop(next(iter(_blocks)))  # the oldest: a bounded memory, first in first out
    _blocks[key] = block
    return block


_chain: dict[tuple[bytes, bytes], bytes] = {}
_MAX_CHAIN: Final = 65_536


def _chained(running: bytes, text: bytes) -> bytes:
    """`sha256(running + text)`: a unit's running digest, remembered by the digest before it and
    the unit's bytes (every request of a conversation repeats the same chain up to its newest
    turn)."""
    key = (running, text)
    found = _chain.get(key)
    if found is None:
        if len(_chain) >= _MAX_CHAIN:
            _chain.clear()
        found = _chain[key] = hashlib.sha256(running + text).digest()
    return found


def _piece(
    items: Iterator[tuple[str, str, Any, Any]],
    keys: tuple[str, ...],
    needles: tuple[bytes, ...],
) -> _Block:
    """The units of some items of one block, the marks among them (`after` counted from the
    first of them) and how many markers they hold."""
    units: list[Unit] = []
    marks: list[Mark] = []
    count = 0
    for block, pointer, item, holder in items:
        text = encode_json(item)
        found: list[str | None] = []
        if _may_mark(text, needles):
            if _only_marker(item, keys):  # a cache point block of its own: marks what precedes
                count += 1
                marks.append(Mark(len(units), _ttl(item, keys), pointer))
                continue
            found = _markers_in(item, keys)
            count += len(found)
            text = encode_json(_strip(item, keys))
        # the message around a first content block (its role) is part of the prefix too
        if holder is not None:
            around = encode_json(holder)
            if _may_mark(around, needles):
                around = encode_json(_strip(holder, keys))
            digest = around + text
        else:
            digest = text
        kind = item.get("type") if isinstance(item, dict) else None
        units.append(
            Unit(
                pointer,
                block,
                len(text),
                block in CONVERSATION,
                digest,
                kind if isinstance(kind, str) else "",
            )
        )
        if found:
            marks.append(Mark(len(units), found[-1], pointer))
    return tuple(units), tuple(marks), count


# The generic cache levels: a block's rank is that of the level its verdict word names (a
# provider's own block names, OpenAI's `instructions` or Gemini's `contents`, included); a block
# no level names (a response format) ranks with the tools, before the system.
_RANKS: Final = {"tools_changed": 0, "system_changed": 1, "messages_changed": 2}


def rank(block: str) -> int:
    """The rank of a block (or of a setting's level) in the cache order: tools, system, messages."""
    return _RANKS.get(GENERIC.block(block), 0)


def _may_mark(text: bytes, needles: Sequence[bytes]) -> bool:
    return any(needle in text for needle in needles)


def marker_count(layout_: Layout) -> int:
    return layout_.markers


def _no_shorthand(value: Any) -> Any:
    return None


def _items(
    name: str, value: Any, longhand: Callable[[Any], Any] = _no_shorthand
) -> Iterator[tuple[str, str, Any, Any]]:
    """`(block, pointer, item, holder)` for every unit of a block; `holder` is the message (less
    its content) around a message's first content block, else None. `longhand` gives a
    shorthand's long form (a string content's one text block)."""
    base = "/" + name
    if not isinstance(value, list | dict):
        long = longhand(value)
        value = long if isinstance(long, list) else value
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _item(name, index, item, longhand)
    elif isinstance(value, dict) and _inner(value) is not None:
        key, parts = _inner(value) or ("", [])
        for position, part in enumerate(parts):
            yield name, f"{base}/{key}/{position}", part, None
    else:
        yield name, base, value, None


def _item(
    name: str, index: int, item: Any, longhand: Callable[[Any], Any] = _no_shorthand
) -> Iterator[tuple[str, str, Any, Any]]:
    """The units of item `index` of a block that is a list (a message of a conversation)."""
    inner = _inner(item, longhand)
    if inner is None:
        yield name, f"/{name}/{index}", item, None
        return
    key, parts = inner
    holder = {k: v for k, v in item.items() if k != key}
    for position, part in enumerate(parts):
        yield name, f"/{name}/{index}/{key}/{position}", part, holder if not position else None


def _inner(
    item: Any, longhand: Callable[[Any], Any] = _no_shorthand
) -> tuple[str, list[Any]] | None:
    if isinstance(item, dict):
        for key in _INNER:
            parts = item.get(key)
            if isinstance(parts, str):
                long = longhand(parts)
                parts = long if isinstance(long, list) else parts
            if isinstance(parts, list) and parts:
                return key, parts
    return None


def _only_marker(item: Any, keys: Sequence[str]) -> bool:
    return isinstance(item, dict) and bool(item) and all(key in keys for key in item)


def _ttl(item: Any, keys: Sequence[str]) -> str | None:
    for key in keys:
        marker = item.get(key) if isinstance(item, dict) else None
        if isinstance(marker, dict) and isinstance(marker.get("ttl"), str):
            return str(marker["ttl"])
    return None


def _markers_in(value: Any, keys: Sequence[str], depth: int = 0) -> list[str | None]:
    """The TTL (or None) of every marker inside `value`, in document order (nested ones too:
    Anthropic counts a `cache_control` inside a tool result's content)."""
    if depth > 32 or not keys:
        return []
    found: list[str | None] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys:
                found.append(_ttl(value, (key,)))
            else:
                found += _markers_in(item, keys, depth + 1)
    elif isinstance(value, list):
        for item in value:
            found += _markers_in(item, keys, depth + 1)
    return found


def _strip(value: Any, keys: Sequence[str]) -> Any:
    if not keys:
        return value
    if isinstance(value, dict):
        return {k: _strip(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_strip(item, keys) for item in value if not _only_marker(item, keys)]
    return value
