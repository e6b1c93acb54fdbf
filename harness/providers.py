"""Provider cache views: a request body split into the order its provider's prompt cache reads.

- Anthropic Messages: tools, system, messages. The cacheable prefix ends at the last
  `cache_control` breakpoint; with none, the tools and system are the prefix (automatic caching),
  and a top-level `cache_control` makes the whole request the prefix.
- OpenAI Chat Completions: tools (or legacy `functions`), `response_format`, the leading
  system/developer messages, then the rest. Responses: tools, `text` format, `instructions`,
  `input`. OpenAI caches the exact prefix, so the whole request is the prefix.
- DeepSeek (an OpenAI-compatible `/chat/completions` on a deepseek host): system, tools, messages.

Settings that key the cache without being prompt text (model, thinking, reasoning effort, beta
headers, service tier, `prompt_cache_key`, tool choice...) are the view's `settings`; per-request
bookkeeping (`stream`, `max_tokens`, sampling parameters, `metadata`) is left out. The decision
note `docs/decisions/0005-capture.md` lists every key and why. This module needs no HTTP library:
`harness.capture` adds the transport.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import msgspec

from harness.drift import CacheView, DriftReport, canonical_bytes, compare

ANTHROPIC: Final = "anthropic"
OPENAI_CHAT: Final = "openai-chat"
OPENAI_RESPONSES: Final = "openai-responses"
DEEPSEEK: Final = "deepseek"

_BYTES_PER_TOKEN: Final = 4


class PrefixBroken(AssertionError):
    """Consecutive requests of one conversation do not extend each other's cacheable prefix."""

    def __init__(self, breaks: Sequence[PrefixBreak]) -> None:
        self.breaks = tuple(breaks)
        text = "\n".join(item.to_text() for item in self.breaks)
        super().__init__(
            f"{len(self.breaks)} cache prefix {'break' if len(self.breaks) == 1 else 'breaks'}"
            " (mark the test @pytest.mark.moves_header(reason=...) if the move is deliberate)\n\n"
            + text
        )


# -- provider views -----------------------------------------------------------------------------

# Keys that are per-request bookkeeping for the cache: sampling and output limits, streaming,
# metadata. Everything else that is not prompt text keys the cache (conservative by default).
_ANTHROPIC_BOOKKEEPING: Final = frozenset(
    {"stream", "max_tokens", "metadata", "temperature", "top_p", "top_k", "stop_sequences"}
)
_CHAT_BOOKKEEPING: Final = frozenset(
    {
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "metadata",
        "user",
        "temperature",
        "top_p",
        "n",
        "stop",
        "seed",
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "store",
        "safety_identifier",
        "prediction",
    }
)
_RESPONSES_BOOKKEEPING: Final = frozenset(
    {
        "stream",
        "stream_options",
        "max_output_tokens",
        "metadata",
        "user",
        "temperature",
        "top_p",
        "top_logprobs",
        "store",
        "background",
        "include",
        "safety_identifier",
        "previous_response_id",
        "conversation",
        "max_tool_calls",
    }
)


@dataclass(frozen=True)
class RequestSplit:
    """A request body in its provider's cache order, and the part the cache can keep.

    `prefix` is the cacheable prefix as a view of its own: for Anthropic the blocks up to the
    last `cache_control` marker (`breakpoint`, a JSON pointer into the body), or tools and system
    when there is none; for OpenAI and DeepSeek the whole request (exact-prefix caching).
    """

    provider: str
    view: CacheView
    prefix: CacheView
    rule: Literal["breakpoint", "automatic", "whole-request", "exact-prefix"]
    breakpoint: str | None = None

    @property
    def prefix_bytes(self) -> int:
        """Size of the cacheable prefix's prompt blocks, as `DriftReport` offsets count them."""
        return _prompt_size(self.prefix)


def detect_provider(body: Mapping[str, Any], url: str | None = None) -> str | None:
    """Which request format `body` is, by URL path when there is one, else by shape."""
    if url is not None:
        parts = urlsplit(url)
        path = parts.path.rstrip("/")
        host = (parts.hostname or "").lower()
        if (
            path.endswith("/messages")
            or path.endswith(":rawPredict")
            or path.endswith(":streamRawPredict")
        ):
            return ANTHROPIC if isinstance(body.get("messages"), list) else None
        if "anthropic_version" in body and (path.endswith("/invoke") or "/invoke-" in path):
            return ANTHROPIC
        if path.endswith("/chat/completions"):
            return DEEPSEEK if "deepseek" in host else OPENAI_CHAT
        if path.endswith("/responses"):
            return OPENAI_RESPONSES
        return None
    if "input" in body or "instructions" in body:
        return OPENAI_RESPONSES
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    tools = body.get("tools")
    tool_list = tools if isinstance(tools, list) else []
    if (
        "system" in body
        or "anthropic_version" in body
        or "thinking" in body
        or any(isinstance(tool, dict) and "input_schema" in tool for tool in tool_list)
        or any(_block_type(message) in {"tool_use", "tool_result"} for message in messages)
    ):
        return ANTHROPIC
    if (
        "functions" in body
        or "response_format" in body
        or "reasoning_effort" in body
        or "max_completion_tokens" in body
        or any(isinstance(tool, dict) and "function" in tool for tool in tool_list)
        or any(
            isinstance(message, dict) and message.get("role") in {"system", "developer", "tool"}
            for message in messages
        )
    ):
        return OPENAI_CHAT
    return None


def _block_type(message: Any) -> str | None:
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") in {"tool_use", "tool_result"}:
                return str(block["type"])
    return None


def split_request(
    body: Mapping[str, Any],
    *,
    url: str | None = None,
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
) -> RequestSplit | None:
    """The request in its provider's cache order, or None for a body this module does not know."""
    provider = detect_provider(body, url)
    if provider is None:
        return None
    pairs = _pairs(headers)
    if provider == ANTHROPIC:
        return _split_anthropic(body, pairs)
    if provider == OPENAI_RESPONSES:
        return _split_responses(body)
    return _split_chat(body, provider)


def view_of_body(
    body: Mapping[str, Any],
    *,
    url: str | None = None,
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
) -> CacheView | None:
    """The cache view of a provider request body; None when the body is not one we know."""
    split = split_request(body, url=url, headers=headers)
    return None if split is None else split.view


def _pairs(headers: Mapping[str, str] | Sequence[tuple[str, str]] | None) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return [(str(key).lower(), str(value)) for key, value in headers.items()]
    return [(str(key).lower(), str(value)) for key, value in headers]


def _settings(body: Mapping[str, Any], skip: frozenset[str]) -> dict[str, Any]:
    return {key: body[key] for key in sorted(body) if key not in skip}


def _split_anthropic(body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
    prompt = {"tools", "system", "messages", "cache_control"}
    settings = _settings(body, _ANTHROPIC_BOOKKEEPING | prompt)
    betas = [
        beta.strip()
        for name, value in headers
        if name == "anthropic-beta"
        for beta in value.split(",")
        if beta.strip()
    ]
    if betas:
        settings["anthropic-beta"] = betas
        settings = dict(sorted(settings.items()))
    blocks = {key: body[key] for key in ("tools", "system", "messages") if key in body}
    view = CacheView(settings=settings, blocks=blocks, provider=ANTHROPIC)
    if "cache_control" in body:  # automatic caching up to the last block
        return RequestSplit(ANTHROPIC, view, view, "whole-request", "/cache_control")
    point = _last_breakpoint(blocks)
    if point is None:
        prefix_blocks: dict[str, Any] = {k: blocks[k] for k in ("tools", "system") if k in blocks}
        prefix = CacheView(settings=settings, blocks=prefix_blocks, provider=ANTHROPIC)
        return RequestSplit(ANTHROPIC, view, prefix, "automatic")
    prefix = CacheView(settings=settings, blocks=_truncate(blocks, point), provider=ANTHROPIC)
    pointer = "/" + "/".join(str(part) for part in _pointer_parts(point, blocks))
    return RequestSplit(ANTHROPIC, view, prefix, "breakpoint", pointer)


def _last_breakpoint(blocks: Mapping[str, Any]) -> tuple[str, int, int] | None:
    """(block, index, content index) of the last `cache_control` marker in cache order."""
    last: tuple[str, int, int] | None = None
    tools = blocks.get("tools")
    if isinstance(tools, list):
        for index, tool in enumerate(tools):
            if isinstance(tool, dict) and "cache_control" in tool:
                last = ("tools", index, -1)
    system = blocks.get("system")
    if isinstance(system, list):
        for index, block in enumerate(system):
            if isinstance(block, dict) and "cache_control" in block:
                last = ("system", index, -1)
    messages = blocks.get("messages")
    if isinstance(messages, list):
        for index, message in enumerate(messages):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                for inner, block in enumerate(content):
                    if isinstance(block, dict) and "cache_control" in block:
                        last = ("messages", index, inner)
    return last


def _pointer_parts(point: tuple[str, int, int], blocks: Mapping[str, Any]) -> list[str | int]:
    name, index, inner = point
    parts: list[str | int] = [name, index]
    if inner >= 0:
        parts += ["content", inner]
    return [*parts, "cache_control"]


def _truncate(blocks: Mapping[str, Any], point: tuple[str, int, int]) -> dict[str, Any]:
    name, index, inner = point
    out: dict[str, Any] = {}
    for key, value in blocks.items():
        if key != name:
            out[key] = value
            continue
        if inner < 0:
            out[key] = value[: index + 1]
        else:
            message = dict(value[index])
            message["content"] = list(message["content"])[: inner + 1]
            out[key] = [*value[:index], message]
        break
    return out


def _split_chat(body: Mapping[str, Any], provider: str) -> RequestSplit:
    prompt = {"tools", "functions", "response_format", "messages"}
    settings = _settings(body, _CHAT_BOOKKEEPING | prompt)
    messages = body.get("messages")
    leading: list[Any] = []
    rest: list[Any] = []
    if isinstance(messages, list):
        count = 0
        while count < len(messages) and _role(messages[count]) in {"system", "developer"}:
            count += 1
        leading, rest = messages[:count], messages[count:]
    tools: dict[str, Any] = {}
    if "tools" in body:
        tools["tools"] = body["tools"]
    elif "functions" in body:
        tools["tools"] = body["functions"]
    if "response_format" in body:
        tools["response_format"] = body["response_format"]
    system = {"system": leading} if leading else {}
    blocks = {**system, **tools} if provider == DEEPSEEK else {**tools, **system}
    if messages is not None:
        blocks["messages"] = rest if isinstance(messages, list) else messages
    view = CacheView(settings=settings, blocks=blocks, provider=provider)
    return RequestSplit(provider, view, view, "exact-prefix")


def _split_responses(body: Mapping[str, Any]) -> RequestSplit:
    prompt = {"tools", "text", "instructions", "input"}
    settings = _settings(body, _RESPONSES_BOOKKEEPING | prompt)
    blocks: dict[str, Any] = {}
    if "tools" in body:
        blocks["tools"] = body["tools"]
    if "text" in body:
        blocks["response_format"] = body["text"]
    for key in ("instructions", "input"):
        if key in body:
            blocks[key] = body[key]
    view = CacheView(settings=settings, blocks=blocks, provider=OPENAI_RESPONSES)
    return RequestSplit(OPENAI_RESPONSES, view, view, "exact-prefix")


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def _prompt_size(view: CacheView) -> int:
    """The bytes of the view's prompt blocks as drift.compare counts them (settings excluded)."""
    without = canonical_bytes(CacheView(settings={}, blocks=view.blocks))
    empty = len(b'{"settings":{}}')
    return 0 if not view.blocks else len(without) - empty - 1


# -- prefix chains ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrefixBreak:
    """Request `index` does not extend the cacheable prefix of request `previous` (1-based)."""

    index: int
    previous: int
    block: str
    report: DriftReport
    prefix_bytes: int
    bytes_lost: int

    @property
    def tokens_lost(self) -> int:
        return self.bytes_lost // _BYTES_PER_TOKEN

    def to_text(self) -> str:
        head = (
            f"request {self.index} does not extend request {self.previous}'s cacheable prefix:"
            f" the {self.block} block broke first; {self.bytes_lost:,} of {self.prefix_bytes:,}"
            f" prefix bytes lost (~{self.tokens_lost:,} tokens, bytes / {_BYTES_PER_TOKEN})"
        )
        return f"{head}\n{self.report.to_text()}"


def check_prefix_chain(items: Sequence[Any]) -> list[PrefixBreak]:
    """Each request must extend the previous one's cacheable prefix; the breaks, in order.

    `items` are captured requests, `RequestSplit`s, `CacheView`s (taken as exact-prefix, the whole
    view being the prefix) or request bodies; unrecognised requests are skipped. "Extends" means:
    the same settings, every prefix block before the last one equal, and the last prefix block a
    prefix of the next request's (messages: the previous messages, then more). Anthropic's
    `cache_control` markers are ignored in the comparison, since moving the breakpoint forward is
    how a conversation keeps its cache. A Responses request that continues a stored response
    (`previous_response_id`, `conversation`) is not judged: its prefix lives on the server.
    """
    numbered: list[tuple[int, RequestSplit, bool]] = []
    for position, item in enumerate(items, start=1):
        split, stored = _as_split(item)
        if split is not None:
            number = item.number if isinstance(item, Captured) else position
            numbered.append((number, split, stored))
    breaks: list[PrefixBreak] = []
    for (number_a, a, _), (number_b, b, stored) in itertools.pairwise(numbered):
        if stored:
            continue
        prefix = a.prefix
        candidate = _cut_like(prefix, b.view, a.provider)
        if a.provider == ANTHROPIC:
            prefix, candidate = _unmarked(prefix), _unmarked(candidate)
        report = compare(
            prefix,
            candidate,
            label_a=f"request {number_a} (cacheable prefix)",
            label_b=f"request {number_b}",
        )
        if report.identical:
            continue
        size = _prompt_size(prefix)
        kept = min(report.prefix_bytes_kept, size)
        breaks.append(
            PrefixBreak(
                index=number_b,
                previous=number_a,
                block=report.block or "settings",
                report=report,
                prefix_bytes=size,
                bytes_lost=size - kept,
            )
        )
    return breaks


def _as_split(item: Any) -> tuple[RequestSplit | None, bool]:
    if isinstance(item, Captured):
        body = item.json()
        stored = isinstance(body, dict) and (
            "previous_response_id" in body or "conversation" in body
        )
        return item.split, stored
    if isinstance(item, RequestSplit):
        return item, False
    if isinstance(item, CacheView):
        return RequestSplit(item.provider, item, item, "exact-prefix"), False
    if isinstance(item, Mapping):
        stored = "previous_response_id" in item or "conversation" in item
        return split_request(item), stored
    raise TypeError(f"cannot check the prefix of a {type(item).__name__}")


def _cut_like(prefix: CacheView, view: CacheView, provider: str) -> CacheView:
    """`view` cut to the shape of `prefix`: its blocks, the last one no longer than prefix's."""
    blocks: dict[str, Any] = {}
    names = list(prefix.blocks)
    for position, name in enumerate(names):
        if name not in view.blocks:
            continue
        value, shape = view.blocks[name], prefix.blocks[name]
        if position == len(names) - 1:
            if isinstance(value, list) and isinstance(shape, list):
                value = value[: len(shape)]
                if provider == ANTHROPIC and value and shape:
                    value = [*value[:-1], _cut_message(value[-1], shape[-1])]
            elif isinstance(value, str) and isinstance(shape, str):
                value = value[: len(shape)]
        blocks[name] = value
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def _cut_message(message: Any, shape: Any) -> Any:
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    content, cut = message.get("content"), shape.get("content")
    if isinstance(content, list) and isinstance(cut, list) and len(content) > len(cut):
        return {**message, "content": content[: len(cut)]}
    return message


def _unmarked(view: CacheView) -> CacheView:
    blocks = {name: _strip_markers(value) for name, value in view.blocks.items()}
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def _strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_markers(item) for item in value]
    return value


# -- what a session saw -------------------------------------------------------------------------


@dataclass
class Captured:
    """One request the transport saw, with its exact body bytes and its cache split."""

    number: int
    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    split: RequestSplit | None
    status: int | None = None
    source: str = ""  # "cassette", "upstream" or "proof"

    @property
    def view(self) -> CacheView | None:
        return None if self.split is None else self.split.view

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    def json(self) -> Any:
        try:
            return msgspec.json.decode(self.body)
        except msgspec.DecodeError:
            return None


def split_exchange(
    method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
) -> RequestSplit | None:
    if method.upper() != "POST" or not body:
        return None
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if not isinstance(decoded, dict):
        return None
    return split_request(decoded, url=url, headers=headers)
