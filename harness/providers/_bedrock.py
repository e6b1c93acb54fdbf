"""AWS Bedrock Converse: `toolConfig.tools`, then `system`, then `messages`; `cachePoint` blocks.

Bedrock caches the prefix up to a `cachePoint`, a block of its own in the tool list, the system
list or a message's content (`{"cachePoint": {"type": "default"}}`, optionally with a `ttl`). The
cacheable prefix ends at the last one; with none, the tools and the system are taken as the prefix
(the part every turn repeats, and where a cache point would go), so a tool moved between turns
fails even before the project adds one. A change invalidates its level and every level after it.
Reached as `POST /model/<model id>/converse` (or `converse-stream`) on `bedrock-runtime.*`; the
model id is in the URL path, so it is read from there.

Settings: the model id, `toolConfig.toolChoice`, `outputConfig` (effort, text format),
`additionalModelRequestFields` (the model's own fields: Claude's `thinking`, judged member by
member), `performanceConfig`, `serviceTier`, guardrails, prompt variables. `inferenceConfig`
(sampling and output limits) and `requestMetadata` are bookkeeping, and a setting that spells the
model's default (`toolChoice: {"auto": {}}`, thinking `{"type": "disabled"}` where it is off by
default, the default effort) is the same cache key as leaving it out (the rules pack says which is
which, per model: `_classify.classify`). The hit signal is `usage.cacheReadInputTokens`
(`cacheReadInputTokenCount` in some responses); Bedrock gives no miss reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from harness._shared._views import CacheView, RequestSplit
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
from harness.providers._classify import classify

BEDROCK: Final = "bedrock"

_PATH: Final = re.compile(r"/model/(?P<model>[^/]+)/converse(?:-stream)?$")
_PROMPT: Final = frozenset({"messages", "system", "toolConfig"})
_MARKERS: Final = ("cachePoint",)
# Converse content blocks are one-key objects; the Anthropic shape has a `type`.
_CONVERSE_BLOCKS: Final = frozenset(
    {"text", "toolUse", "toolResult", "cachePoint", "image", "document", "reasoningContent"}
)


def model_in(url: str | None) -> str | None:
    return model_in_path(_PATH, url)


class BedrockConverse(Provider):
    name = BEDROCK

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is not None:
            return model_in(url) is not None
        if not isinstance(body.get("messages"), list):
            return False
        if "toolConfig" in body or "inferenceConfig" in body:
            return True
        return any(_converse_block(block) for block in _content_blocks(body))

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return self.split_url(body, headers, None)

    def split_url(
        self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]], url: str | None
    ) -> RequestSplit:
        config = body.get("toolConfig")
        tools: Any = None
        choices: dict[str, Any] = {}  # toolConfig's other members (toolChoice) are settings
        if isinstance(config, Mapping):
            tools = config.get("tools")
            choices = {k: v for k, v in config.items() if k != "tools"}
        model = model_in(url)
        settings, bookkeeping = classify(BEDROCK, {**body, **choices}, _PROMPT, model)
        if model is not None:
            settings["modelId"] = model
        settings = dict(sorted(settings.items()))
        blocks: dict[str, Any] = {}
        if tools is not None:
            blocks["tools"] = tools
        for key in ("system", "messages"):
            if key in body:
                blocks[key] = body[key]
        view = CacheView(settings=settings, blocks=blocks, provider=BEDROCK)
        points = breakpoints(blocks, _is_point)
        pointers = tuple(point_pointer(point, "cachePoint") for point in points)
        if not points:
            prefix_blocks: dict[str, Any] = {
                k: blocks[k] for k in ("tools", "system") if k in blocks
            }
            prefix = CacheView(settings=settings, blocks=prefix_blocks, provider=BEDROCK)
            return RequestSplit(
                BEDROCK, view, prefix, "automatic", markers=_MARKERS, bookkeeping=bookkeeping
            )
        prefix = CacheView(settings=settings, blocks=truncate(blocks, points[-1]), provider=BEDROCK)
        return RequestSplit(
            BEDROCK, view, prefix, "breakpoint", pointers[-1], pointers, _MARKERS, bookkeeping
        )

    def misplaced(self, body: Mapping[str, Any]) -> list[tuple[str, str]]:
        return misplaced_points(body)

    def usage(self, response: Any) -> CacheUsage | None:
        usage = member(response, "usage")
        if not isinstance(usage, dict):
            return None
        read = usage.get("cacheReadInputTokens", usage.get("cacheReadInputTokenCount"))
        written = usage.get("cacheWriteInputTokens", usage.get("cacheWriteInputTokenCount"))
        return CacheUsage(
            BEDROCK,
            read_tokens=integer(read),
            written_tokens=integer(written),
            uncached_tokens=integer(usage.get("inputTokens")),
            output_tokens=optional(usage.get("outputTokens")),
        )


def misplaced_points(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The cache points Converse refuses where they stand, as (JSON pointer, why):
    - nested in a block's own content (a `toolResult`'s, a document's): a cache point is a block
      of a message's content, the system list or the tool list, never inside another block
      (langchain-aws #499: "cachePoint must appear as a top-level block inside
      message[*].content[*]", a validation failure otherwise);
    - an orphan: first in its list, or right after another cache point: it marks no content of
      its own list;
    - right after a reasoning block ("Cache point cannot be inserted after reasoning block",
      anomalyco/opencode #36517)."""
    found: list[tuple[str, str]] = []
    config = body.get("toolConfig")
    lists: list[tuple[str, Any]] = [
        ("/toolConfig/tools", config.get("tools") if isinstance(config, Mapping) else None),
        ("/system", body.get("system")),
    ]
    messages = body.get("messages")
    if isinstance(messages, list):
        for index, message in enumerate(messages):
            content = message.get("content") if isinstance(message, dict) else None
            lists.append((f"/messages/{index}/content", content))
    for base, items in lists:
        if not isinstance(items, list):
            continue
        for index, item in enumerate(items):
            where = f"{base}/{index}"
            if _is_point(item):
                before = items[index - 1] if index else None
                if before is None or _is_point(before):
                    found.append((where, "a cache point with no content before it in its list"))
                elif isinstance(before, dict) and "reasoningContent" in before:
                    found.append((where, "a cache point right after a reasoning block"))
            elif isinstance(item, dict):
                found += [
                    (pointer, "a cache point nested inside another block's content")
                    for pointer in _nested_points(item, where)
                ]
    return found


def _nested_points(value: Any, where: str, depth: int = 0) -> list[str]:
    if depth > 16:
        return []
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "cachePoint" and depth:
                found.append(where)
            else:
                found += _nested_points(item, f"{where}/{key}", depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _nested_points(item, f"{where}/{index}", depth + 1)
    return found


def _content_blocks(body: Mapping[str, Any]) -> list[Any]:
    found: list[Any] = []
    system = body.get("system")
    if isinstance(system, list):
        found += system
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            found += content
    return found


def _converse_block(block: Any) -> bool:
    return isinstance(block, dict) and "type" not in block and bool(set(block) & _CONVERSE_BLOCKS)


def _is_point(item: Any) -> bool:
    return isinstance(item, dict) and "cachePoint" in item
