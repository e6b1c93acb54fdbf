"""Messages and the request header: the model, the system text and the tools, in canonical form.

A header is what a provider's prompt cache keys on before the conversation starts. Two headers are
equal when their bytes are (`header_equals`): config fields, system text, and tools in order, with
key order significant. `canonical_header` drops an empty system and empty tools and reuses a
recent equal header, so the common comparison costs an identity check.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal, NoReturn, overload

import msgspec

from harness.agent._frozen import (
    FrozenView,
    WeakIdentitySet,
    deep_freeze,
    is_deep_frozen,
    is_known_frozen,
    items_of,
)
from harness.agent._tools import ToolSchema

# -- messages -----------------------------------------------------------------------------------


class TextBlock(
    msgspec.Struct,
    frozen=True,
    gc=False,
    tag="text",
    tag_field="type",
    forbid_unknown_fields=True,
):
    text: str


class ToolUseBlock(
    msgspec.Struct,
    frozen=True,
    gc=False,
    tag="tool_use",
    tag_field="type",
    forbid_unknown_fields=True,
):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(
    msgspec.Struct,
    frozen=True,
    gc=False,
    tag="tool_result",
    tag_field="type",
    forbid_unknown_fields=True,
):
    tool_use_id: str
    content: str
    is_error: bool = False


Block = TextBlock | ToolUseBlock | ToolResultBlock


class Message(msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True):
    role: Literal["user", "assistant"]
    content: tuple[Block, ...]


class Conversation(FrozenView, Sequence[Message]):
    """The messages of a request: the first `length` messages of a session's conversation,
    then its pending message of tool results, if any. Immutable, and shared.

    Each request holds the whole conversation so far. As a tuple of its own, every request
    costs time and memory in proportion to the conversation (and the garbage collector's passes
    over those tuples grow with it), so a long session becomes quadratic. A Conversation is a
    view into the session's append-only store of committed messages instead: making one costs
    the same at step 10 and at step 10,000, and a committed message never changes, so the view
    never does (decision 0012).

    It is a `Sequence` of frozen messages that compares equal to the tuple of the same messages.
    msgspec does not encode it by itself: encode `tuple(conversation)`. The runtime hands out
    Conversations only when asked to (`boot_agent(share_conversation=True)`, which the harness's
    replay uses); by default a request's messages are a tuple, as they always were.
    """

    __slots__ = ("_frozen", "_length", "_store", "_tail")

    def __init__(
        self, store: list[Message], length: int, tail: Message | None = None, frozen: bool = False
    ) -> None:
        self._store = store
        self._length = length
        self._tail = tail
        self._frozen = frozen  # its maker checked every message deep-frozen

    @property
    def deep_frozen(self) -> bool:
        return self._frozen

    def __len__(self) -> int:
        return self._length + (self._tail is not None)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self[position] for position in range(len(self))[index])
        position = operator.index(index)
        size = len(self)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError("conversation index out of range")
        if position < self._length:
            return self._store[position]
        assert self._tail is not None
        return self._tail

    def __iter__(self) -> Iterator[Message]:
        yield from itertools.islice(self._store, self._length)
        if self._tail is not None:
            yield self._tail

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Conversation | tuple):
            return len(self) == len(other) and all(map(operator.eq, self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Conversation({tuple(self)!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Conversation is not pickled; encode tuple(conversation) with msgspec")


def messages_json(messages: Sequence[Message]) -> bytes:
    """The JSON array of a request's messages (a tuple, or a Conversation)."""
    return _encode(messages if type(messages) is tuple else tuple(messages))


# -- header -------------------------------------------------------------------------------------


class LlmConfig(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The request settings that belong to the header: a change here moves the cache key."""

    provider: str
    model: str
    max_tokens: int = 1024
    temperature: float | msgspec.UnsetType = msgspec.UNSET


class Header(
    msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True, weakref=True
):
    """The request prefix a provider caches: settings, system text, tools (empty ones absent)."""

    config: LlmConfig
    system: str | msgspec.UnsetType = msgspec.UNSET
    tools: tuple[ToolSchema, ...] | msgspec.UnsetType = msgspec.UNSET


def canonical_header(config: LlmConfig, system: str, tools: Iterable[ToolSchema]) -> Header:
    """The header in canonical form: deep-frozen, empty system and empty tools dropped.

    Every step builds the header it would send, and usually it is the one of the step before.
    When the config encodes the same, the system text is equal and the tools are the very same
    (already frozen) objects in the same order, that earlier header is returned: the value is the
    same, and equality checks downstream become identity checks.
    """
    tool_tuple = items_of(tools)
    found = _headers.find(config, system, tool_tuple)
    if found is not None:
        return found
    header = deep_freeze(
        Header(
            config=config,
            system=system if system else msgspec.UNSET,
            tools=tool_tuple if tool_tuple else msgspec.UNSET,
        )
    )
    _headers.admit(header)
    return header


class _Headers:
    """Canonical headers already built, so equal ones are not built and compared again.

    `recent` are the last few, matched by identity of their parts (see canonical_header).
    `checked` are those known to be deep-frozen and to encode (held weakly, by identity): two of
    them compare part by part without raising, as their encodings exist.
    """

    RECENT = 8

    def __init__(self) -> None:
        self.recent: list[tuple[Header, bytes]] = []  # and the encoding of its config
        self.checked = WeakIdentitySet()

    def find(self, config: LlmConfig, system: str, tools: tuple[ToolSchema, ...]) -> Header | None:
        if type(system) is not str or type(config) is not LlmConfig:
            return None
        config_bytes: bytes | None = None
        for header, held_config in self.recent:
            if isinstance(header.system, str):
                if header.system is not system and header.system != system:
                    continue
            elif system:
                continue
            if header.tools is not tools and not _same_objects(header.tools, tools):
                continue
            if header.config is not config:
                if config_bytes is None:
                    config_bytes = _encode(config)
                if held_config != config_bytes:
                    continue
            return header
        return None

    def admit(self, header: Header) -> None:
        # Only headers whose tools are known frozen (shared copies): checking others would walk
        # every schema again, and they rarely repeat; they compare by whole encodings instead.
        if not _plain_parts(header):
            return
        if isinstance(header.tools, tuple) and not all(map(is_known_frozen, header.tools)):
            return
        if not is_deep_frozen(header):
            return
        try:
            _encode(header)
        except Exception:  # not encodable: comparisons must keep raising as they did
            return
        self.checked.add(header)
        self.recent.insert(0, (header, _encode(header.config)))
        del self.recent[self.RECENT :]

    def is_checked(self, header: Header) -> bool:
        return header in self.checked


def _same_objects(held: tuple[Any, ...] | msgspec.UnsetType, tools: tuple[Any, ...]) -> bool:
    if isinstance(held, msgspec.UnsetType):
        return not tools
    return held is tools or (len(held) == len(tools) and all(map(operator.is_, held, tools)))


def _plain_parts(header: Header) -> bool:
    """The shapes the part-wise comparison handles (anything else compares whole encodings)."""
    return (
        type(header) is Header
        and type(header.config) is LlmConfig
        and (type(header.system) is str or header.system is msgspec.UNSET)
        and (type(header.tools) is tuple or header.tools is msgspec.UNSET)
    )


_headers = _Headers()
_encode = msgspec.json.Encoder().encode


def header_bytes(header: Header) -> bytes:
    return msgspec.json.encode(header)


def header_equals(a: Header | None, b: Header | None) -> bool:
    """Config fields, system text, and tools in order, with key order significant: byte equality.

    Two headers checked by canonical_header compare part by part, so the parts they share (the
    same system string, the same frozen tool objects) cost nothing. A header encodes as the
    concatenation of its parts' encodings, so this is exactly `header_bytes(a) == header_bytes(b)`.
    """
    if a is None or b is None:
        return a is b
    if a is b:
        return True
    if not (_headers.is_checked(a) and _headers.is_checked(b)):
        return header_bytes(a) == header_bytes(b)
    if a.config is not b.config and _encode(a.config) != _encode(b.config):
        return False
    if isinstance(a.system, str) != isinstance(b.system, str) or a.system != b.system:
        return False
    if isinstance(a.tools, tuple) and isinstance(b.tools, tuple):
        pairs = zip(a.tools, b.tools, strict=False)
        return a.tools is b.tools or (
            len(a.tools) == len(b.tools)
            and all(x is y or _encode(x) == _encode(y) for x, y in pairs)
        )
    return a.tools is b.tools  # both UNSET; one UNSET and one tuple encode differently
