"""A conversation's running digests, and a memory that extends them instead of redoing them.

`running(value, ttls, needles)` reads a conversation block's JSON text (`messages`, `input` or
`contents`, markers in): its cache markers set aside (`harness.scan._markers.unmarked`), it is
cut into items and digested, one running XXH3 digest after each item (`DIGEST_SIZE` bytes each),
with the item count and the opening (the first item's bytes, or a plain string itself; None for
an empty list).

A session's requests repeat the conversation of the request before and add a turn or two, so
most of that work was done already. `Conversations` remembers, per session, the latest
conversation read: its text without markers (and without its closing bracket), the running
digest's state after its last item, and its digests. When the next request's text starts with
exactly those bytes and goes on after a comma, only the items after them are set free of
markers, cut and digested; the digests are those a full read gives, since a running digest after
the same bytes is the same, and markers are members of one item (an item that is only a marker
goes whole). Anything else (a marker left in an earlier item, another order, an edit) is read in
full. The memory is bounded (`_KEPT` bytes of text), oldest sessions forgotten first.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec
import xxhash

from harness.scan._markers import unmarked

__all__ = ["Conversation", "Conversations", "running"]

_items = msgspec.json.Decoder(list[msgspec.Raw])
_hash = xxhash.xxh3_64_digest
_SPACE: Final = b" \t\r\n"
_KEPT: Final = 32 << 20  # bytes of conversation text remembered, across sessions


class Conversation(NamedTuple):
    digests: bytes  # the running digest after each item
    items: int
    opening: bytes | None  # the first item's bytes (markers out), or a plain string itself


class _Known(NamedTuple):
    prefix: bytes  # the text without markers, up to (not with) its closing bracket
    state: Any  # the running digest after the last item (an xxh3_64 object, never updated)
    found: Conversation


class Conversations:
    """The latest conversation read per session (see the module doc)."""

    def __init__(self, kept: int = _KEPT) -> None:
        self._kept = kept
        self._size = 0
        self._known: dict[tuple[Any, ...], _Known] = {}

    def read(
        self, key: tuple[Any, ...], value: bytes, ttls: set[bytes], needles: tuple[bytes, ...]
    ) -> Conversation:
        """`running(value, ttls, needles)`, extending what `key` read last when it can."""
        known = self._known.pop(key, None)
        if known is not None:
            self._size -= len(known.prefix)
            extended = _extend(known, value, ttls, needles)
            if extended is not None:
                self._keep(key, extended)
                return extended.found
        text = unmarked(value, ttls, needles) if needles else value
        found, state = _read(text)
        if state is not None and text[-1:] == b"]":
            self._keep(key, _Known(text[:-1], state, found))
        return found

    def _keep(self, key: tuple[Any, ...], known: _Known) -> None:
        self._known[key] = known
        self._size += len(known.prefix)
        while self._size > self._kept and self._known:
            oldest = next(iter(self._known))
            self._size -= len(self._known.pop(oldest).prefix)


def running(value: bytes, ttls: set[bytes], needles: tuple[bytes, ...]) -> Conversation:
    """The running digests of a conversation block's text (see the module doc)."""
    return _read(unmarked(value, ttls, needles) if needles else value)[0]


def _read(text: bytes) -> tuple[Conversation, Any]:
    """The digests of a conversation's text without markers, and the running digest's state
    after its last item (None when it is not a list of items)."""
    try:
        items = _items.decode(text)
    except msgspec.ValidationError:  # a plain string (`input: "..."`): one item
        return Conversation(_hash(text), 1, text if text.lstrip()[:1] == b'"' else None), None
    except (msgspec.DecodeError, RecursionError):
        return Conversation(_hash(text), 1, None), None
    state = xxhash.xxh3_64()
    digests = _digests(state, items)
    return Conversation(digests, len(items), bytes(items[0]) if items else None), state


def _digests(state: Any, items: list[msgspec.Raw]) -> bytes:
    update, digest = state.update, state.digest
    out = []
    for item in items:  # the running digest after each item: one pass over the bytes
        update(item)
        out.append(digest())
    return b"".join(out)


def _extend(
    known: _Known, value: bytes, ttls: set[bytes], needles: tuple[bytes, ...]
) -> _Known | None:
    """`value` read as `known` and the items after it; None when it does not start so."""
    prefix = known.prefix
    if not known.found.items or not value.startswith(prefix):
        return None
    at = len(prefix)
    if value[at : at + 1] != b",":  # spacing before the comma (rare): skip it
        while at < len(value) and value[at] in _SPACE:
            at += 1
        if value[at : at + 1] != b",":
            return None
    tail = b"[" + value[at + 1 :]
    if needles:
        tail = unmarked(tail, ttls, needles)
    try:
        items = _items.decode(tail)
    except (msgspec.DecodeError, RecursionError):
        return None
    state = known.state.copy()
    found = known.found
    update, digest = state.update, state.digest
    digests = [found.digests]
    for item in items:  # as `_digests`, after the digests known
        update(item)
        digests.append(digest())
    return _Known(
        prefix + b"," + tail[1:-1],
        state,
        Conversation(b"".join(digests), found.items + len(items), found.opening),
    )
