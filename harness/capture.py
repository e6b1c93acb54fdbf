"""Capture the request headers real agents send through the `anthropic` and `openai` SDKs.

Most agents do not run the harness's reference runtime: they call a provider SDK, which sends
JSON over `httpx2` (or plain `httpx`). A `CaptureSession` hands out HTTP clients whose transport
records each request's exact body bytes and answers it from a cassette (replay, no network) or
from an upstream transport (record). Every request body is split into the provider's cache
order (`split_request`):

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
note `docs/decisions/0005-capture.md` lists every key and why.

Nothing reaches a file without redaction: secret headers and query parameters are replaced by
`[redacted]`, then the bytes about to be written are scanned for key-shaped strings (and for the
values of the redacted headers), and a hit raises `SecretLeak` so nothing is written at all. The
session never writes a file itself: `finish()` returns the files for the caller (the pytest
plugin, on the controller process) to write.
"""

from __future__ import annotations

import base64
import importlib
import itertools
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, Literal, NamedTuple
from urllib.parse import urlsplit

import httpx2
import msgspec

from harness.drift import CacheView, DriftReport, canonical_bytes, compare
from harness.fixture import Versioned, encode, read
from harness.paths import UnsafeName, file_name_for, safe_component

__all__ = [
    "MODES",
    "REDACTED",
    "CaptureError",
    "CaptureFile",
    "CaptureSession",
    "CaptureTransport",
    "Captured",
    "CassetteMismatch",
    "CassetteMissing",
    "Exchange",
    "Finished",
    "HttpRequest",
    "HttpResponse",
    "PrefixBreak",
    "PrefixBroken",
    "Proof",
    "Redaction",
    "RequestSplit",
    "SecretFinding",
    "SecretLeak",
    "cassette_path_for",
    "check_prefix_chain",
    "current_session",
    "detect_provider",
    "scan_secrets",
    "split_request",
    "view_of_body",
]

Mode = Literal["check", "record", "update", "update-new-only"]
MODES: Final[tuple[str, ...]] = ("check", "record", "update", "update-new-only")
REDACTED: Final = "[redacted]"

ANTHROPIC: Final = "anthropic"
OPENAI_CHAT: Final = "openai-chat"
OPENAI_RESPONSES: Final = "openai-responses"
DEEPSEEK: Final = "deepseek"

_BYTES_PER_TOKEN: Final = 4


# -- errors -------------------------------------------------------------------------------------


class CaptureError(Exception):
    """A request could not be answered from the cassette, or a cassette could not be written."""


class CassetteMissing(CaptureError):
    """A request has no recorded exchange (no cassette, or more requests than it holds)."""


class CassetteMismatch(CaptureError):
    """A request differs from the recorded one at its place; `report` says where."""

    def __init__(self, message: str, report: DriftReport | None = None) -> None:
        self.report = report
        super().__init__(message if report is None else f"{message}\n\n{report.to_text()}")


class SecretLeak(CaptureError):
    """Bytes about to be written hold something key-shaped. The message never quotes it."""

    def __init__(self, target: str, findings: Sequence[SecretFinding]) -> None:
        self.target = target
        self.findings = tuple(findings)
        shown = "; ".join(finding.describe() for finding in self.findings[:10])
        more = f"; and {len(self.findings) - 10} more" if len(self.findings) > 10 else ""
        super().__init__(
            f"refusing to write {target}: it would hold {len(self.findings)} secret-looking"
            f" {'string' if len(self.findings) == 1 else 'strings'} ({shown}{more}); nothing was"
            " written. Redact the header (CaptureSession(redaction=Redaction(headers=...))),"
            " keep the secret out of the prompt, or allow a known fake value"
            " (Redaction(allow=...))"
        )


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


# -- the file format ----------------------------------------------------------------------------


class HttpRequest(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A request as stored: redacted headers as ordered pairs, and the exact body.

    The body is in exactly one of: `json` (the parsed body, when re-encoding it compactly gives
    back the exact bytes sent, which is what the SDKs send: readable and diffable), `text` (UTF-8
    that is not such JSON) or `base64`.
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    json: Any | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def body(self) -> bytes:
        return _body_bytes(self.json, self.text, msgspec.UNSET, self.base64)


class HttpResponse(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A response as stored. Server-sent events are kept as `lines` (joined by "\\n")."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    json: Any | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    lines: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def body(self) -> bytes:
        return _body_bytes(self.json, self.text, self.lines, self.base64)


class Exchange(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    request: HttpRequest
    response: HttpResponse


class Proof(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The exchanges of the first build of one `prove_stable` call (identity order).

    Every other order of that call is answered from them by position, so a shuffled build gets
    the same answers and only its request bytes can differ.
    """

    units: tuple[str, ...] = ()
    exchanges: tuple[Exchange, ...] = ()


class CaptureFile(Versioned, frozen=True, kw_only=True, tag="harness/capture"):
    """A cassette: the test's requests and answers in order, then one entry per prove_stable."""

    exchanges: tuple[Exchange, ...] = ()
    proofs: tuple[Proof, ...] = ()


def _body_fields(data: bytes, *, sse: bool) -> dict[str, Any]:
    if not data:
        return {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    if sse and "\r" not in text:
        return {"lines": tuple(text.split("\n"))}
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return {"text": text}
    if msgspec.json.encode(value) == data:
        return {"json": value}
    return {"text": text}


def _body_bytes(json: Any, text: Any, lines: Any, b64: Any) -> bytes:
    if not isinstance(json, msgspec.UnsetType):
        return msgspec.json.encode(json)
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(lines, tuple | list):
        return "\n".join(lines).encode("utf-8")
    if isinstance(b64, str):
        return base64.b64decode(b64)
    return b""


def _request_record(
    method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
) -> HttpRequest:
    kept = tuple((name, value) for name, value in headers if not _volatile_request_header(name))
    return HttpRequest(method=method, url=url, headers=kept, **_body_fields(body, sse=False))


def _response_record(status: int, headers: Sequence[tuple[str, str]], body: bytes) -> HttpResponse:
    kept = tuple((name.lower(), value) for name, value in headers if name.lower() not in _FRAMING)
    sse = _header(kept, "content-type", "").startswith("text/event-stream")
    return HttpResponse(status=status, headers=kept, **_body_fields(body, sse=sse))


# Transport framing: the stored body is decoded, so these would lie on replay.
_FRAMING: Final = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection"}
)
# Per-machine and per-attempt request headers: dropped so a re-record elsewhere is identical.
_VOLATILE_REQUEST: Final = frozenset(
    {"host", "user-agent", "accept-encoding", "connection", "content-length", "idempotency-key"}
)


def _volatile_request_header(name: str) -> bool:
    lower = name.lower()
    return lower in _VOLATILE_REQUEST or lower.startswith("x-stainless-")


def _header(headers: Sequence[tuple[str, str]], name: str, default: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return default


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


# -- redaction ----------------------------------------------------------------------------------

DEFAULT_SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-admin-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "x-auth-token",
        "x-access-token",
        "x-csrf-token",
        "x-session-token",
    }
)
# Any header whose name holds one of these words is redacted too (x-portkey-api-key, ...).
_SECRET_HEADER_WORDS: Final = ("auth", "key", "secret", "token", "password", "cookie", "credential")
_SAFE_HEADER_PREFIXES: Final = ("anthropic-ratelimit-", "x-ratelimit-")
DEFAULT_SECRET_QUERY: Final = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "token",
        "secret",
        "client_secret",
        "password",
        "sig",
        "signature",
    }
)


class SecretPattern(NamedTuple):
    kind: str
    regex: re.Pattern[str]


SECRET_PATTERNS: Final = (
    SecretPattern("an Anthropic API key (sk-ant-...)", re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}")),
    SecretPattern("a secret key (sk-...)", re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")),
    SecretPattern(
        "a bearer token (Bearer ...)", re.compile(r"\bBearer\s+[A-Za-z0-9\-._~+/]{16,}=*")
    ),
    SecretPattern("an AWS access key id (AKIA...)", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    SecretPattern(
        "a GitHub token (ghp_...)",
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ),
    SecretPattern("a Google API key (AIza...)", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    SecretPattern("a Slack token (xox...)", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    SecretPattern("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    SecretPattern(
        "a JSON web token",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ),
    SecretPattern(
        "a long credential after a key-like name (api_key, secret, token, password)",
        re.compile(
            r"(?i)(?:api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token"
            r"|auth[_-]?token|refresh[_-]?token|password|passwd)[\"'\\]*\s*[:=]\s*[\"'\\]*"
            r"[A-Za-z0-9+/_\-]{32,}"
        ),
    ),
)


@dataclass(frozen=True)
class SecretFinding:
    """Where something key-shaped is; never the thing itself."""

    kind: str
    line: int
    column: int

    def describe(self) -> str:
        return f"{self.kind} at line {self.line}, column {self.column}"


def _header_is_secret(name: str, deny: frozenset[str]) -> bool:
    lower = name.lower()
    if lower in deny:
        return True
    if lower.startswith(_SAFE_HEADER_PREFIXES):
        return False
    return any(word in lower for word in _SECRET_HEADER_WORDS)


@dataclass(frozen=True)
class Redaction:
    """What is redacted before a cassette is written, and what the scan allows.

    `headers`: header names (lower case) whose values become `[redacted]`; names holding
    "auth", "key", "secret", "token", "password", "cookie" or "credential" are redacted too.
    `query`: URL query parameters redacted the same way. `patterns`: the key-shaped strings
    that fail a recording. `allow`: exact strings the scan accepts (known fake test keys).
    """

    headers: frozenset[str] = DEFAULT_SECRET_HEADERS
    query: frozenset[str] = DEFAULT_SECRET_QUERY
    patterns: tuple[SecretPattern, ...] = SECRET_PATTERNS
    allow: frozenset[str] = frozenset()

    def header_pairs(self, pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        return tuple(
            (name, REDACTED if _header_is_secret(name, self.headers) else value)
            for name, value in pairs
        )

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        if not parts.query:
            return url
        params = []
        for item in parts.query.split("&"):
            name, sep, value = item.partition("=")
            if sep and name.lower() in self.query and value:
                value = REDACTED
            params.append(f"{name}{sep}{value}")
        return parts._replace(query="&".join(params)).geturl()

    def secret_values(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """The values of redacted headers (without a `Bearer ` prefix), to look for elsewhere."""
        values = []
        for name, value in pairs:
            if _header_is_secret(name, self.headers) and value != REDACTED:
                bare = value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value
                if len(bare) >= 8:
                    values.append(bare)
        return values

    def scan(self, data: bytes, secrets: Sequence[str] = ()) -> list[SecretFinding]:
        return scan_secrets(data, self.patterns, allow=self.allow, secrets=secrets)


def scan_secrets(
    data: bytes,
    patterns: Sequence[SecretPattern] = SECRET_PATTERNS,
    *,
    allow: frozenset[str] = frozenset(),
    secrets: Sequence[str] = (),
) -> list[SecretFinding]:
    """Key-shaped strings in `data`, and exact occurrences of `secrets`, by line and column."""
    text = data.decode("utf-8", "replace")
    spans: list[tuple[int, int, str]] = []
    for pattern in patterns:
        for match in pattern.regex.finditer(text):
            if match.group() in allow:
                continue
            if any(start < match.end() and match.start() < end for start, end, _ in spans):
                continue
            spans.append((match.start(), match.end(), pattern.kind))
    for secret in secrets:
        if secret in allow:
            continue
        for match in re.finditer(re.escape(secret), text):
            spans.append((match.start(), match.end(), "the value of a redacted header"))
    findings = []
    for start, _, kind in sorted(spans):
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        findings.append(SecretFinding(kind, line, column))
    return findings


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


def _split_of(
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


class Finished(NamedTuple):
    """What `CaptureSession.finish` hands back: files to write, and prefix-break findings."""

    files: list[tuple[Path, bytes]]
    prefix_breaks: list[PrefixBreak]


@dataclass
class _Ticket:
    captured: Captured
    reply: HttpResponse | None = None  # None: forward to the upstream
    store: Callable[[Exchange], None] | None = None


@dataclass
class _ProofState:
    number: int
    units: tuple[str, ...]
    recorded: tuple[Exchange, ...] | None  # the cassette's entry for this call, if any
    out: list[Exchange] = field(default_factory=list)
    reference: list[Exchange] = field(default_factory=list)
    build: int | None = None
    captured: list[Captured] = field(default_factory=list)
    positions: dict[tuple[str, str], int] = field(default_factory=dict)
    appended: bool = False  # build 0 recorded an exchange the cassette did not hold


_ACTIVE: list[CaptureSession] = []
_ACTIVE_LOCK = threading.Lock()


def current_session() -> CaptureSession:
    """The session of the prove_stable build running now (module-level builds use it)."""
    with _ACTIVE_LOCK:
        if _ACTIVE:
            return _ACTIVE[-1]
    raise LookupError(
        "no capture session is active: current_session() works inside a build that"
        " prove_stable runs with a capture session (the header_capture fixture)"
    )


class ProofRun:
    """One prove_stable call's builds on a session; see `CaptureSession.proving`."""

    def __init__(self, session: CaptureSession, state: _ProofState) -> None:
        self._session = session
        self._state = state

    @contextmanager
    def build(self, index: int) -> Iterator[list[Captured]]:
        """Run one build: its requests are answered by position and collected in the list."""
        state = self._state
        with self._session._lock:
            state.build = index
            state.captured = []
            state.positions = {}
        collected = state.captured
        with _ACTIVE_LOCK:
            _ACTIVE.append(self._session)
        try:
            yield collected
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.remove(self._session)
            with self._session._lock:
                if index == 0 and not state.reference:
                    state.reference = list(state.out or state.recorded or ())
                state.build = None

    def reference_file(self) -> CaptureFile:
        """The reference exchanges as a one-proof cassette (redacted), for hash-seed children."""
        exchanges = tuple(self._state.reference)
        return self._session._redacted(CaptureFile(proofs=(Proof(units=(), exchanges=exchanges),)))


# -- the session --------------------------------------------------------------------------------


class CaptureSession:
    """Hands out HTTP clients that capture every request and answer it (see the module doc).

    Modes: `check` replays the cassette and fails on any request that does not match its
    recorded place (never writes); `record` forwards every request to the upstream and rewrites
    the cassette; `update` answers from the cassette by position and rewrites the request bytes
    (so a deliberate header change needs no live model), forwarding only requests beyond the
    recording; `update-new-only` checks what is recorded and records only what is not.
    Without a cassette path or a recording the session just forwards and captures.
    """

    def __init__(
        self,
        *,
        cassette: Path | None = None,
        mode: str = "record",
        writes_allowed: bool = True,
        upstream: object | None = None,
        recorded: CaptureFile | None = None,
        redaction: Redaction | None = None,
        record_hint: str = "record it: run the tests in record or update-new-only mode",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown capture mode {mode!r}; expected one of {', '.join(MODES)}")
        self.cassette = cassette
        self.mode: str = mode if writes_allowed else "check"
        self.writes_allowed = writes_allowed
        self.upstream = upstream
        self.redaction = redaction or Redaction()
        self.record_hint = record_hint
        self.moves_header: str | None = None
        self.errors: list[CaptureError] = []
        self.notes: list[str] = []
        if not writes_allowed and mode != "check":
            self.notes.append(f"capture mode {mode} ran as check: writes are not allowed here")
        self._lock = threading.RLock()
        self._recorded = recorded
        if (
            recorded is None
            and cassette is not None
            and self.mode != "record"
            and cassette.exists()
        ):
            self._recorded = read(cassette, CaptureFile)
        self._requests: list[Captured] = []
        self._out: list[Exchange] = []
        self._used: set[int] = set()
        self._positions: dict[tuple[str, str], int] = {}
        self._appended = False
        self._boundaries: list[int] = []
        self._proofs: list[_ProofState] = []
        self._sync_upstream: object | None = None
        self._async_upstream: object | None = None
        if self.mode == "update-new-only" and self._recorded is not None:
            self._out = list(self._recorded.exchanges)

    @classmethod
    def for_test(
        cls,
        cassette_path: Path,
        mode: str,
        *,
        writes_allowed: bool,
        upstream: object | None = None,
        redaction: Redaction | None = None,
        record_hint: str | None = None,
    ) -> CaptureSession:
        """The session of one test: its cassette, the run's mode, and whether writes may happen."""
        session = cls(
            cassette=Path(cassette_path),
            mode=mode,
            writes_allowed=writes_allowed,
            upstream=upstream,
            redaction=redaction,
        )
        if record_hint:
            session.record_hint = record_hint
        return session

    # -- clients --------------------------------------------------------------------------------

    def transport(self) -> CaptureTransport:
        """An `httpx2` transport (sync and async) for `httpx2.Client(transport=...)`."""
        return CaptureTransport(self)

    def httpx_transport(self) -> Any:
        """The same for plain `httpx` clients (needs the `httpx` package)."""
        module = importlib.import_module("httpx")
        return _transport_class(module)(self)

    def httpx2_client(self, **kwargs: Any) -> httpx2.Client:
        """An `httpx2.Client` for `anthropic.Anthropic(http_client=...)` / `openai.OpenAI`."""
        return httpx2.Client(transport=self.transport(), **kwargs)

    def httpx2_async_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=self.transport(), **kwargs)

    def httpx_client(self, **kwargs: Any) -> Any:
        """A plain `httpx.Client` (the openai SDK accepts one; the anthropic SDK does not)."""
        module = importlib.import_module("httpx")
        return module.Client(transport=self.httpx_transport(), **kwargs)

    def httpx_async_client(self, **kwargs: Any) -> Any:
        module = importlib.import_module("httpx")
        return module.AsyncClient(transport=self.httpx_transport(), **kwargs)

    # -- what was captured ----------------------------------------------------------------------

    @property
    def requests(self) -> list[Captured]:
        """The test's own requests in order (prove_stable builds are kept apart)."""
        with self._lock:
            return list(self._requests)

    def views(self) -> list[CacheView]:
        """The cache views of the recognised requests, in order."""
        return [r.split.view for r in self.requests if r.split is not None]

    def new_conversation(self) -> None:
        """Requests from here on start another conversation: no prefix check across the line."""
        with self._lock:
            self._boundaries.append(len(self._requests))

    def prefix_breaks(self) -> list[PrefixBreak]:
        """Every place a request does not extend the previous one's cacheable prefix."""
        requests = self.requests
        with self._lock:
            cuts = sorted({0, *self._boundaries, len(requests)})
        breaks: list[PrefixBreak] = []
        for start, end in itertools.pairwise(cuts):
            breaks.extend(check_prefix_chain(requests[start:end]))
        return breaks

    def assert_prefix_extends(self) -> None:
        """Raise `PrefixBroken` unless each request extends the previous one's cacheable prefix.

        A test marked `moves_header(reason=...)` (the plugin sets `moves_header`) passes, and the
        breaks are kept as notes.
        """
        breaks = self.prefix_breaks()
        if not breaks:
            return
        if self.moves_header is not None:
            self.notes.extend(
                f"expected header move ({self.moves_header}): {item.to_text().splitlines()[0]}"
                for item in breaks
            )
            return
        raise PrefixBroken(breaks)

    # -- prove_stable support -------------------------------------------------------------------

    def proving(self, units: Sequence[str]) -> ProofRun:
        """Start one prove_stable call: its builds get answers by position (see `Proof`)."""
        with self._lock:
            number = len(self._proofs)
            recorded: tuple[Exchange, ...] | None = None
            known = self._recorded.proofs if self._recorded is not None else ()
            if self.mode != "record" and number < len(known):
                recorded = known[number].exchanges or None
            state = _ProofState(number=number, units=tuple(units), recorded=recorded)
            self._proofs.append(state)
        return ProofRun(self, state)

    # -- finishing ------------------------------------------------------------------------------

    def finish(self) -> Finished:
        """The files to write (none in check mode or after a replay error) and the prefix breaks.

        Raises `SecretLeak` (and returns nothing to write) when the cassette would hold a secret.
        """
        breaks = self.prefix_breaks()
        files: list[tuple[Path, bytes]] = []
        if self.cassette is not None and self.mode != "check" and not self.errors:
            data = self.encoded()
            if data is not None:
                try:
                    unchanged = self.cassette.read_bytes() == data
                except OSError:
                    unchanged = False
                if not unchanged:
                    files.append((self.cassette, data))
        return Finished(files, breaks)

    def cassette_file(self) -> CaptureFile | None:
        """The cassette this run would write (unredacted, in memory), or None for nothing new."""
        with self._lock:
            new_proof = any(state.appended for state in self._proofs)
            if self.mode == "update-new-only" and not (self._appended or new_proof):
                return None
            proofs = [
                Proof(units=state.units, exchanges=tuple(state.out or state.recorded or ()))
                for state in self._proofs
            ]
            if self.mode == "update-new-only" and self._recorded is not None:
                proofs += self._recorded.proofs[len(proofs) :]  # never drop what was recorded
            while proofs and not proofs[-1].exchanges:
                proofs.pop()
            if not self._out and not proofs:
                return None
            return CaptureFile(exchanges=tuple(self._out), proofs=tuple(proofs))

    def encoded(self) -> bytes | None:
        """The exact bytes the cassette file would get: redacted, then scanned for secrets."""
        capture = self.cassette_file()
        if capture is None:
            return None
        secrets = self._secret_values(capture)
        data = encode(self._redacted(capture))
        findings = self.redaction.scan(data, secrets)
        if findings:
            raise SecretLeak(self._shown(), findings)
        return data

    def _secret_values(self, capture: CaptureFile) -> list[str]:
        values: list[str] = []
        for exchange in _all_exchanges(capture):
            values += self.redaction.secret_values(exchange.request.headers)
            values += self.redaction.secret_values(exchange.response.headers)
        with self._lock:
            for captured in self._requests:
                values += self.redaction.secret_values(captured.headers)
        return sorted(set(values))

    def _redacted(self, capture: CaptureFile) -> CaptureFile:
        def one(exchange: Exchange) -> Exchange:
            request = msgspec.structs.replace(
                exchange.request,
                url=self.redaction.url(exchange.request.url),
                headers=self.redaction.header_pairs(exchange.request.headers),
            )
            response = msgspec.structs.replace(
                exchange.response, headers=self.redaction.header_pairs(exchange.response.headers)
            )
            return Exchange(request, response)

        return CaptureFile(
            exchanges=tuple(one(e) for e in capture.exchanges),
            proofs=tuple(
                Proof(units=p.units, exchanges=tuple(one(e) for e in p.exchanges))
                for p in capture.proofs
            ),
        )

    def _shown(self) -> str:
        """The cassette's path as messages show it: relative to the working folder if inside."""
        if self.cassette is None:
            return "(in memory)"
        try:
            return str(self.cassette.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            return str(self.cassette)

    # -- the transport's side (sans I/O) --------------------------------------------------------

    def _receive(
        self, method: str, url: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> _Ticket:
        with self._lock:
            proof = next((state for state in self._proofs if state.build is not None), None)
            split = _split_of(method, url, headers, body)
            if proof is not None:
                return self._receive_proof(proof, method, url, tuple(headers), body, split)
            captured = Captured(len(self._requests) + 1, method, url, tuple(headers), body, split)
            self._requests.append(captured)
            try:
                return self._answer(captured)
            except CaptureError as error:
                self._requests.pop()  # an unanswered request is not part of the conversation
                if all(str(error) != str(known) for known in self.errors):  # SDK retries
                    self.errors.append(error)
                raise

    def _answer(self, captured: Captured) -> _Ticket:
        recorded = self._recorded.exchanges if self._recorded is not None else ()
        if self.mode == "record":
            return _Ticket(captured, None, self._out.append)
        if self.mode == "update":
            index = self._next_position(recorded, captured)
            if index is None:
                return _Ticket(captured, None, self._out.append)
            self._out.append(Exchange(self._request_of(captured), recorded[index].response))
            captured.source = "cassette"
            return _Ticket(captured, recorded[index].response)
        index = self._strict_match(recorded, captured)
        if index is not None:
            captured.source = "cassette"
            return _Ticket(captured, recorded[index].response)
        if self.mode == "update-new-only":

            def append(exchange: Exchange) -> None:
                self._out.append(exchange)
                self._appended = True

            return _Ticket(captured, None, append)
        where = (
            f"the cassette {self._shown()} does not exist"
            if self.cassette is not None and self._recorded is None
            else f"the cassette {self._shown()} holds no further"
            f" {captured.method} {captured.path} exchange ({len(recorded)} recorded)"
        )
        raise CassetteMissing(
            f"request {captured.number} ({captured.method} {captured.path}) has no recorded"
            f" answer: {where}; {self.record_hint}"
        )

    def _request_of(self, captured: Captured) -> HttpRequest:
        return _request_record(captured.method, captured.url, captured.headers, captured.body)

    def _next_position(self, recorded: Sequence[Exchange], captured: Captured) -> int | None:
        key = (captured.method, captured.path)
        start = self._positions.get(key, 0)
        for index in range(start, len(recorded)):
            request = recorded[index].request
            if (request.method, urlsplit(request.url).path) == key:
                self._positions[key] = index + 1
                return index
        self._positions[key] = len(recorded)
        return None

    def _strict_match(self, recorded: Sequence[Exchange], captured: Captured) -> int | None:
        candidates = [
            index
            for index, exchange in enumerate(recorded)
            if index not in self._used
            and exchange.request.method == captured.method
            and urlsplit(exchange.request.url).path == captured.path
        ]
        if not candidates:
            return None
        for index in candidates:
            if self._same(recorded[index].request, captured):
                self._used.add(index)
                self._note_raw_difference(recorded[index].request, captured)
                return index
        first = candidates[0]
        raise self._mismatch(first, recorded[first].request, captured)

    def _same(self, request: HttpRequest, captured: Captured) -> bool:
        if self.redaction.url(request.url) != self.redaction.url(captured.url):
            return False
        old = _split_of(request.method, request.url, request.headers, request.body)
        if old is not None and captured.split is not None:
            return canonical_bytes(old.view) == canonical_bytes(captured.split.view)
        return request.body == captured.body

    def _note_raw_difference(self, request: HttpRequest, captured: Captured) -> None:
        if request.body != captured.body:
            self.notes.append(
                f"request {captured.number}: body bytes differ from the recording outside the"
                " cache view (stream, max_tokens, sampling or key order); update mode rewrites"
                " them"
            )

    def _mismatch(self, index: int, request: HttpRequest, captured: Captured) -> CassetteMismatch:
        old = _split_of(request.method, request.url, request.headers, request.body)
        head = (
            f"request {captured.number} ({captured.method} {captured.path}) does not match"
            f" exchange {index + 1} of cassette {self._shown()}"
        )
        hint = "if the change is deliberate, run in update mode to rewrite the recorded requests"
        if old is None or captured.split is None:
            offset = _common_prefix(request.body, captured.body)
            return CassetteMismatch(f"{head}: the bodies differ from byte {offset}; {hint}")
        report = compare(old.view, captured.split.view, label_a="recorded", label_b="live")
        severity = ""
        if canonical_bytes(old.prefix) == canonical_bytes(captured.split.prefix):
            severity = " (after the cacheable prefix: the cache is not affected)"
        return CassetteMismatch(f"{head}{severity}: {report.block} block first; {hint}", report)

    def _receive_proof(
        self,
        state: _ProofState,
        method: str,
        url: str,
        headers: tuple[tuple[str, str], ...],
        body: bytes,
        split: RequestSplit | None,
    ) -> _Ticket:
        build = state.build or 0
        captured = Captured(len(state.captured) + 1, method, url, headers, body, split, None)
        captured.source = "proof"
        state.captured.append(captured)
        reference = state.reference if build > 0 else list(state.recorded or ())
        if build == 0 and self.mode == "record":
            return self._proof_forward(state, captured)
        key = (method, captured.path)
        start = state.positions.get(key, 0)
        for index in range(start, len(reference)):
            request = reference[index].request
            if (request.method, urlsplit(request.url).path) == key:
                state.positions[key] = index + 1
                if build == 0 and self.mode == "update":
                    state.out.append(
                        Exchange(self._request_of(captured), reference[index].response)
                    )
                elif build == 0 and self.mode == "update-new-only":
                    state.out.append(reference[index])
                return _Ticket(captured, reference[index].response)
        state.positions[key] = len(reference)
        if build == 0:
            if self.mode == "check":
                error = CassetteMissing(
                    f"prove_stable call {state.number + 1}: request {captured.number}"
                    f" ({method} {captured.path}) has no recorded answer in cassette"
                    f" {self._shown()}; {self.record_hint}"
                )
                self.errors.append(error)
                raise error
            return self._proof_forward(state, captured)
        raise CaptureError(
            f"prove_stable order {build + 1} sent request {captured.number} ({method}"
            f" {captured.path}), but the first order sent no such request at that place: the"
            " number of requests itself depends on the order"
        )

    def _proof_forward(self, state: _ProofState, captured: Captured) -> _Ticket:
        def store(exchange: Exchange) -> None:
            state.out.append(exchange)
            state.appended = True

        return _Ticket(captured, None, store)

    def _complete(
        self, ticket: _Ticket, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> HttpResponse:
        response = _response_record(status, headers, body)
        captured = ticket.captured
        with self._lock:
            captured.status = status
            if not captured.source:
                captured.source = "upstream"
            if ticket.store is not None:
                ticket.store(Exchange(self._request_of(captured), response))
        return response

    def _upstream(self, *, asynchronous: bool) -> object:
        if self.upstream is not None:
            return self.upstream
        with self._lock:
            if asynchronous:
                if self._async_upstream is None:
                    self._async_upstream = httpx2.AsyncHTTPTransport()
                return self._async_upstream
            if self._sync_upstream is None:
                self._sync_upstream = httpx2.HTTPTransport()
            return self._sync_upstream


def _all_exchanges(capture: CaptureFile) -> Iterator[Exchange]:
    yield from capture.exchanges
    for proof in capture.proofs:
        yield from proof.exchanges


def _common_prefix(a: bytes, b: bytes) -> int:
    limit = min(len(a), len(b))
    return next((i for i in range(limit) if a[i] != b[i]), limit)


# -- transports ---------------------------------------------------------------------------------


def _module_of(transport: object) -> Any:
    for cls in type(transport).__mro__:
        top = getattr(cls, "__module__", "").partition(".")[0]
        if top in ("httpx", "httpx2") and top in sys.modules:
            return sys.modules[top]
    return None


def _same_module(a: Any, b: Any) -> bool:
    return a is b or (a is not None and b is not None and a.Request is b.Request)


class _Adapter:
    """The transport logic shared by the `httpx2` and `httpx` flavours."""

    _module: Any = httpx2

    def __init__(self, session: CaptureSession) -> None:
        self.session = session

    def _ticket(self, request: Any, body: bytes) -> _Ticket:
        __tracebackhide__ = True
        headers = [(str(k).lower(), str(v)) for k, v in request.headers.multi_items()]
        try:
            return self.session._receive(str(request.method), str(request.url), headers, body)
        except CaptureError as error:
            raise _surfaced(error) from None

    def _reply(self, request: Any, response: HttpResponse) -> Any:
        headers = [(k, v) for k, v in response.headers if k.lower() not in _FRAMING]
        return self._module.Response(
            response.status, headers=headers, content=response.body, request=request
        )

    def _outgoing(self, request: Any, upstream: object) -> Any:
        module = _module_of(upstream)
        if module is None or _same_module(module, self._module):
            return request
        return module.Request(
            request.method, str(request.url), headers=request.headers.raw, content=request.content
        )

    def handle_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        body = bytes(request.read())
        ticket = self._ticket(request, body)
        reply = ticket.reply
        if reply is None:
            upstream: Any = self.session._upstream(asynchronous=False)
            response = upstream.handle_request(self._outgoing(request, upstream))
            try:
                content = bytes(response.read())
            finally:
                response.close()
            reply = self.session._complete(
                ticket, response.status_code, response.headers.multi_items(), content
            )
        return self._reply(request, reply)

    async def handle_async_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        body = bytes(await request.aread())
        ticket = self._ticket(request, body)
        reply = ticket.reply
        if reply is None:
            upstream: Any = self.session._upstream(asynchronous=True)
            response = await upstream.handle_async_request(self._outgoing(request, upstream))
            try:
                content = bytes(await response.aread())
            finally:
                await response.aclose()
            reply = self.session._complete(
                ticket, response.status_code, response.headers.multi_items(), content
            )
        return self._reply(request, reply)

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


_SDK_ERRORS: Final = (("anthropic", "AnthropicError"), ("openai", "OpenAIError"))
_SURFACED: dict[tuple[type[Any], ...], type[Any]] = {}


def _surfaced(error: CaptureError) -> CaptureError:
    """`error` as an instance that also derives from the loaded SDKs' base errors.

    The SDKs wrap any other transport exception in a connection error and retry it with
    back-off; their own errors they raise as they are. So a cassette error reaches the test
    directly, once, still an instance of its harness class.
    """
    bases: list[type[Any]] = []
    for module_name, class_name in _SDK_ERRORS:
        module = sys.modules.get(module_name)
        base = getattr(module, class_name, None) if module is not None else None
        if isinstance(base, type) and issubclass(base, Exception):
            bases.append(base)
    if not bases:
        return error
    key = (type(error), *bases)
    if key not in _SURFACED:
        cls = type(error)
        _SURFACED[key] = type(cls.__name__, (cls, *bases), {"__module__": cls.__module__})
    made: Any = _SURFACED[key]
    surfaced: CaptureError = made.__new__(made)
    surfaced.__dict__.update(error.__dict__)
    surfaced.args = error.args
    return surfaced


class CaptureTransport(_Adapter, httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """The `httpx2` transport of a `CaptureSession` (sync and async clients alike)."""

    _module = httpx2


_CLASSES: dict[str, type[Any]] = {}


def _transport_class(module: Any) -> type[Any]:
    """The capture transport class for an `httpx`-like module (plain `httpx`, or `httpx2`)."""
    if module is httpx2 or module.BaseTransport is httpx2.BaseTransport:
        return CaptureTransport
    name = module.__name__
    if name not in _CLASSES:
        _CLASSES[name] = type(
            "HttpxCaptureTransport",
            (_Adapter, module.BaseTransport, module.AsyncBaseTransport),
            {"_module": module, "__doc__": f"The `{name}` transport of a CaptureSession."},
        )
    return _CLASSES[name]


# -- where cassettes live -----------------------------------------------------------------------


def cassette_path_for(root: Path, nodeid: str) -> Path:
    """`root/<test file path without .py>/<test name>.json` for a pytest node id.

    Parts that are not safe file names (parametrize ids with brackets, say) become a safe slug
    with a short hash (`harness.paths.file_name_for`), so two tests never share a cassette.
    """
    file_part, _, test_part = nodeid.partition("::")
    folder = Path(root)
    pure = PurePosixPath(file_part.replace("\\", "/"))
    parts = [*pure.parent.parts, pure.stem] if pure.suffix == ".py" else list(pure.parts)
    for part in parts:
        if part in ("", ".", "/"):
            continue
        folder = folder / _safe(part)
    name = test_part.replace("::", ".") or "module"
    return folder / f"{_safe(name)}.json"


def _safe(name: str) -> str:
    try:
        return safe_component(name)
    except UnsafeName:
        return file_name_for(name)


def load_cassette(path: Path) -> CaptureFile:
    """Read a cassette strictly (a `FixtureError` names the file and the problem)."""
    return read(path, CaptureFile)
