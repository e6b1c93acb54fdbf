"""The drift report: what moved between two request headers, and what it costs in prompt cache.

Providers cache the request prefix byte for byte. Anthropic hashes tools, then system, then
messages, and a change invalidates its level and every level after it; OpenAI caches the exact
prefix (tools, then instructions, then the rest); settings such as the model change the cache key
without being prompt text. A `CacheView` is a request as such a cache sees it: the settings, then
the prompt blocks in cache order. `compare` says which block diverged first, in the providers' own
cache-miss vocabulary (`model_changed`, `tools_changed`, `system_changed`, `messages_changed`),
where (a JSON pointer and a byte offset into `canonical_bytes` that agree with each other), which
tool is there and which plugin registered it, how much cached prefix is lost, and a structured diff.

Everything is compared by its JSON encoding, never by Python equality: `1`, `1.0` and `true` are
equal in Python and different on the wire, and so are two dicts with the same items in another
order. Token counts are an approximation: bytes // 4, the usual rule of thumb for English text and
JSON (CJK text and long identifiers run denser); they size the loss, they do not bill it.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

import msgspec

from harness.agent.llm import Request
from harness.agent.session import Header

__all__ = [
    "CacheView",
    "DriftReport",
    "Reproduce",
    "canonical_bytes",
    "compare",
    "compare_values",
    "first_difference",
    "view_of_header",
    "view_of_request",
    "volatile_hints",
]

MARKER: Final = "<<HERE>>"  # where the difference starts, inside a context
_CONTEXT_BEFORE: Final = 20
_CONTEXT_SIZE: Final = 80
_BYTES_PER_TOKEN: Final = 4
_MAX_HINTS: Final = 10
_MAX_DEEPDIFF_LINES: Final = 20
_MAX_TOOL_ROWS: Final = 60

SETTINGS: Final = "settings"

# Block keys -> the providers' cache-miss reason. Aliases cover the providers' own block names
# (OpenAI `instructions`/`input`, Gemini `system_instruction`/`contents`) so a view built in a
# provider's vocabulary still gets one of the four reasons.
_VERDICTS: Final[dict[str, str]] = {
    SETTINGS: "model_changed",
    "tools": "tools_changed",
    "system": "system_changed",
    "instructions": "system_changed",
    "system_instruction": "system_changed",
    "messages": "messages_changed",
    "input": "messages_changed",
    "contents": "messages_changed",
}

_KIND_TEXT: Final[dict[str, str]] = {
    "reorder": "same tools, other order",
    "content": "same tool names in the same order; a tool's content changed",
    "added": "tools added",
    "removed": "tools removed",
    "added-and-removed": "tools added and removed",
    "reorder-and-content": "same tools in another order, and a tool's content changed",
    "settings": "a setting that keys the cache changed",
    "text": "the system text changed",
    "messages": "the conversation changed",
    "block-order": "the same blocks in another order",
}


# -- the public types ---------------------------------------------------------------------------


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


class Reproduce(msgspec.Struct, frozen=True):
    """How to get the same two sides again."""

    seed: int | None = None
    order_a: tuple[str, ...] = ()
    order_b: tuple[str, ...] = ()
    command: str | None = None


class DriftReport(msgspec.Struct, frozen=True, omit_defaults=True):
    """What differs between two sides, where, and what it costs. See `compare`."""

    identical: bool
    verdict: str | None = None
    block: str | None = None
    invalidated: tuple[str, ...] = ()
    kind: str | None = None
    summary: str = ""
    pointer: str = ""
    offset: int = -1
    context_a: str = ""
    context_b: str = ""
    tool: str | None = None
    settings_changed: tuple[str, ...] = ()
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    tools_a: tuple[str, ...] = ()
    tools_b: tuple[str, ...] = ()
    prefix_bytes_kept: int = 0
    prefix_bytes_lost: int = 0
    tokens_kept: int = 0
    tokens_lost: int = 0
    provenance: str | None = None
    reproduce: Reproduce | None = None
    volatile_hints: tuple[str, ...] = ()
    deepdiff: dict[str, Any] = {}
    label_a: str = "expected"
    label_b: str = "actual"

    def to_text(self) -> str:
        """Plain text for terminals: the summary, then one labelled line per fact."""
        return "\n".join(_text_lines(self)) + "\n"

    def to_markdown(self) -> str:
        """Markdown for CI summaries (a GitHub step summary)."""
        return "\n".join(_markdown_lines(self)) + "\n"

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)


# -- views --------------------------------------------------------------------------------------


def view_of_header(header: Header) -> CacheView:
    """The header as a cache sees it: the config as encoded, then tools, then system."""
    settings = _plain(header.config)
    blocks: dict[str, Any] = {}
    if not isinstance(header.tools, msgspec.UnsetType):
        blocks["tools"] = _plain(header.tools)
    if not isinstance(header.system, msgspec.UnsetType):
        blocks["system"] = header.system
    return CacheView(settings=settings if isinstance(settings, dict) else {}, blocks=blocks)


_REQUEST_PROMPT_FIELDS: Final = frozenset({"system", "tools", "messages", "session_id"})


def view_of_request(request: Request) -> CacheView:
    """The request as a cache sees it: its settings as encoded, then tools, system, messages.

    Settings are every encoded field that is not prompt text (provider, model, max_tokens,
    temperature when set); `session_id` is bookkeeping, not a cache key, and is left out.
    """
    encoded = _plain(request)
    fields: dict[str, Any] = encoded if isinstance(encoded, dict) else {}
    settings = {key: value for key, value in fields.items() if key not in _REQUEST_PROMPT_FIELDS}
    blocks: dict[str, Any] = {
        key: fields[key] for key in ("tools", "system", "messages") if key in fields
    }
    return CacheView(settings=settings, blocks=blocks)


def canonical_bytes(view: CacheView) -> bytes:
    """`{"settings": ..., <block>: ..., ...}` as JSON, blocks in cache order: what offsets index."""
    return _enc(_doc(view))


# -- comparing ----------------------------------------------------------------------------------


def compare(
    a: CacheView,
    b: CacheView,
    *,
    owners: Mapping[str, str | None] | None = None,
    reproduce: Reproduce | None = None,
    label_a: str = "expected",
    label_b: str = "actual",
) -> DriftReport:
    """The drift from `a` (expected) to `b` (actual), as a provider's prompt cache sees it.

    Settings are compared first (any difference is `model_changed` and loses every block), then
    the blocks in `a`'s order followed by blocks only `b` has: the first whose encoding differs is
    the verdict, and it and every block after it lose their cache. `owners` maps tool names to the
    plugin that registered them, for provenance.
    """
    doc_a, doc_b = _doc(a), _doc(b)
    bytes_a, bytes_b = _enc(doc_a), _enc(doc_b)
    prompt_a, prompt_b = _prompt_bytes(doc_a), _prompt_bytes(doc_b)
    if bytes_a == bytes_b:
        return DriftReport(
            identical=True,
            summary=(
                f"identical: {label_a} and {label_b} encode to the same {len(bytes_a):,} bytes;"
                f" the whole prefix stays cached ({len(prompt_b):,} prompt bytes,"
                f" ~{_tokens(len(prompt_b)):,} tokens)"
            ),
            prefix_bytes_kept=len(prompt_b),
            tokens_kept=_tokens(len(prompt_b)),
            reproduce=reproduce,
            label_a=label_a,
            label_b=label_b,
        )

    offset = _first_byte_difference(bytes_a, bytes_b)
    path = _walk(doc_a, doc_b) or []
    pointer = _pointer(path)
    order = _block_order(doc_a, doc_b)
    settings_a, settings_b = doc_a[SETTINGS], doc_b[SETTINGS]
    settings_changed = _changed_keys(settings_a, settings_b)

    block: str
    if _enc(settings_a) != _enc(settings_b):
        block, kind, invalidated = SETTINGS, "settings", tuple(order)
        kept = 0
    else:
        changed = [key for key in order if _enc_member(doc_a, key) != _enc_member(doc_b, key)]
        if changed:
            block = changed[0]
            kind = _block_kind(block)
        else:  # same blocks, same contents, another order
            keys_a = [key for key in doc_a if key != SETTINGS]
            keys_b = [key for key in doc_b if key != SETTINGS]
            block = next(x for x, y in zip(keys_a, keys_b, strict=False) if x != y)
            kind = "block-order"
        invalidated = tuple(order[order.index(block) :])
        kept = _common_prefix(prompt_a, prompt_b)
    lost = len(prompt_b) - kept
    verdict = _VERDICTS.get(block, f"{block}_changed")

    tools = None
    tools_a_value, tools_b_value = doc_a.get("tools", _ABSENT), doc_b.get("tools", _ABSENT)
    if _enc_member(doc_a, "tools") != _enc_member(doc_b, "tools"):
        tools = _tools_diff(tools_a_value, tools_b_value)
        if block == "tools":
            kind = tools.kind

    tool = _tool_at(path, tools_a_value, tools_b_value)
    focus = tool
    if tools is not None and block == "tools" and kind in ("reorder", "reorder-and-content"):
        if tools.mismatch is not None and tools.mismatch < len(tools.names_b):
            focus = tools.names_b[tools.mismatch]
        if kind == "reorder":
            tool = focus
    provenance = _provenance(owners, focus)

    hint_a, hint_b = _enc_member(doc_a, block), _enc_member(doc_b, block)
    hints = _hints(
        hint_a.decode("utf-8", "replace"),
        hint_b.decode("utf-8", "replace"),
        differential=bool(hint_a) and bool(hint_b),
    )

    summary = _summary(
        verdict=verdict,
        block=block,
        kind=kind,
        pointer=pointer,
        offset=offset,
        tool=tool,
        focus=focus,
        provenance=provenance,
        tools=tools,
        doc_a=doc_a,
        doc_b=doc_b,
        settings_changed=settings_changed,
        lost=lost,
        labels=(label_a, label_b),
    )
    return DriftReport(
        identical=False,
        verdict=verdict,
        block=block,
        invalidated=invalidated,
        kind=kind,
        summary=summary,
        pointer=pointer,
        offset=offset,
        context_a=_context(bytes_a, offset),
        context_b=_context(bytes_b, offset),
        tool=tool,
        settings_changed=settings_changed,
        tools_added=tools.added if tools else (),
        tools_removed=tools.removed if tools else (),
        tools_a=tools.names_a if tools else (),
        tools_b=tools.names_b if tools else (),
        prefix_bytes_kept=kept,
        prefix_bytes_lost=lost,
        tokens_kept=_tokens(kept),
        tokens_lost=_tokens(lost),
        provenance=provenance,
        reproduce=reproduce,
        volatile_hints=hints,
        deepdiff=_deepdiff(doc_a, doc_b),
        label_a=label_a,
        label_b=label_b,
    )


def compare_values(
    a: Any, b: Any, *, label_a: str = "expected", label_b: str = "actual"
) -> DriftReport:
    """The first difference between two JSON-able values (session logs, pins), by encoding.

    There is no cache verdict; `block` is the first segment of the pointer (None at the root).
    """
    plain_a, plain_b = _plain(a), _plain(b)
    bytes_a, bytes_b = _enc(plain_a), _enc(plain_b)
    if bytes_a == bytes_b:
        return DriftReport(
            identical=True,
            summary=f"identical: {label_a} and {label_b} encode to the same {len(bytes_a):,} bytes",
            label_a=label_a,
            label_b=label_b,
        )
    offset = _first_byte_difference(bytes_a, bytes_b)
    path = _walk(plain_a, plain_b) or []
    pointer = _pointer(path)
    value_a, value_b = _resolve(plain_a, path), _resolve(plain_b, path)
    text_a = "" if value_a is _ABSENT else _enc(value_a).decode("utf-8", "replace")
    text_b = "" if value_b is _ABSENT else _enc(value_b).decode("utf-8", "replace")
    summary = (
        f"values differ at {_show_pointer(pointer)}, byte {offset}: {label_a} has"
        f" {_short_encoded(value_a)}, {label_b} has {_short_encoded(value_b)}"
    )
    return DriftReport(
        identical=False,
        block=path[0] if path else None,
        summary=summary,
        pointer=pointer,
        offset=offset,
        context_a=_context(bytes_a, offset),
        context_b=_context(bytes_b, offset),
        volatile_hints=_hints(text_a, text_b, differential=bool(text_a) and bool(text_b)),
        deepdiff=_deepdiff(plain_a, plain_b),
        label_a=label_a,
        label_b=label_b,
    )


def first_difference(a: Any, b: Any) -> str | None:
    """The JSON pointer (RFC 6901) of the first difference in encoding order; None if equal.

    Both values are walked in the order they encode. In two objects, members are compared index
    by index: the same key with a different value descends into that value; a different key at
    the same index names the member when it exists on one side only (an insertion or a removal),
    and otherwise (a rename, a reorder) points at the object itself, whose key sequence is what
    differs. In two arrays, elements are compared in order. When one side runs out of members
    first, the pointer names the first extra or missing one. Anything else that differs (types,
    scalars, strings) is the difference itself. The result agrees with the first differing byte
    of the two encodings: that byte lies inside the encoding of the member the pointer names (its
    separator and key included), on one side or both, and every member before it encodes
    identically.
    """
    path = _walk(_plain(a), _plain(b))
    return None if path is None else _pointer(path)


# -- volatile content ---------------------------------------------------------------------------

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_EVERY_RUN = (
    "volatile content in a header breaks the cache on every run;"
    " move it into the messages or pin it"
)
_EVERY_MACHINE = (
    "machine-specific content in a header breaks the cache on every other machine and checkout;"
    " make it relative or pin it"
)


class _Pattern(NamedTuple):
    noun: str  # with its article: "looks like <noun>"
    regex: re.Pattern[str]
    advice: str


# In priority order: a span claimed by an earlier pattern is not reported again by a later one.
_PATTERNS: Final = (
    _Pattern(
        "a timestamp",
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        _EVERY_RUN,
    ),
    _Pattern(
        "a UUID",
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        _EVERY_RUN,
    ),
    _Pattern(
        "a date",
        re.compile(
            rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{4}}\b"
            rf"|\b{_MONTH} \d{{1,2}},? \d{{4}}\b|\b\d{{1,2}} {_MONTH} \d{{4}}\b"
        ),
        _EVERY_RUN,
    ),
    _Pattern("a time of day", re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"), _EVERY_RUN),
    _Pattern("a Unix time", re.compile(r"\b1\d{9}(?:\d{3}|\d{6})?\b"), _EVERY_RUN),
    _Pattern(
        "an absolute path",
        re.compile(
            r"(?:/home/|/tmp/|/Users/|/var/folders/|/private/var/|/private/tmp/|/root/)"
            r"[^\s\"'`<>|,;()\[\]{}\\]*"
            r"|\b[A-Za-z]:(?:\\\\|\\|/)[^\s\"'`<>|,;()\[\]{}]*"
        ),
        _EVERY_MACHINE,
    ),
    _Pattern(
        "a hex id",
        re.compile(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{16,}\b"),
        _EVERY_RUN,
    ),
)
_COUNTER_ADVICE = (
    "a number that changes between runs breaks the cache on every run; derive it"
    " deterministically or move it into the messages"
)


def volatile_hints(a_text: str, b_text: str = "") -> tuple[str, ...]:
    """Hints about volatile content: timestamps, dates, times, UUIDs, absolute paths, hex ids.

    With one text, every such thing in it is reported. With two, only what differs between them
    is (a timestamp present in only one side, say), plus counters: a number at the same place in
    both texts with another value. Each hint quotes what it saw.
    """
    return _hints(a_text, b_text, differential=bool(b_text))


def _hints(a_text: str, b_text: str, *, differential: bool) -> tuple[str, ...]:
    hints: list[str] = []
    seen: set[str] = set()

    def add(hint: str) -> None:
        if hint not in seen and len(hints) < _MAX_HINTS:
            seen.add(hint)
            hints.append(hint)

    texts = [(a_text, b_text), (b_text, a_text)] if differential else [(a_text, ""), (b_text, "")]
    claimed: list[list[tuple[int, int]]] = [[], []]
    for pattern in _PATTERNS:
        for side, (text, other) in enumerate(texts):
            for match in pattern.regex.finditer(text):
                span = match.span()
                if _overlaps(span, claimed[side]):
                    continue
                claimed[side].append(span)
                found = match.group()
                if differential and found in other:
                    continue
                add(f'looks like {pattern.noun}: "{_clip(found, 80)}" — {pattern.advice}')
    if differential:
        for number_a, number_b in _counters(a_text, b_text, claimed[0], claimed[1]):
            add(
                f'looks like a counter: "{number_a}" became "{number_b}" at the same place —'
                f" {_COUNTER_ADVICE}"
            )
    return tuple(hints)


def _overlaps(span: tuple[int, int], spans: Iterable[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)


_NUMBER = re.compile(r"(\d+)")


def _counters(
    a_text: str,
    b_text: str,
    claimed_a: Sequence[tuple[int, int]],
    claimed_b: Sequence[tuple[int, int]],
) -> list[tuple[str, str]]:
    """Numbers that differ at the same place: token-level diff of number and non-number runs."""
    if len(a_text) + len(b_text) > 400_000:
        return []
    tokens_a, tokens_b = _NUMBER.split(a_text), _NUMBER.split(b_text)
    starts_a, starts_b = _starts(tokens_a), _starts(tokens_b)
    matcher = difflib.SequenceMatcher(None, tokens_a, tokens_b, autojunk=False)
    found: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 != j2 - j1:
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            x, y = tokens_a[i], tokens_b[j]
            if not (x.isdigit() and y.isdigit()) or x == y:
                continue
            if _in_word(tokens_a, i) or _in_word(tokens_b, j):
                continue  # "m1" -> "m2" is a name, not a count
            span_a = (starts_a[i], starts_a[i] + len(x))
            span_b = (starts_b[j], starts_b[j] + len(y))
            if _overlaps(span_a, claimed_a) or _overlaps(span_b, claimed_b):
                continue
            found.append((x, y))
    return found


def _in_word(tokens: Sequence[str], index: int) -> bool:
    """Whether the number at `index` is glued to letters (split tokens alternate text, number)."""
    before = tokens[index - 1] if index > 0 else ""
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    return bool(before[-1:].isalpha() or before[-1:] == "_" or after[:1].isalpha())


def _starts(tokens: Sequence[str]) -> list[int]:
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token)
    return starts


# -- encoding and walking -----------------------------------------------------------------------


class _Absent:
    """A member one side does not have."""

    def __repr__(self) -> str:
        return "(absent)"


_ABSENT: Final = _Absent()


def _enc(value: Any) -> bytes:
    return msgspec.json.encode(value)


def _enc_member(doc: Mapping[str, Any], key: str) -> bytes:
    return _enc(doc[key]) if key in doc else b""


def _fallback(value: Any) -> Any:
    """Values JSON cannot hold are compared by their repr rather than crashing the report."""
    return repr(value)


def _plain(value: Any) -> Any:
    """The value as the wire holds it: JSON objects, arrays, strings, numbers, booleans, null."""
    try:
        return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_fallback))
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
        return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_fallback))
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError):
        return repr(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        # a lone surrogate (from json.loads or os.fsdecode) cannot be encoded as UTF-8
        return key.encode("utf-8", "backslashreplace").decode()
    plain = _coerce(key)
    return plain if isinstance(plain, str) else _enc(plain).decode()


def _doc(view: CacheView) -> dict[str, Any]:
    settings = _plain(view.settings)
    doc: dict[str, Any] = {SETTINGS: settings if isinstance(settings, dict) else {}}
    for key, value in view.blocks.items():
        name = _key(key)
        if name != SETTINGS:
            doc[name] = _plain(value)
    return doc


def _prompt_bytes(doc: Mapping[str, Any]) -> bytes:
    """The prompt blocks' members as they appear in canonical bytes (settings left out)."""
    return b",".join(
        _enc(key) + b":" + _enc(value) for key, value in doc.items() if key != SETTINGS
    )


def _block_order(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> list[str]:
    order = [key for key in doc_a if key != SETTINGS]
    return order + [key for key in doc_b if key != SETTINGS and key not in doc_a]


def _changed_keys(a: Any, b: Any) -> tuple[str, ...]:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return ()
    keys = list(a) + [key for key in b if key not in a]
    return tuple(key for key in keys if _enc_member(a, key) != _enc_member(b, key))


def _common_prefix(a: bytes, b: bytes) -> int:
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    low, high = 0, limit  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


def _first_byte_difference(a: bytes, b: bytes) -> int:
    return _common_prefix(a, b)


def _walk(a: Any, b: Any) -> list[str] | None:
    """The path of the first difference in encoding order (see `first_difference`)."""
    if _enc(a) == _enc(b):
        return None
    path: list[str] = []
    while True:
        if isinstance(a, dict) and isinstance(b, dict):
            keys_a, keys_b = list(a), list(b)
            common = min(len(keys_a), len(keys_b))
            step: str | None = None
            for index in range(common):
                key_a, key_b = keys_a[index], keys_b[index]
                if key_a != key_b:
                    if key_a not in b and key_b in a:
                        return [*path, key_a]  # removed on side b
                    if key_b not in a and key_a in b:
                        return [*path, key_b]  # inserted on side b
                    return path  # renamed or reordered: the object's key sequence differs
                if _enc(a[keys_a[index]]) != _enc(b[keys_b[index]]):
                    step = keys_a[index]
                    break
            if step is None:
                longer = keys_a if len(keys_a) > len(keys_b) else keys_b
                return [*path, longer[common]]
            path.append(step)
            a, b = a[step], b[step]
        elif isinstance(a, list) and isinstance(b, list):
            common = min(len(a), len(b))
            position = next(
                (index for index in range(common) if _enc(a[index]) != _enc(b[index])), None
            )
            if position is None:
                return [*path, str(common)]
            path.append(str(position))
            a, b = a[position], b[position]
        else:
            return path


def _resolve(value: Any, path: Sequence[str]) -> Any:
    for token in path:
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return _ABSENT
    return value


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _pointer(path: Sequence[str]) -> str:
    return "".join("/" + _escape(token) for token in path)


def _show_pointer(pointer: str) -> str:
    return pointer if pointer else '"" (the whole value)'


def _tokens(size: int) -> int:
    return size // _BYTES_PER_TOKEN


def _tools_by_name(doc: Any) -> Any:
    """Tools keyed by name plus their order, so a reorder diffs as one order change."""
    if not isinstance(doc, dict):
        return doc
    tools = doc.get("tools")
    if not isinstance(tools, list):
        return doc
    names = [t.get("name") if isinstance(t, dict) else None for t in tools]
    if None in names or len(set(names)) != len(names):
        return doc  # unnamed or shared names: positions are the only identity
    keyed = {k: v for k, v in doc.items() if k != "tools"}
    keyed["tool_order"] = names
    keyed["tools"] = dict(zip(names, tools, strict=True))
    return keyed


def _deepdiff(a: Any, b: Any) -> dict[str, Any]:
    from deepdiff import DeepDiff  # imported on first drift: it is slow to import

    try:
        diff = DeepDiff(_tools_by_name(a), _tools_by_name(b), verbose_level=2)
        decoded = msgspec.json.decode(diff.to_json())
    except Exception as error:  # a diff that cannot be made must not hide the report
        return {"error": f"deepdiff failed: {error!r}"}
    return decoded if isinstance(decoded, dict) else {"result": decoded}


# -- tools --------------------------------------------------------------------------------------


class _ToolDiff(NamedTuple):
    names_a: tuple[str, ...]
    names_b: tuple[str, ...]
    kind: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    mismatch: int | None  # first index where the name lists differ
    changed: tuple[str, ...]  # names on both sides whose content differs


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        name = tool.get("name")
        if isinstance(name, str):
            return name
        function = tool.get("function")  # OpenAI chat-completions shape
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
    if isinstance(tool, str):
        return tool
    return f"<unnamed {_clip(_enc(tool).decode('utf-8', 'replace'), 40)}>"


def _tool_list(value: Any) -> list[Any] | None:
    if value is _ABSENT:
        return []
    return value if isinstance(value, list) else None


def _tools_diff(a: Any, b: Any) -> _ToolDiff:
    list_a, list_b = _tool_list(a), _tool_list(b)
    names_a = tuple(_tool_name(tool) for tool in list_a or ())
    names_b = tuple(_tool_name(tool) for tool in list_b or ())
    mismatch = next(
        (index for index, (x, y) in enumerate(zip(names_a, names_b, strict=False)) if x != y),
        None if len(names_a) == len(names_b) else min(len(names_a), len(names_b)),
    )
    if list_a is None or list_b is None:  # not a list of tools on one side
        return _ToolDiff(names_a, names_b, "content", (), (), mismatch, ())
    counts_a, counts_b = Counter(names_a), Counter(names_b)
    added = _multiset_minus(names_b, counts_a)
    removed = _multiset_minus(names_a, counts_b)
    contents_a, contents_b = _contents(list_a), _contents(list_b)
    changed = tuple(
        name
        for name in dict.fromkeys(names_b)
        if name in contents_a and contents_a[name] != contents_b[name]
    )
    if added or removed:
        kind = "added-and-removed" if added and removed else "added" if added else "removed"
    elif names_a == names_b:
        kind = "content"
    else:
        kind = "reorder-and-content" if changed else "reorder"
    return _ToolDiff(names_a, names_b, kind, added, removed, mismatch, changed)


def _multiset_minus(names: Sequence[str], other: Counter[str]) -> tuple[str, ...]:
    left = Counter(other)
    extra: list[str] = []
    for name in names:
        if left[name] > 0:
            left[name] -= 1
        else:
            extra.append(name)
    return tuple(extra)


def _contents(tools: Sequence[Any]) -> dict[str, list[bytes]]:
    contents: dict[str, list[bytes]] = {}
    for tool in tools:
        contents.setdefault(_tool_name(tool), []).append(_enc(tool))
    return {name: sorted(encoded) for name, encoded in contents.items()}


def _tool_at(path: Sequence[str], tools_a: Any, tools_b: Any) -> str | None:
    """The tool at a /tools/N/... pointer: tool N on side b, falling back to side a."""
    if len(path) < 2 or path[0] != "tools" or not path[1].isdigit():
        return None
    index = int(path[1])
    for tools in (tools_b, tools_a):
        if isinstance(tools, list) and index < len(tools):
            return _tool_name(tools[index])
    return None


def _provenance(owners: Mapping[str, str | None] | None, name: str | None) -> str | None:
    if owners is None or name is None:
        return None
    owner = owners.get(name)
    return f'plugin "{owner}"' if owner else None


def _block_kind(block: str) -> str:
    verdict = _VERDICTS.get(block)
    if verdict == "system_changed":
        return "text"
    if verdict == "messages_changed":
        return "messages"
    return "content"


# -- summary ------------------------------------------------------------------------------------


def _summary(
    *,
    verdict: str,
    block: str,
    kind: str,
    pointer: str,
    offset: int,
    tool: str | None,
    focus: str | None,
    provenance: str | None,
    tools: _ToolDiff | None,
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    settings_changed: Sequence[str],
    lost: int,
    labels: tuple[str, str],
) -> str:
    place = f"at {_show_pointer(pointer)}, byte {offset}"
    cost = f"{lost:,} cached bytes (~{_tokens(lost):,} tokens) lost"
    label_a, label_b = labels
    if block not in doc_a or block not in doc_b:
        where = label_a if block not in doc_a else label_b
        what = f'the "{block}" block is absent in {where}'
        if kind in ("added", "removed", "added-and-removed") and tools is not None:
            what += "; " + _tool_changes(tools)
        return f"{verdict}: {what}, {place}; {cost}"
    if kind == "settings":
        changes = [
            f"{key}: {_short_member(doc_a[SETTINGS], key)} -> {_short_member(doc_b[SETTINGS], key)}"
            for key in settings_changed[:3]
        ]
        if len(settings_changed) > 3:
            changes.append(f"{len(settings_changed) - 3} more")
        detail = "; ".join(changes) if changes else "same settings in another key order"
        return (
            f"{verdict}: settings changed ({detail}); the cache key moves, all"
            f" {lost:,} prompt bytes (~{_tokens(lost):,} tokens) lost"
        )
    if kind == "block-order":
        order_a = ", ".join(key for key in doc_a if key != SETTINGS)
        order_b = ", ".join(key for key in doc_b if key != SETTINGS)
        return (
            f"{verdict}: prompt blocks in another order ({label_a}: {order_a};"
            f" {label_b}: {order_b}) {place}; {cost}"
        )
    if tools is not None and block == "tools":
        return f"{verdict}: {_tools_sentence(kind, tool, focus, provenance, tools, pointer)}" + (
            f", byte {offset}; {cost}"
        )
    if kind == "text":
        position = _text_position(doc_a[block], doc_b[block])
        return f"{verdict}: system text differs{position} {place}; {cost}"
    if kind == "messages":
        return (
            f"{verdict}: messages differ{_message_position(pointer, doc_a, doc_b)} {place}; {cost}"
        )
    return f'{verdict}: block "{block}" differs {place}; {cost}'


def _tools_sentence(
    kind: str,
    tool: str | None,
    focus: str | None,
    provenance: str | None,
    tools: _ToolDiff,
    pointer: str,
) -> str:
    by = f" (registered by {provenance})" if provenance else ""
    if kind in ("reorder", "reorder-and-content") and tools.mismatch is not None:
        where = f"/tools/{tools.mismatch}"
        out_of_place = f'first out of place: "{focus}"{by} at {where}'
        if kind == "reorder":
            return f"tools reordered; {out_of_place}"
        changed = ", ".join(f'"{name}"' for name in tools.changed[:3])
        sentence = f"tools reordered and content changed ({changed}); {out_of_place}"
        if pointer and not pointer.startswith(where):
            sentence += f"; first difference at {pointer}"
        return sentence
    if kind == "content":
        named = f'tool "{tool}"{by} changed' if tool else "tools changed"
        return f"{named} (same names, same order) at {_show_pointer(pointer)}"
    return f"{_tool_changes(tools)}{by} at {_show_pointer(pointer)}"


def _tool_changes(tools: _ToolDiff) -> str:
    parts = []
    if tools.added:
        parts.append(f"{_plural(len(tools.added), 'tool')} added: {_names(tools.added)}")
    if tools.removed:
        parts.append(f"{_plural(len(tools.removed), 'tool')} removed: {_names(tools.removed)}")
    return "; ".join(parts) if parts else "tools changed"


def _text_position(a: Any, b: Any) -> str:
    if not (isinstance(a, str) and isinstance(b, str)):
        return ""
    index = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    line = a.count("\n", 0, index) + 1
    column = index - (a.rfind("\n", 0, index) + 1) + 1
    return f" from line {line}, column {column}"


def _message_position(pointer: str, doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> str:
    parts = pointer.split("/")
    if len(parts) < 3 or not parts[2].isdigit():
        return ""
    index = int(parts[2])
    for doc in (doc_b, doc_a):
        messages = doc.get("messages")
        if isinstance(messages, list) and index < len(messages):
            message = messages[index]
            role = message.get("role") if isinstance(message, dict) else None
            return f" from message {index}" + (f" ({role})" if isinstance(role, str) else "")
    return f" from message {index}"


# -- rendering ----------------------------------------------------------------------------------


def _context(data: bytes, offset: int) -> str:
    """About 80 bytes around `offset`, with MARKER where the difference starts."""
    mark = min(max(offset, 0), len(data))
    while 0 < mark < len(data) and _continuation(data[mark]):
        mark -= 1  # the marker goes before the character the differing byte belongs to
    start = max(0, mark - _CONTEXT_BEFORE)
    while 0 < start < len(data) and _continuation(data[start]):
        start -= 1
    end = min(len(data), start + _CONTEXT_SIZE)
    end = max(end, mark)
    while end < len(data) and _continuation(data[end]):
        end += 1
    before = data[start:mark].decode("utf-8", "replace")
    after = data[mark:end].decode("utf-8", "replace")
    return ("…" if start > 0 else "") + before + MARKER + after + ("…" if end < len(data) else "")


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _cost_phrase(report: DriftReport) -> str:
    lost = _words(report.invalidated)
    caches = "cache is" if len(report.invalidated) == 1 else "caches are"
    if report.block == SETTINGS:
        if not report.invalidated:
            return "settings changed -> the cache key moves (there are no prompt blocks)"
        return f"settings changed -> the cache key moves: the {lost} {caches} lost"
    return f"{report.block} changed -> the {lost} {caches} lost"


def _text_lines(report: DriftReport) -> list[str]:
    lines = [report.summary]
    rows: list[tuple[str, str]] = []
    if not report.identical:
        if report.verdict:
            rows.append(("verdict", f"{report.verdict}: {_cost_phrase(report)}"))
        if report.kind:
            rows.append(("kind", f"{report.kind} ({_KIND_TEXT.get(report.kind, report.kind)})"))
        if report.settings_changed:
            rows.append(("settings", ", ".join(report.settings_changed)))
        rows.append(("place", _place(report)))
        rows.append((report.label_a, report.context_a))
        rows.append((report.label_b, report.context_b))
        if report.tools_added:
            rows.append(("tools added", _names(report.tools_added)))
        if report.tools_removed:
            rows.append(("tools removed", _names(report.tools_removed)))
        if report.verdict:
            rows.append(("cost", _cost(report)))
        if report.provenance:
            rows.append(("provenance", report.provenance))
    rows.extend(_reproduce_rows(report))
    width = max([len(label) for label, _ in rows] + [10]) + 2
    lines.extend(f"{label + ':':<{width}}{value}" for label, value in rows)
    if report.tools_a or report.tools_b:
        lines.append(f"tool order ({report.label_a} | {report.label_b}):")
        lines.extend("  " + row for row in _tool_rows(report))
    if report.volatile_hints:
        lines.append("hints:")
        lines.extend(f"  - {hint}" for hint in report.volatile_hints)
    if report.deepdiff:
        lines.append("deepdiff:")
        lines.extend(f"  {line}" for line in _deepdiff_lines(report.deepdiff))
    return lines


def _place(report: DriftReport) -> str:
    place = f"{_show_pointer(report.pointer)}, byte {report.offset}"
    return place + (f', tool "{report.tool}"' if report.tool else "")


def _cost(report: DriftReport) -> str:
    return (
        f"kept {report.prefix_bytes_kept:,} prompt bytes (~{report.tokens_kept:,} tokens),"
        f" lost {report.prefix_bytes_lost:,} bytes (~{report.tokens_lost:,} tokens);"
        f" tokens ~ bytes / {_BYTES_PER_TOKEN}"
    )


def _reproduce_rows(report: DriftReport) -> list[tuple[str, str]]:
    reproduce = report.reproduce
    if reproduce is None:
        return []
    rows = []
    if reproduce.seed is not None:
        rows.append(("seed", str(reproduce.seed)))
    if reproduce.order_a:
        rows.append((f"order ({report.label_a})", ", ".join(reproduce.order_a)))
    if reproduce.order_b:
        rows.append((f"order ({report.label_b})", ", ".join(reproduce.order_b)))
    if reproduce.command:
        rows.append(("reproduce", reproduce.command))
    return rows


def _out_of_place(report: DriftReport) -> int | None:
    """The index to mark in the tool order: the first name mismatch, or the tool at the pointer."""
    names_a, names_b = report.tools_a, report.tools_b
    for index, (x, y) in enumerate(zip(names_a, names_b, strict=False)):
        if x != y:
            return index
    if len(names_a) != len(names_b):
        return min(len(names_a), len(names_b))
    parts = report.pointer.split("/")
    if len(parts) >= 3 and parts[1] == "tools" and parts[2].isdigit():
        return int(parts[2])
    return None


def _tool_rows(report: DriftReport) -> list[str]:
    names_a, names_b = report.tools_a, report.tools_b
    mark = _out_of_place(report)
    count = max(len(names_a), len(names_b))
    width = max([len(name) for name in names_a] + [len(report.label_a), 8])
    digits = len(str(max(count - 1, 0)))
    rows = []
    for index in range(min(count, _MAX_TOOL_ROWS)):
        x = names_a[index] if index < len(names_a) else "-"
        y = names_b[index] if index < len(names_b) else "-"
        flag = ">" if index == mark else ("*" if x != y else " ")
        note = ""
        if index == mark:
            note = "  <- first out of place" if x != y else "  <- changed here"
        rows.append(f"{flag} {index:>{digits}}  {x:<{width}} | {y}{note}")
    if count > _MAX_TOOL_ROWS:
        rows.append(f"  … {count - _MAX_TOOL_ROWS} more")
    return rows


def _deepdiff_lines(diff: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for change, entries in diff.items():
        if isinstance(entries, dict):
            for path, detail in entries.items():
                lines.append(f"{change} {path}: {_deepdiff_detail(detail)}")
        elif isinstance(entries, list):
            lines.extend(f"{change} {_clip(str(path), 120)}" for path in entries)
        else:
            lines.append(f"{change}: {_short(entries)}")
    if len(lines) > _MAX_DEEPDIFF_LINES:
        more = len(lines) - _MAX_DEEPDIFF_LINES
        lines = [*lines[:_MAX_DEEPDIFF_LINES], f"… {more} more"]
    return lines


def _deepdiff_detail(detail: Any) -> str:
    if isinstance(detail, dict) and ("old_value" in detail or "new_value" in detail):
        old, new = detail.get("old_value", _ABSENT), detail.get("new_value", _ABSENT)
        return f"{_short_encoded(old)} -> {_short_encoded(new)}"
    return _short_encoded(detail)


def _markdown_lines(report: DriftReport) -> list[str]:
    if report.identical:
        lines = [f"### No drift: {report.label_a} and {report.label_b} are identical", ""]
        lines.append(report.summary)
        lines.extend(_markdown_reproduce(report))
        return lines
    title = report.verdict or "values differ"
    kind = f" ({report.kind})" if report.kind else ""
    lines = [f"### Drift: {_md_code(title)}{kind}", "", f"> {_md_escape(report.summary)}", ""]
    lines += ["| | |", "|---|---|"]
    if report.verdict:
        lines.append(
            f"| verdict | {_md_code(report.verdict)}: {_md_escape(_cost_phrase(report))} |"
        )
    if report.kind:
        kind_text = _KIND_TEXT.get(report.kind, report.kind)
        lines.append(f"| kind | {_md_code(report.kind)}: {_md_escape(kind_text)} |")
    pointer = _md_code(report.pointer) if report.pointer else '`""` (the whole value)'
    place = f"{pointer}, byte {report.offset}"
    if report.tool:
        place += f", tool {_md_code(report.tool)}"
    lines.append(f"| place | {place} |")
    if report.settings_changed:
        lines.append(f"| settings | {_md_escape(', '.join(report.settings_changed))} |")
    if report.verdict:
        lines.append(f"| cost | {_md_escape(_cost(report))} |")
        lines.append(f"| invalidated | {_md_escape(', '.join(report.invalidated) or '-')} |")
    if report.tools_added:
        lines.append(f"| tools added | {_md_escape(_names(report.tools_added))} |")
    if report.tools_removed:
        lines.append(f"| tools removed | {_md_escape(_names(report.tools_removed))} |")
    if report.provenance:
        lines.append(f"| provenance | {_md_escape(report.provenance)} |")
    lines.append("")
    marker = f"{_md_code(MARKER)} marks where the difference starts"
    lines += [f"**{_md_escape(report.label_a)}** ({marker}):", ""]
    lines += _md_block(report.context_a, "text")
    lines += ["", f"**{_md_escape(report.label_b)}**:", ""]
    lines += _md_block(report.context_b, "text")
    if report.tools_a or report.tools_b:
        lines += ["", "**Tool order**", ""]
        lines += [
            f"| # | {_md_escape(report.label_a)} | {_md_escape(report.label_b)} |",
            "|---|---|---|",
        ]
        mark = _out_of_place(report)
        count = max(len(report.tools_a), len(report.tools_b))
        for index in range(min(count, _MAX_TOOL_ROWS)):
            x = report.tools_a[index] if index < len(report.tools_a) else "-"
            y = report.tools_b[index] if index < len(report.tools_b) else "-"
            number = str(index)
            if index == mark:
                note = "first out of place" if x != y else "changed here"
                number = f"**{index}** ({note})"
            lines.append(f"| {number} | {_md_code(x)} | {_md_code(y)} |")
        if count > _MAX_TOOL_ROWS:
            lines.append(f"| … | {count - _MAX_TOOL_ROWS} more | |")
    if report.volatile_hints:
        lines += ["", "**Hints**", ""]
        lines += [f"- {_md_escape(hint)}" for hint in report.volatile_hints]
    lines.extend(_markdown_reproduce(report))
    if report.deepdiff:
        lines += ["", "<details><summary>deepdiff</summary>", ""]
        lines += _md_block(msgspec.json.format(_enc(report.deepdiff)).decode(), "json")
        lines += ["", "</details>"]
    return lines


def _markdown_reproduce(report: DriftReport) -> list[str]:
    reproduce = report.reproduce
    if reproduce is None:
        return []
    lines = ["", "**Reproduce**", ""]
    if reproduce.seed is not None:
        lines.append(f"- seed: {_md_code(str(reproduce.seed))}")
    if reproduce.order_a:
        lines.append(
            f"- order ({_md_escape(report.label_a)}): {_md_code(', '.join(reproduce.order_a))}"
        )
    if reproduce.order_b:
        lines.append(
            f"- order ({_md_escape(report.label_b)}): {_md_code(', '.join(reproduce.order_b))}"
        )
    if reproduce.command:
        lines += ["", *_md_block(reproduce.command, "sh")]
    return lines


def _md_block(text: str, language: str) -> list[str]:
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return [f"{fence}{language}", text, fence]


def _md_code(text: str) -> str:
    ticks = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text.replace('|', '¦')}{pad}{ticks}"


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(f"{re.escape(char)}+", text)
    return max((len(run) for run in runs), default=0)


# -- small words --------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(value: Any) -> str:
    return _clip(str(value), 60)


def _short_encoded(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    return _clip(_enc(value).decode("utf-8", "replace"), 60)


def _short_member(mapping: Any, key: str) -> str:
    if not isinstance(mapping, dict) or key not in mapping:
        return "(absent)"
    return _short_encoded(mapping[key])


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f'"{name}"' for name in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def _words(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
