"""The digest tier's keys: canonical per-block digests of one request body, made once, as read.

The scan never holds a body longer than it takes to read it. What it keeps of each request is a
few 8-byte digests (BLAKE2b): the settings (every top-level member that is not prompt text), the
tools, the system prompt, the marker TTLs, and a running digest after each item of the
conversation (`messages`, `input` or `contents`). The judge (`harness.scan._judge`) compares a
request with the one before it in its session: the same settings, tools, system and TTLs, and a
conversation whose running digest at the earlier request's length equals the earlier request's
last one, means the later request holds every byte of the earlier one's prompt: nothing broke,
and no bytes are read again. Any other pair goes to the cache model, with its bytes.

The digests are a filter and never a verdict on bytes the scan has: equal digests mean equal
bytes (a false "equal" would need a 64-bit collision between two specific values), and unequal
digests only send the pair to the cache model, which may well find nothing (a bookkeeping field
that changed, a marker that moved). Cache markers (`cache_control`, Bedrock's `cachePoint`
blocks, OpenAI's `prompt_cache_breakpoint`) are set aside before digesting, as the prefix-chain
gate sets them aside (a marker moving forward is how a conversation keeps its cache); their TTLs,
in document order, are digested apart, so another TTL is another pair for the cache model.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, NamedTuple

import msgspec

__all__ = ["BLOCKS", "CONVERSATION", "DIGEST_SIZE", "Digests", "digests_of", "first_block"]

DIGEST_SIZE: Final = 8
CONVERSATION: Final = ("messages", "input", "contents")
TOOLS: Final = frozenset({"tools", "toolConfig", "tool_config", "functions"})
SYSTEM: Final = frozenset({"system", "instructions", "systemInstruction", "system_instruction"})
MARKERS: Final = ("cache_control", "cachePoint", "prompt_cache_breakpoint")
_NEEDLES: Final = tuple(f'"{name}"'.encode() for name in MARKERS)
# The digest columns in the order a provider caches them (settings key the whole cache).
BLOCKS: Final = ("settings", "tools", "system", "messages")

_top = msgspec.json.Decoder(dict[str, msgspec.Raw])
_items = msgspec.json.Decoder(list[msgspec.Raw])
_encode = msgspec.json.encode


class Digests(NamedTuple):
    """One request's digest-tier keys (see the module doc)."""

    settings: bytes
    tools: bytes
    system: bytes
    ttls: bytes
    conversation: bytes  # DIGEST_SIZE bytes per item: the running digest after each
    items: int
    stored: bool  # continues a conversation held on the server (`previous_response_id`)

    @property
    def opening(self) -> bytes:
        """The running digest after the first item (the conversation's opening message)."""
        return self.conversation[:DIGEST_SIZE]


def _hash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest()


def digests_of(body: bytes | dict[str, Any]) -> Digests | None:
    """The digests of a JSON request body (its bytes, or the decoded object); None when it is
    not a JSON object."""
    data = _encode(body) if isinstance(body, dict) else body
    try:
        top = _top.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    settings = hashlib.blake2b(digest_size=DIGEST_SIZE)
    tools = system = b""
    ttls: list[Any] = []
    conversation = b""
    items = 0
    for key, raw in top.items():
        value = bytes(raw)
        if key in MARKERS:  # a top-level automatic marker: its TTL, not a setting
            ttls.append(msgspec.json.decode(value))
            continue
        if key in CONVERSATION and not conversation:
            conversation, items = _conversation(value, ttls)
            continue
        value = _unmarked(value, ttls)
        if key in TOOLS:
            tools = _hash(tools + key.encode() + value)
        elif key in SYSTEM:
            system = _hash(system + key.encode() + value)
        else:
            settings.update(_encode(key) + b":" + value + b",")
    stored = "previous_response_id" in top or "conversation" in top
    ttl = _hash(_encode(ttls)) if ttls else b""
    return Digests(settings.digest(), tools, system, ttl, conversation, items, stored)


def _conversation(value: bytes, ttls: list[Any]) -> tuple[bytes, int]:
    try:
        items = _items.decode(value)
    except msgspec.ValidationError:  # a plain string (`input: "..."`): one item
        return _hash(_unmarked(value, ttls)), 1
    except (msgspec.DecodeError, RecursionError):
        return _hash(value), 1
    running = b""
    out = bytearray()
    for item in items:
        running = _hash(running + _unmarked(bytes(item), ttls))
        out += running
    return bytes(out), len(items)


def _unmarked(value: bytes, ttls: list[Any]) -> bytes:
    """`value` without cache markers (their TTLs appended to `ttls`); as it is when it holds
    none (the common case: no decoding)."""
    if not any(needle in value for needle in _NEEDLES):
        return value
    return _encode(_strip(msgspec.json.decode(value), ttls))


def _strip(value: Any, ttls: list[Any]) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in MARKERS:
                ttls.append(item.get("ttl") if isinstance(item, dict) else None)
            else:
                out[key] = _strip(item, ttls)
        return out
    if isinstance(value, list):
        kept = []
        for item in value:
            if isinstance(item, dict) and item and all(key in MARKERS for key in item):
                _strip(item, ttls)  # a marker block of its own (Bedrock's cachePoint)
            else:
                kept.append(_strip(item, ttls))
        return kept
    return value


def first_block(found: Digests) -> bytes:
    """What a request with no session id is grouped by, beside its endpoint: its conversation's
    opening message (else its system prompt, else its tools). Not the tools first: a reordered
    tool list would then open another group, and the break it is would never be compared."""
    return found.opening or found.system or found.tools or found.settings
