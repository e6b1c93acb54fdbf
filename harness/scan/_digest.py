"""The digest tier's keys: canonical per-block digests of one request body, made once, as read.

The scan never holds a body longer than it takes to read it. What it keeps of each request is a
few 8-byte digests (XXH3, 64 bits: about forty times BLAKE2b's speed on a 7 KB body, and a filter
needs no more: the digests of two requests of one session are compared for equality, never
offered as proof against someone forging traces): the settings (every top-level member that is
not prompt text), the tools, the system prompt, the marker TTLs, and a running digest after each
item of the conversation (`messages`, `input` or `contents`). The digest tier
(`harness.scan._tier`) compares a request with the one before it in its session: the same
settings, tools, system and TTLs, and a conversation whose running digest at the earlier
request's length equals the earlier request's last one, means the later request holds every byte
of the earlier one's prompt: nothing broke, and no bytes are read again. Any other pair goes to
the cache model, with its bytes.

The digests are a filter and never a verdict on bytes the scan has: equal digests mean equal
bytes (a false "equal" would need a 64-bit collision between two specific values), and unequal
digests only send the pair to the cache model, which may well find nothing (a bookkeeping field
that changed, a marker that moved). The cache markers of the body's provider (the keys its split
names: Anthropic's `cache_control`, Bedrock's `cachePoint` blocks, OpenAI's
`prompt_cache_breakpoint`), and only those, are set aside before digesting, as the cache model
sets them aside (a marker moving forward is how a conversation keeps its cache; a key that is no
marker to the provider is prompt, as it is to the model); the TTL they ask for is digested apart,
so a request that asks for another TTL is a pair for the cache model, and so is every request
whose markers ask for several (which place asks which is not in the digests). The order of the
top-level keys is part of the settings' digest: on Vertex it reaches the cache.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

import msgspec
import xxhash

from harness._shared._views import encode_json
from harness.cache._extends import strip
from harness.providers._anthropic import continues_thread
from harness.providers._registry import provider_named

__all__ = ["BLOCKS", "CONVERSATION", "DIGEST_SIZE", "Digests", "digests_of", "first_block"]

DIGEST_SIZE: Final = 8
CONVERSATION: Final = ("messages", "input", "contents")
TOOLS: Final = frozenset({"tools", "toolConfig", "tool_config", "functions"})
SYSTEM: Final = frozenset({"system", "instructions", "systemInstruction", "system_instruction"})
# The digest columns in the order a provider caches them (settings key the whole cache).
BLOCKS: Final = ("settings", "tools", "system", "messages")

_top = msgspec.json.Decoder(dict[str, msgspec.Raw])
_items = msgspec.json.Decoder(list[msgspec.Raw])
_encode = msgspec.json.encode
_hash = xxhash.xxh3_64_digest
_SPACE: Final = b" \t\r\n"
_TTL: Final = re.compile(rb'"ttl"\s*:\s*"([^"]*)"')
# Openings already read (`_thread`), by provider and the opening's digest; cleared when full.
_THREADS: dict[tuple[str | None, tuple[str, ...], bytes], bytes | None] = {}
_THREADS_KEPT: Final = 4096
_UNKNOWN: Final = object()


class Digests(NamedTuple):
    """One request's digest-tier keys (see the module doc)."""

    settings: bytes
    tools: bytes
    system: bytes
    ttls: bytes
    conversation: bytes  # DIGEST_SIZE bytes per item: the running digest after each
    items: int
    stored: bool  # continues a conversation held on the server (`previous_response_id`, a thread)
    model: str | None = None  # read on the way: what the scan shows beside the digests
    previous: str | None = None  # `previous_response_id`, which chains a session
    thread: bytes | None = None  # the opening as the cache model's links read it (`_thread`)

    @property
    def opening(self) -> bytes:
        """The running digest after the first item (the conversation's opening message)."""
        return self.conversation[:DIGEST_SIZE]


def digests_of(
    body: bytes | dict[str, Any], provider: str | None, markers: tuple[str, ...]
) -> Digests | None:
    """The digests of a JSON request body (its bytes, or the decoded object); None when it is
    not a JSON object. `provider` names the shorthand the conversation's opening is read in;
    `markers` are its cache markers' keys, as its split names them (`RequestSplit.markers`: what
    the cache model sets aside, and nothing else)."""
    data = _encode(body) if isinstance(body, dict) else body
    try:
        top = _top.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    # the markers the body holds anywhere (one search each): most values then need no search
    needles = tuple(needle for needle in _needles(markers) if needle in data)
    settings = xxhash.xxh3_64(_encode(list(top)))  # the top-level key order: Vertex caches it
    tools = system = b""
    ttls: set[bytes] = set()
    conversation = b""
    thread: bytes | None = None
    items = 0
    for key, raw in top.items():
        value = bytes(raw)
        if key in markers:  # a top-level automatic marker: its TTL, not a setting
            ttls.update(_TTL.findall(value) or [b""])
            continue
        if needles:
            value = _unmarked(value, ttls, needles)
        if key in CONVERSATION and not conversation:
            conversation, items, opening = _conversation(value)
            thread = _thread(opening, provider, markers)
        elif key in TOOLS:
            tools = _hash(tools + key.encode() + value)
        elif key in SYSTEM:
            system = _hash(system + key.encode() + value)
        else:
            settings.update(_encode(key) + b":" + value + b",")
    stored = "previous_response_id" in top or "conversation" in top or _thread_held(top)
    ttl = b""
    if len(ttls) == 1:
        ttl = _hash(next(iter(ttls)))
    elif ttls:  # markers asking for several TTLs: which place asks which is not in the digests,
        ttl = _hash(b"mixed;" + data)  # so the pair always goes to the cache model
    return Digests(
        settings.digest(),
        tools,
        system,
        ttl,
        conversation,
        items,
        stored,
        _text(top.get("model")),
        _text(top.get("previous_response_id")),
        thread,
    )


def _thread_held(top: dict[str, msgspec.Raw]) -> bool:
    """Whether the body continues an Anthropic server-held message thread (`RequestSplit.held`
    as the provider's split says it)."""
    raw = top.get("thread")
    if raw is None:
        return False
    try:
        return continues_thread({"thread": msgspec.json.decode(raw)})
    except (msgspec.DecodeError, RecursionError):
        return False


def _thread(value: bytes | None, provider: str | None, markers: tuple[str, ...]) -> bytes | None:
    """The conversation's opening as `harness.cache._links` reads it to say which request
    continues which: its first message without markers, in its long form where the provider
    documents a shorthand (Anthropic's string content), encoded; a plain string as itself.
    None when there is no opening. `value` is the first item's bytes, or a plain string's.
    Remembered by the value's 128-bit digest: every request of a conversation opens alike."""
    if value is None:
        return None
    key = (provider, markers, xxhash.xxh3_128_digest(value))
    known = _THREADS.get(key, _UNKNOWN)
    if known is _UNKNOWN:
        if len(_THREADS) >= _THREADS_KEPT:
            _THREADS.clear()
        known = _THREADS[key] = _opening(value, provider, markers)
    return known  # type: ignore[return-value]


def _opening(value: bytes, provider: str | None, markers: tuple[str, ...]) -> bytes | None:
    try:
        first = strip(msgspec.json.decode(value), markers)
    except (msgspec.DecodeError, RecursionError):
        return None
    found = provider_named(provider) if provider else None
    if found is not None and isinstance(first, dict) and "content" in first:
        long = found.shorthand(first["content"])
        if long is not None:
            first = {**first, "content": long}
    return _hash(encode_json(first))


def _text(raw: msgspec.Raw | None) -> str | None:
    if raw is None:
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None


def _conversation(value: bytes) -> tuple[bytes, int, bytes | None]:
    """The running digests of a conversation, its length, and its opening's bytes (the first
    item, or a plain string itself; None for an empty list)."""
    try:
        items = _items.decode(value)
    except msgspec.ValidationError:  # a plain string (`input: "..."`): one item
        return _hash(value), 1, value if value.lstrip()[:1] == b'"' else None
    except (msgspec.DecodeError, RecursionError):
        return _hash(value), 1, None
    running = xxhash.xxh3_64()
    update, digest = running.update, running.digest
    out = []
    for item in items:  # the running digest after each item: one pass over the bytes
        update(item)
        out.append(digest())
    return b"".join(out), len(items), bytes(items[0]) if items else None


@functools.cache
def _needles(markers: tuple[str, ...]) -> tuple[bytes, ...]:
    """The marker keys as they start a member in JSON text (quoted)."""
    return tuple(_encode(name) for name in markers)


@functools.cache
def _member(needle: bytes) -> re.Pattern[bytes]:
    """A marker member: its key, and a flat object for its value (`"cache_control":{"type":
    "ephemeral"}`); in JSON text the key is never preceded by a backslash, so a quoted marker
    inside a string is left alone. A marker this does not match (a nested value) is left in:
    the digests then differ, and the cache model, which sets the markers aside, judges the pair.
    A list item that is only a marker (`{"cachePoint":{"type":"default"}}`) goes whole
    (`_unmarked`)."""
    return re.compile(re.escape(needle) + rb"[ \t\r\n]*:[ \t\r\n]*\{[^{}]*\}")


def _unmarked(value: bytes, ttls: set[bytes], needles: tuple[bytes, ...]) -> bytes:
    """`value` without its cache markers; the TTLs they ask for (b"" for the default) are added
    to `ttls`. A member goes with one comma beside it; an object that held only a marker (a
    Bedrock `cachePoint` block) goes whole, with one comma beside it. The members are those
    `_MEMBER` finds scanning left to right; a match can only start at a quoted marker key, so
    only those places (found by a byte search, which runs in C) are tried."""
    first = [(place, needle) for needle in needles if (place := value.find(needle)) >= 0]
    if not first:
        return value  # most values hold no marker: one search each
    starts = sorted(_places(value, first))
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
        ttls.update(_TTL.findall(found.group()) or [b""])
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


def first_block(found: Digests) -> bytes:
    """What a request with no session id is grouped by, beside its endpoint: its conversation's
    opening message (else its system prompt, else its tools). Not the tools first: a reordered
    tool list would then open another group, and the break it is would never be compared."""
    return found.opening or found.system or found.tools or found.settings
