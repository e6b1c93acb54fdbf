"""Messages and the request header: the model, the system text and the tools, in canonical form.

A header is what a provider's prompt cache keys on before the conversation starts. Two headers are
equal when their bytes are (`header_equals`): config fields, system text, and tools in order, with
key order significant. `canonical_header` drops an empty system and empty tools and reuses a
recent equal header, so the common comparison costs an identity check.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from harness.agent.frozen import (
    WeakIdentitySet,
    deep_freeze,
    is_deep_frozen,
    is_known_frozen,
    items_of,
)
from harness.agent.tools import ToolSchema

# -- messages -----------------------------------------------------------------------------------


class TextBlock(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ToolUseBlock(msgspec.Struct, frozen=True, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(msgspec.Struct, frozen=True, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: str
    is_error: bool = False


Block = TextBlock | ToolUseBlock | ToolResultBlock


class Message(msgspec.Struct, frozen=True):
    role: Literal["user", "assistant"]
    content: tuple[Block, ...]


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
        self.recent: list[Header] = []
        self.checked = WeakIdentitySet()

    def find(self, config: LlmConfig, system: str, tools: tuple[ToolSchema, ...]) -> Header | None:
        if type(system) is not str or type(config) is not LlmConfig:
            return None
        config_bytes: bytes | None = None
        for header in self.recent:
            if isinstance(header.system, str):
                if header.system is not system and header.system != system:
                    continue
            elif system:
                continue
            if not _same_objects(header.tools, tools):
                continue
            if header.config is not config:
                if config_bytes is None:
                    config_bytes = _encode(config)
                if _encode(header.config) != config_bytes:
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
        self.recent.insert(0, header)
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
