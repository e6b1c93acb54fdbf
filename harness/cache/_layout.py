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
from typing import Any, Final, NamedTuple

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
    _digests: list[bytes] = field(default_factory=list)
    _sizes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        running = hashlib.sha256(self.settings).digest()
        self._digests = [running]
        self._sizes = [0]
        pending = sorted(self.late)
        total = 0
        for unit in self.units:
            while pending and rank(unit.block) >= pending[0][0]:
                running = hashlib.sha256(running + pending.pop(0)[1]).digest()
            running = hashlib.sha256(running + unit.text).digest()
            total += unit.size
            self._digests.append(running)
            self._sizes.append(total)

    def digest(self, boundary: int) -> bytes:
        """The digest of the settings and the first `boundary` units."""
        return self._digests[min(max(boundary, 0), len(self.units))]

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
        # Every request of a conversation repeats its tools and system: a block whose bytes were
        # laid out before is taken as it was (its units are immutable), not walked again.
        if name in CONVERSATION:  # a conversation's block differs in every request
            block = _block(name, value, keys, needles, longhand)
        else:
            seen = (provider, keys, name, encode_json(value))
            block = _blocks.get(seen) or _remember(
                seen, _block(name, value, keys, needles, longhand)
            )
        found_units, found_marks, found_count = block
        offset = len(units)
        units += found_units
        marks += [mark._replace(after=mark.after + offset) for mark in found_marks]
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


_Block = tuple[tuple[Unit, ...], tuple[Mark, ...], int]
_Seen = tuple[object, tuple[str, ...], str, bytes]  # the provider (its shorthand), keys, block
_blocks: dict[_Seen, _Block] = {}
_MAX_BLOCKS: Final = 256


def _remember(key: _Seen, block: _Block) -> _Block:
    if len(_blocks) >= _MAX_BLOCKS:
        _blocks.pop(next(iter(_blocks)))  # the oldest: a bounded memory, first in first out
    _blocks[key] = block
    return block


def _block(
    name: str,
    value: Any,
    keys: tuple[str, ...],
    needles: tuple[bytes, ...],
    longhand: Callable[[Any], Any],
) -> _Block:
    """The units of one block, the marks among them (`after` counted from the block's start)
    and how many markers it holds."""
    units: list[Unit] = []
    marks: list[Mark] = []
    count = 0
    conversation = name in CONVERSATION
    for pointer, item, holder in _items(name, value, longhand):
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
                name,
                len(text),
                conversation,
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
) -> Iterator[tuple[str, Any, Any]]:
    """`(pointer, item, holder)` for every unit of a block; `holder` is the message (less its
    content) around a message's first content block, else None. `longhand` gives a shorthand's
    long form (a string content's one text block)."""
    base = "/" + name
    if not isinstance(value, list | dict):
        long = longhand(value)
        value = long if isinstance(long, list) else value
    if isinstance(value, list):
        for index, item in enumerate(value):
            inner = _inner(item, longhand)
            if inner is None:
                yield f"{base}/{index}", item, None
            else:
                key, parts = inner
                holder = {k: v for k, v in item.items() if k != key}
                for position, part in enumerate(parts):
                    yield f"{base}/{index}/{key}/{position}", part, holder if not position else None
    elif isinstance(value, dict) and _inner(value) is not None:
        key, parts = _inner(value) or ("", [])
        for position, part in enumerate(parts):
            yield f"{base}/{key}/{position}", part, None
    else:
        yield base, value, None


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
