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

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import msgspec
import xxhash

from harness._shared._views import encode_json
from harness.cache._markers import strip
from harness.providers._anthropic import continues_thread
from harness.providers._registry import provider_named
from harness.scan._conversation import Conversation, Conversations, running
from harness.scan._markers import needles_of, ttls_of, unmarked

__all__ = [
    "BLOCKS",
    "CONVERSATION",
    "DIGEST_SIZE",
    "Digests",
    "digests_of",
    "digests_of_members",
    "first_block",
]

DIGEST_SIZE: Final = 8
CONVERSATION: Final = ("messages", "input", "contents")
TOOLS: Final = frozenset({"tools", "toolConfig", "tool_config", "functions"})
SYSTEM: Final = frozenset({"system", "instructions", "systemInstruction", "system_instruction"})
# The digest columns in the order a provider caches them (settings key the whole cache).
BLOCKS: Final = ("settings", "tools", "system", "messages")

_top = msgspec.json.Decoder(dict[str, msgspec.Raw])
_encode = msgspec.json.encode
_hash = xxhash.xxh3_64_digest
# Openings already read (`_thread`), by provider and the opening's digest; cleared when full.
_THREADS: dict[tuple[str | None, tuple[str, ...], bytes], bytes | None] = {}
_THREADS_KEPT: Final = 4096
_UNKNOWN: Final = object()
_MODELS: dict[bytes, str | None] = {}  # a `model` member's JSON text -> its text
_TOOLS, _SYSTEM, _CONV = 1, 2, 3
_KIND: Final = {
    **dict.fromkeys(TOOLS, _TOOLS),
    **dict.fromkeys(SYSTEM, _SYSTEM),
    **dict.fromkeys(CONVERSATION, _CONV),
}
_NONE: Final = Conversation(b"", 0, None)


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
    return digests_of_members(top, provider, markers)


def digests_of_members(
    top: Mapping[str, msgspec.Raw],
    provider: str | None,
    markers: tuple[str, ...],
    memory: Conversations | None = None,
    session: str | None = None,
) -> Digests:
    """`digests_of` a body given as its top-level members' JSON texts, in order. With `memory`
    and the request's `session`, the conversation extends what the session's previous request
    read (`harness.scan._conversation`: the same digests, made from the new items only)."""
    needles = needles_of(markers)
    settings = xxhash.xxh3_64(_encode(list(top)))  # the top-level key order: Vertex caches it
    tools = system = b""
    ttls: set[bytes] = set()
    conversation: Conversation | None = None
    kind_of = _KIND.get
    for key, raw in top.items():
        value = bytes(raw)
        if key in markers:  # a top-level automatic marker: its TTL, not a setting
            ttls.update(ttls_of(value))
            continue
        kind = kind_of(key, 0)
        if kind == _CONV and conversation is None:
            if memory is not None and session is not None:
                conversation = memory.read((session, key, needles), value, ttls, needles)
            else:
                conversation = running(value, ttls, needles)
            continue
        if needles and value[:1] in b"{[":  # only an object or a list holds a member
            value = unmarked(value, ttls, needles)
        if kind == _TOOLS:
            tools = _hash(tools + key.encode() + value)
        elif kind == _SYSTEM:
            system = _hash(system + key.encode() + value)
        else:
            settings.update(_encode(key) + b":" + value + b",")
    stored = "previous_response_id" in top or "conversation" in top or _thread_held(top)
    ttl = b""
    if len(ttls) == 1:
        ttl = _hash(next(iter(ttls)))
    elif ttls:  # markers asking for several TTLs: which place asks which is not in the digests,
        ttl = _hash(b"mixed;" + b",".join(map(bytes, top.values())))  # so the cache model judges
    found = conversation or _NONE
    previous = top.get("previous_response_id")
    return Digests(
        settings.digest(),
        tools,
        system,
        ttl,
        found.digests,
        found.items,
        stored,
        _model(top.get("model")),
        None if previous is None else _text(previous),
        _thread(found.opening, provider, markers) if conversation is not None else None,
    )


def _thread_held(top: Mapping[str, msgspec.Raw]) -> bool:
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


def _model(raw: msgspec.Raw | None) -> str | None:
    """`_text` of a `model` member, remembered by its JSON text (a trace names a few models)."""
    if raw is None:
        return None
    text = bytes(raw)
    known = _MODELS.get(text, _UNKNOWN)
    if known is _UNKNOWN:
        if len(_MODELS) >= _THREADS_KEPT:
            _MODELS.clear()
        known = _MODELS[text] = _text(raw)
    return known  # type: ignore[return-value]


def _text(raw: msgspec.Raw | None) -> str | None:
    if raw is None:
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None


def first_block(found: Digests) -> bytes:
    """What a request with no session id is grouped by, beside its endpoint: its conversation's
    opening message (else its system prompt, else its tools). Not the tools first: a reordered
    tool list would then open another group, and the break it is would never be compared."""
    return found.opening or found.system or found.tools or found.settings
