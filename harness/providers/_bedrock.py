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

InvokeModel (`/model/<model id>/invoke`, `invoke-with-response-stream`) takes the invoked model's
own body, so its shape is picked by the model id (`invoke_shape`, the table `INVOKE_SHAPES` of
model-id prefixes, the longest first; a cross-region profile's geography, `us.` or `global.`,
and an ARN's path are taken off before): Claude's is Anthropic Messages (`AnthropicMessages`
claims it), Amazon Nova's (`messages-v1`) is Converse's messages, system, tool config and cache
points (split here, the model from the URL), and Llama, Mistral's and DeepSeek's `prompt` and
Titan's `inputText` are one prompt text a later turn extends (judged as opaque text that may
grow at its end, the other members as settings). A model id the table does not know (an
application inference profile, a custom model) is read by what the body says of itself
(`anthropic_version`: Claude's; `schemaVersion: messages-v1`: Nova's). Any other body (Cohere's,
AI21's, Mistral Large's messages, a body that is not its model's shape) is judged byte for byte,
as opaque, with the setting `(body shape)` saying why: never as Anthropic's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NamedTuple

from harness._shared._views import OPAQUE, CacheView, RequestSplit
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
from harness.providers._opaque import BODY

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


class Shape(NamedTuple):
    """The body an InvokeModel request takes: Anthropic Messages, Converse's (Nova), one prompt
    text in member `field`, or none the harness reads (`opaque`)."""

    kind: Literal["anthropic", "converse", "text", "opaque"]
    field: str = ""


# Which body each model family's InvokeModel takes (docs.aws.amazon.com/bedrock/latest/userguide/
# model-parameters.html): the longest prefix of the model id wins. Mistral's Large 2407 and later
# send `messages`, not a `prompt`: not their row's shape, so opaque (see `_fits`).
INVOKE_SHAPES: Final[Mapping[str, Shape]] = {
    "anthropic.": Shape("anthropic"),  # Claude: Messages with `anthropic_version`
    "amazon.nova-": Shape("converse"),  # `schemaVersion: messages-v1`, cache points included
    "amazon.titan-text": Shape("text", "inputText"),
    "meta.llama": Shape("text", "prompt"),
    "mistral.": Shape("text", "prompt"),
    "deepseek.": Shape("text", "prompt"),  # DeepSeek-R1
    # families whose bodies the harness does not read (chat shapes of their own, embeddings,
    # images): judged whole, whatever the body says of itself
    "amazon.titan-": Shape("opaque"),
    "ai21.": Shape("opaque"),
    "cohere.": Shape("opaque"),
    "openai.": Shape("opaque"),
    "qwen.": Shape("opaque"),
    "stability.": Shape("opaque"),
    "writer.": Shape("opaque"),
}
_INVOKE: Final = re.compile(r"/model/(?P<model>[^/]+)/invoke(?:-with-response-stream)?$")
# What a body says of itself, for a model id no row knows.
_DECLARED: Final = (
    ("anthropic_version", None, Shape("anthropic")),
    ("schemaVersion", "messages-v1", Shape("converse")),
)
SHAPE: Final = "(body shape)"  # the setting that says why an InvokeModel body is judged whole


def invoked_model(url: str | None) -> str | None:
    """The model id of an InvokeModel URL (None for another URL)."""
    return model_in_path(_INVOKE, url)


def _family(model: str) -> Shape | None:
    """The table's row for `model`: an ARN's last part, then with a geography taken off."""
    name = model.rpartition("/")[2].lower()
    for candidate in (name, name.partition(".")[2]):
        rows = [prefix for prefix in INVOKE_SHAPES if candidate.startswith(prefix)]
        if rows:
            return INVOKE_SHAPES[max(rows, key=len)]
    return None


def invoke_shape(body: Mapping[str, Any], url: str | None) -> tuple[Shape, str] | None:
    """The shape an InvokeModel request's body is read as, and why when it is opaque; None for
    a URL that is no InvokeModel."""
    model = invoked_model(url)
    if model is None:
        return None
    shape = _family(model)
    if shape is None:
        declared = next(
            (s for key, value, s in _DECLARED if key in body and value in (None, body[key])), None
        )
        if declared is None:
            return Shape("opaque"), f"{model} is a model id whose InvokeModel body is not known"
        shape = declared
    if shape.kind == "opaque":
        return shape, f"{model} takes an InvokeModel body the harness does not read"
    if not _fits(shape, body):
        return Shape(
            "opaque"
        ), f"the body is not the {shape.field or shape.kind} shape {model} takes"
    return shape, ""


def _fits(shape: Shape, body: Mapping[str, Any]) -> bool:
    if shape.kind == "text":
        return isinstance(body.get(shape.field), str)
    return isinstance(body.get("messages"), list)


def _invoke_split(body: Mapping[str, Any], url: str | None) -> RequestSplit:
    """The split of a non-Claude InvokeModel body (Claude's is `AnthropicMessages`')."""
    found = invoke_shape(body, url)
    model = invoked_model(url) or ""
    shape, why = found if found is not None else (Shape("opaque"), "no model id in the URL")
    if shape.kind == "converse":
        return _converse_split(body, model)
    settings: dict[str, Any] = {"modelId": model}
    if shape.kind == "text":
        prompt: Any = body[shape.field]
        settings.update((k, v) for k, v in body.items() if k != shape.field)
    else:
        prompt = dict(body)
        settings[SHAPE] = f"{why}: judged byte for byte, as opaque"
    view = CacheView(
        settings=dict(sorted(settings.items())), blocks={BODY: prompt}, provider=OPAQUE
    )
    return RequestSplit(OPAQUE, view, view, "exact-prefix")


class BedrockConverse(Provider):
    name = BEDROCK

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is not None:
            shape = invoke_shape(body, url)
            if shape is not None:  # InvokeModel: every shape but Claude's (`AnthropicMessages`)
                return shape[0].kind != "anthropic"
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
        if invoked_model(url) is not None:
            return _invoke_split(body, url)
        return _converse_split(body, model_in(url))

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


def _converse_split(body: Mapping[str, Any], model: str | None) -> RequestSplit:
    """A Converse body's split (Nova's InvokeModel body too), the model id a setting."""
    config = body.get("toolConfig")
    tools: Any = None
    choices: dict[str, Any] = {}  # toolConfig's other members (toolChoice) are settings
    if isinstance(config, Mapping):
        tools = config.get("tools")
        choices = {k: v for k, v in config.items() if k != "tools"}
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
        prefix_blocks: dict[str, Any] = {k: blocks[k] for k in ("tools", "system") if k in blocks}
        prefix = CacheView(settings=settings, blocks=prefix_blocks, provider=BEDROCK)
        return RequestSplit(
            BEDROCK, view, prefix, "automatic", markers=_MARKERS, bookkeeping=bookkeeping
        )
    prefix = CacheView(settings=settings, blocks=truncate(blocks, points[-1]), provider=BEDROCK)
    return RequestSplit(
        BEDROCK, view, prefix, "breakpoint", pointers[-1], pointers, _MARKERS, bookkeeping
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
