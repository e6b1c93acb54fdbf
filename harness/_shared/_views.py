"""The cache view: a request as a provider's prompt cache reads it, and every conversion to it.

Providers cache the request prefix byte for byte. Anthropic hashes tools, then system, then
messages, and a change invalidates its level and every level after it; OpenAI caches the exact
prefix; settings such as the model change the cache key without being prompt text. A `CacheView`
is `settings`, then the prompt blocks in cache order. `canonical_bytes` is its one encoding, and
every offset in a drift report indexes those bytes.

This module is the bottom of the harness: the drift comparator, the providers, the proof and the
CLI all take views from here and never re-derive one. It converts the harness's own values (the
reference runtime's `Header` and `Request`, a recorded request, a plain request dict, a tool
list); a provider's wire body is split by its provider (`harness.providers`), which returns a
`RequestSplit`: the view and the part of it the cache can keep.

Everything is compared by its JSON encoding, never by Python equality: `1`, `1.0` and `true` are
equal in Python and different on the wire, and so are two dicts with the same items in another
order. Values JSON cannot hold are compared by their `repr` rather than crashing a report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, TypeVar

import msgspec

__all__ = [
    "OPAQUE",
    "OPAQUE_NOTE",
    "PROMPT_BLOCKS",
    "SETTINGS",
    "UNRECOGNISED",
    "CacheView",
    "RequestSplit",
    "Window",
    "canonical_bytes",
    "common_prefix",
    "document",
    "encode_json",
    "plain",
    "prompt_bytes",
    "prompt_size",
    "view_of_header",
    "view_of_mapping",
    "view_of_request",
    "view_of_tools",
    "window",
]

SETTINGS: Final = "settings"
PROMPT_BLOCKS: Final = ("tools", "system", "messages")
# The provider name of a body no provider recognised: one block, compared whole.
UNRECOGNISED: Final = "unrecognised"
UNRECOGNISED_NOTE: Final = "no provider recognised this request; its bytes are compared whole"
# The provider name of a request on a captured host that no provider claims: the prefix chain
# still judges it, as opaque bytes, whole (`harness.providers._opaque`).
OPAQUE: Final = "opaque"
OPAQUE_NOTE: Final = (
    "no provider recognised this request: it was judged as opaque bytes, whole (a later request"
    " must extend the earlier one's bytes)"
)

# Fields of the harness's own request shape (`harness.agent._llm.Request` and its recorded form),
# and of its header (`harness.agent._session.Header`).
_REQUEST_FIELDS: Final = frozenset(
    {"provider", "model", "max_tokens", "temperature", *PROMPT_BLOCKS, "session_id"}
)
_HEADER_FIELDS: Final = frozenset({"config", "system", "tools"})

encode_json = msgspec.json.encode


class CacheView(msgspec.Struct, frozen=True):
    """A request or header as a provider's prompt cache sees it.

    `settings` holds the model and every non-prompt setting that changes the cache key; `blocks`
    holds the prompt blocks in cache order (insertion order is the cache order), absent blocks
    omitted. A block cannot be named "settings": that name is the settings' place in
    `canonical_bytes`.
    """

    settings: dict[str, Any]
    blocks: dict[str, Any]
    provider: str = "harness"

    def __post_init__(self) -> None:
        if SETTINGS in self.blocks:
            raise ValueError('a prompt block cannot be named "settings" (the settings go there)')


@dataclass(frozen=True)
class RequestSplit:
    """A request in its provider's cache order, and the part the cache can keep.

    `prefix` is the cacheable prefix as a view of its own: for Anthropic the blocks up to the
    last `cache_control` marker (`breakpoint`, a JSON pointer into the body), or tools and system
    when there is none; for exact-prefix providers the whole request. `breakpoints` lists every
    explicit cache marker in cache order (the last one is `breakpoint`). `markers` names the
    keys that mark a breakpoint inside a block (Anthropic's `cache_control`): moving one forward
    is how a conversation keeps its cache, so the prefix chain ignores them. `bookkeeping` holds
    the request's fields that never reach the cache (streaming, output limits, diagnostics
    requests...), by key, so a report can name them when only they differ. `held` says what of
    the prompt the provider's server holds rather than the request: "" (the request carries all
    of it), `conversation` (OpenAI's `previous_response_id` or `conversation`: the earlier turns;
    the tools and instructions are sent again) or `prefix` (Anthropic's server-held message
    thread: everything before the new messages, tools and system included).
    """

    provider: str
    view: CacheView
    prefix: CacheView
    rule: Literal["breakpoint", "automatic", "whole-request", "exact-prefix"]
    breakpoint: str | None = None
    breakpoints: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()
    bookkeeping: dict[str, Any] = field(default_factory=dict, compare=False)
    held: Literal["", "conversation", "prefix"] = ""

    @property
    def prefix_bytes(self) -> int:
        """Size of the cacheable prefix's prompt blocks, as `DriftReport` offsets count them."""
        return prompt_size(self.prefix)

    @classmethod
    def whole(cls, view: CacheView) -> RequestSplit:
        """A view whose cacheable prefix is all of it (exact-prefix caching)."""
        return cls(view.provider, view, view, "exact-prefix")


# -- conversions ------------------------------------------------------------------------------


def view_of_header(header: Any) -> CacheView:
    """A runtime `Header` as a cache sees it: the config as encoded, then tools, then system."""
    settings = plain(header.config)
    blocks: dict[str, Any] = {}
    if not isinstance(header.tools, msgspec.UnsetType):
        blocks["tools"] = plain(header.tools)
    if not isinstance(header.system, msgspec.UnsetType):
        blocks["system"] = header.system
    return CacheView(settings=settings if isinstance(settings, dict) else {}, blocks=blocks)


def view_of_request(request: Any) -> CacheView:
    """A request in the harness's own shape (a runtime `Request`, a recorded one, or its dict).

    Settings are every encoded field that is not prompt text (provider, model, max_tokens,
    temperature when set); `session_id` is bookkeeping, not a cache key, and is left out. A
    recorded request's placeholders and message digests compare as they are.
    """
    encoded = plain(request)
    fields: dict[str, Any] = encoded if isinstance(encoded, dict) else {}
    settings = {
        key: value
        for key, value in fields.items()
        if key not in PROMPT_BLOCKS and key != "session_id"
    }
    blocks: dict[str, Any] = {key: fields[key] for key in PROMPT_BLOCKS if key in fields}
    return CacheView(settings=settings, blocks=blocks)


def view_of_tools(tools: Any) -> CacheView:
    """A bare tool list: one `tools` block, no settings."""
    return CacheView({}, {"tools": msgspec.to_builtins(list(tools))})


def view_of_mapping(body: Mapping[str, Any]) -> CacheView:
    """A dict no provider recognised.

    In the harness's own request shape (only provider, model, max_tokens, temperature, tools,
    system, messages, session_id) it is read as such a request, and in its header shape (config,
    system, tools) as a header. Anything else is one block,
    compared whole, with provider `unrecognised`, so a report says so (never a verdict that
    guesses which key is a setting: a Gemini `systemInstruction` is not a model change).
    """
    if set(body) <= _REQUEST_FIELDS:
        return view_of_request(dict(body))
    if "config" in body and set(body) <= _HEADER_FIELDS and isinstance(body["config"], Mapping):
        blocks: dict[str, Any] = {k: plain(body[k]) for k in ("tools", "system") if k in body}
        return CacheView(settings=plain(dict(body["config"])), blocks=blocks)
    return CacheView({}, {"body": plain(dict(body))}, provider=UNRECOGNISED)


# -- the canonical encoding -------------------------------------------------------------------


def canonical_bytes(view: CacheView) -> bytes:
    """`{"settings": ..., <block>: ..., ...}` as JSON, blocks in cache order: what offsets index."""
    return encode_json(document(view))


def document(view: CacheView) -> dict[str, Any]:
    """The view as the plain JSON object `canonical_bytes` encodes."""
    settings = plain(view.settings)
    doc: dict[str, Any] = {SETTINGS: settings if isinstance(settings, dict) else {}}
    for key, value in view.blocks.items():
        name = _key(key)
        if name != SETTINGS:
            doc[name] = plain(value)
    return doc


def prompt_bytes(doc: Mapping[str, Any]) -> bytes:
    """A document's prompt blocks as they appear in canonical bytes (settings left out)."""
    return b",".join(
        encode_json(key) + b":" + encode_json(value)
        for key, value in doc.items()
        if key != SETTINGS
    )


def prompt_size(view: CacheView) -> int:
    """The bytes of the view's prompt blocks as a drift report counts them (settings excluded)."""
    return len(prompt_bytes(document(view)))


def plain(value: Any) -> Any:
    """The value as the wire holds it: JSON objects, arrays, strings, numbers, booleans, null."""
    try:
        return msgspec.json.decode(msgspec.json.encode(value, enc_hook=repr))
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError):
        return _coerce(value)


def _coerce(value: Any) -> Any:
    """The slow path for values msgspec refuses (keys that are not strings or numbers...)."""
    if isinstance(value, msgspec.Struct):
        value = msgspec.structs.asdict(value)
    if isinstance(value, Mapping):
        return {_key(key): _coerce(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_coerce(item) for item in value]
    try:
        return msgspec.json.decode(msgspec.json.encode(value, enc_hook=repr))
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError):
        return repr(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        # a lone surrogate (from json.loads or os.fsdecode) cannot be encoded as UTF-8
        return key.encode("utf-8", "backslashreplace").decode()
    converted = _coerce(key)
    return converted if isinstance(converted, str) else encode_json(converted).decode()


_Seq = TypeVar("_Seq", str, bytes)
_CHUNK: Final = 1 << 16


def common_prefix(a: _Seq, b: _Seq) -> int:
    """The length of the common prefix of two strings or two byte strings: for two encodings,
    how many bytes of a cached prefix the second keeps. It compares in chunks (memcmp), so two
    50 MB values cost milliseconds, not a copy per halving."""
    limit = min(len(a), len(b))
    start = 0
    while start < limit and a[start : start + _CHUNK] == b[start : start + _CHUNK]:
        start += _CHUNK
    if start >= limit:
        return limit
    low, high = start, min(start + _CHUNK, limit)  # a[:low] == b[:low], they differ before high
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low if a[low : low + 1] != b[low : low + 1] else high


WINDOW_REACH: Final = 16 * 1024  # bytes kept on each side of a difference, for its excerpt


class Window(NamedTuple):
    """The raw bytes around a first difference (at most `WINDOW_REACH` on each side of `mark`),
    and whether the value goes on beyond them: what an excerpt is printed from
    (`harness._shared._printer.excerpt`, which redacts before it cuts)."""

    data: bytes
    mark: int
    more_before: bool = False
    more_after: bool = False


def window(data: bytes, offset: int, *, more_before: bool = False) -> Window:
    """The window of `data` around `offset` (`more_before`: `data` is itself a cut)."""
    mark = min(max(offset, 0), len(data))
    start = max(mark - WINDOW_REACH, 0)
    end = min(mark + WINDOW_REACH, len(data))
    return Window(data[start:end], mark - start, more_before or start > 0, end < len(data))
