"""Anthropic Messages: tools, then system, then messages; `cache_control` breakpoints.

A change invalidates its level and every level after it. The cacheable prefix ends at the last
`cache_control` breakpoint (on a tool, a system block or a message content block); with none, the
tools and system are the prefix (automatic caching), and a top-level `cache_control` makes the
whole request the prefix. Beta headers (`anthropic-beta`) key the cache, so they are settings.
Which fields are settings and which are bookkeeping is the rules pack's (`_classify.classify`). A
tool sent with `defer_loading` (tool search) is not in the cached prefix: the split keeps it apart,
with the bookkeeping, so adding one never breaks the prefix. A string `content` or `system` is the
API's shorthand for one text block (`shorthand`): the cache model keys both forms alike.
Also reached through Vertex (`:rawPredict`) and Bedrock's `/invoke` for a Claude model id (the
Bedrock table `invoke_shape` says which InvokeModel body is Claude's). On
Vertex the raw key order reaches the cache (`messages` before `system` or `tools` misses): the
view says so in the setting `KEY_ORDER`, so two requests serialised in different orders differ.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from harness._shared._views import CacheView, RequestSplit, encode_json
from harness.providers._base import (
    CacheUsage,
    Provider,
    breakpoints,
    integer,
    member,
    model_in_path,
    optional,
    point_pointer,
    truncate,
)
from harness.providers._bedrock import invoke_shape
from harness.providers._classify import classify
from harness.providers._pack import KeyOrder, rules_pack

ANTHROPIC: Final = "anthropic"
# The setting that says a Vertex body serialises its conversation before its stable prefix.
KEY_ORDER: Final = "(key order)"
# Where a split keeps the tools sent with `defer_loading` (tool search): "Deferred tools are not
# included in the system-prompt prefix [...] The prefix is untouched, so prompt caching is
# preserved" (platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching).
DEFERRED: Final = "tools (defer_loading)"
# The setting that counts the request's images: "Images | ✓ | ✓ | ✘ | Adding/removing images
# anywhere in the prompt affects message blocks" (the prompt-caching page's invalidation table),
# so a change in their number keys the cache from the messages on (the rules pack's row).
IMAGES: Final = "(images)"

# `thread` names a server-held message thread (`held`), not a setting of the cache key.
_PROMPT: Final = frozenset({"tools", "system", "messages", "cache_control", "thread"})
_MARKERS: Final = ("cache_control",)
# The model in a Vertex (`/models/<id>:rawPredict`) or Bedrock (`/model/<id>/invoke`) URL.
_URL_MODEL: Final = re.compile(r"/models?/(?P<model>[^/:]+)(?::|/invoke)")


def surface_of(body: Mapping[str, Any], url: str | None) -> str:
    """Where a Messages request goes: `vertex`, `bedrock`, `claude-api`, or "" when unknown."""
    if url is not None:
        parts = urlsplit(url)
        if parts.path.rstrip("/").endswith((":rawPredict", ":streamRawPredict")):
            return "vertex"
        if "/invoke" in parts.path:
            return "bedrock"
        if (parts.hostname or "").endswith("anthropic.com"):
            return "claude-api"
    version = body.get("anthropic_version")
    if isinstance(version, str):
        return "vertex" if version.startswith("vertex") else "bedrock"
    return ""


def model_of(body: Mapping[str, Any], url: str | None) -> str | None:
    """The model a Messages request names: in its body, else in its URL (Vertex, Bedrock)."""
    model = body.get("model")
    if isinstance(model, str) and model:
        return model
    return model_in_path(_URL_MODEL, url)


def key_order(body: Mapping[str, Any], surface: str) -> str | None:
    """What the rules say of the body's raw key order on this surface (None: nothing wrong)."""
    row = rules_pack().first(KeyOrder, ANTHROPIC, surface=surface)
    if row is None or row.last not in body:
        return None
    keys = list(body)
    early = [key for key in row.before if key in body and keys.index(key) > keys.index(row.last)]
    return f"{row.last} before {', '.join(early)}" if early else None


class AnthropicMessages(Provider):
    name = ANTHROPIC

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is not None:
            path = urlsplit(url).path.rstrip("/")
            if path.endswith(("/messages", ":rawPredict", ":streamRawPredict")):
                return isinstance(body.get("messages"), list)
            shape = invoke_shape(body, url)  # Bedrock's InvokeModel: by the model id
            return shape is not None and shape[0].kind == "anthropic"
        messages = body.get("messages")
        if not isinstance(messages, list) or "input" in body or "instructions" in body:
            return False
        tools = body.get("tools")
        tool_list = tools if isinstance(tools, list) else []
        model = body.get("model")
        return (
            "system" in body
            or "anthropic_version" in body
            or "thinking" in body
            or "cache_control" in body  # the top-level automatic marker
            or (isinstance(model, str) and model.startswith("claude") and "max_tokens" in body)
            or any(isinstance(tool, dict) and "input_schema" in tool for tool in tool_list)
            or any(_has_tool_block(message) or _marks_block(message) for message in messages)
        )

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return self.split_url(body, headers, None)

    def split_url(
        self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]], url: str | None
    ) -> RequestSplit:
        surface = surface_of(body, url)
        settings, bookkeeping = classify(ANTHROPIC, body, _PROMPT, model_of(body, url), surface)
        order = key_order(body, surface)
        if order is not None:
            settings[KEY_ORDER] = order
        betas = [
            beta.strip()
            for name, value in headers
            if name == "anthropic-beta"
            for beta in value.split(",")
            if beta.strip()
        ]
        if betas:
            settings["anthropic-beta"] = betas
        messages = body.get("messages")
        # the messages' JSON, once: it says whether any image or any marker is in them at all
        encoded = encode_json(messages) if isinstance(messages, list | dict) else b""
        images = _count_images(messages) if b'"image"' in encoded else 0
        if images:
            settings[IMAGES] = images
        settings = dict(sorted(settings.items()))
        blocks = {key: body[key] for key in ("tools", "system", "messages") if key in body}
        tools = blocks.get("tools")
        if (
            isinstance(tools, list)
            and _may_hold(tools, "defer_loading")
            and any(map(_deferred, tools))
        ):
            # tool search: a deferred tool is not in the cached prefix (its definition reaches
            # the conversation only when found), so it is bookkeeping to the cache
            bookkeeping = {**bookkeeping, DEFERRED: [t for t in tools if _deferred(t)]}
            kept = [tool for tool in tools if not _deferred(tool)]
            blocks = {
                key: (kept if key == "tools" else value)
                for key, value in blocks.items()
                if key != "tools" or kept
            }
        view = CacheView(settings=settings, blocks=blocks, provider=ANTHROPIC)
        held: Literal["", "prefix"] = "prefix" if continues_thread(body) else ""
        if _may_hold(blocks.get("tools"), "cache_control") or b'"cache_control"' in encoded:
            points = breakpoints(blocks, _marked)
        else:  # no tool and no message is marked: only the system may be
            points = breakpoints(
                {"system": blocks["system"]} if "system" in blocks else {}, _marked
            )
        pointers = tuple(point_pointer(point, "cache_control") for point in points)
        if "cache_control" in body:  # automatic caching up to the last block
            return RequestSplit(
                ANTHROPIC,
                view,
                view,
                "whole-request",
                "/cache_control",
                pointers,
                _MARKERS,
                bookkeeping,
                held,
            )
        if not points:
            prefix_blocks: dict[str, Any] = {
                k: blocks[k] for k in ("tools", "system") if k in blocks
            }
            prefix = CacheView(settings=settings, blocks=prefix_blocks, provider=ANTHROPIC)
            return RequestSplit(
                ANTHROPIC,
                view,
                prefix,
                "automatic",
                markers=_MARKERS,
                bookkeeping=bookkeeping,
                held=held,
            )
        prefix = CacheView(
            settings=settings, blocks=truncate(blocks, points[-1]), provider=ANTHROPIC
        )
        return RequestSplit(
            ANTHROPIC,
            view,
            prefix,
            "breakpoint",
            pointers[-1],
            pointers,
            _MARKERS,
            bookkeeping,
            held,
        )

    def shorthand(self, value: Any) -> Any:
        return shorthand(value)

    def usage(self, response: Any) -> CacheUsage | None:
        usage = member(response, "usage")
        if not isinstance(usage, dict):
            return None
        reason = member(response, "diagnostics", "cache_miss_reason", "type")
        missed = member(response, "diagnostics", "cache_miss_reason", "cache_missed_input_tokens")
        creation = usage.get("cache_creation")
        split: tuple[tuple[str, int], ...] = ()
        if isinstance(creation, dict):
            split = tuple(
                (ttl, integer(creation.get(f"ephemeral_{ttl}_input_tokens")))
                for ttl in ("5m", "1h")
                if f"ephemeral_{ttl}_input_tokens" in creation
            )
        return CacheUsage(
            ANTHROPIC,
            read_tokens=integer(usage.get("cache_read_input_tokens")),
            written_tokens=integer(usage.get("cache_creation_input_tokens")),
            uncached_tokens=integer(usage.get("input_tokens")),
            miss_reason=reason if isinstance(reason, str) else None,
            written_ttl=split,
            missed_tokens=missed if isinstance(missed, int) else None,
            output_tokens=optional(usage.get("output_tokens")),
        )


def continues_thread(body: Mapping[str, Any]) -> bool:
    """Whether the request continues a server-held message thread (`"thread": {"type":
    "continue", "previous_message_id": ...}`, the anthropic SDK's tool runner default since
    2.17): the server holds every earlier turn, and the tools and system with them."""
    thread = body.get("thread")
    return isinstance(thread, Mapping) and (
        thread.get("type") == "continue" or "previous_message_id" in thread
    )


def shorthand(value: Any) -> Any:
    """The long form of the Messages API's shorthand: a string `content` (or `system`) is one
    text block (`"content": "hi"` is `[{"type": "text", "text": "hi"}]`, per the Messages API
    reference), so both forms are one prefix to the cache. None for a value that is no
    shorthand."""
    return [{"type": "text", "text": value}] if isinstance(value, str) else None


def _may_hold(items: Any, key: str) -> bool:
    """Whether an item of the list `items` may have `key` at its top: False only for a list of
    plain dicts none of which has it (asked in C: a request repeats its 200 tools)."""
    if not isinstance(items, list):
        return False
    if set(map(type, items)) - {dict}:
        return True  # not only plain dicts: each is asked as it is
    return any(map(dict.__contains__, items, repeat(key)))


def _count_images(value: Any) -> int:
    """The image blocks in the messages, those inside a tool result's content included (walked
    only where the messages' JSON holds the word: most conversations have no image)."""
    if isinstance(value, list):
        return sum(_count_images(item) for item in value)
    if isinstance(value, dict):
        own = 1 if value.get("type") == "image" else 0
        return own + _count_images(value.get("content"))
    return 0


def _deferred(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("defer_loading") is True


def _has_tool_block(message: Any) -> bool:
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        return any(
            isinstance(block, dict) and block.get("type") in {"tool_use", "tool_result"}
            for block in message["content"]
        )
    return False


def _marks_block(message: Any) -> bool:
    """A content block with Anthropic's `cache_control` marker."""
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        return any(_marked(block) for block in message["content"])
    return False


def _marked(item: Any) -> bool:
    return isinstance(item, dict) and "cache_control" in item
