"""The prefix-chain gate: each request must extend the cached prefix of the one before it.

A provider caches the prefix it saw; the next request of the same conversation hits that cache
only if it starts with the same bytes, in that provider's cache order. `prefix_chain` walks the
requests of each endpoint (provider, host and path: Gemini and Bedrock carry the model in the
path) and judges every request against the one it continues; `PrefixBroken` raises the breaks as
a test failure, each with its drift report (verdict, place, tool, cost).

Which request a request continues (the rules of decision 0008):
- the latest earlier request to the same endpoint whose conversation opens with the same message
  (a conversation is the `messages`, `input` or `contents` block, after the system prompt), so
  two agents that take turns on one endpoint are two chains, not a break at every turn;
- a request whose conversation is one message no earlier request opened with starts a new
  conversation: it has no history that could have broken;
- any other request continues the latest earlier request to its endpoint (an edited first
  message in a longer history is a break, not a new conversation).

"Extends" means: the same settings, every prefix block before the last one equal, and the last
one a prefix of the next request's (the previous messages, then more). Only a list is cut to the
earlier request's length, and only where the prefix may grow: the conversation block, or the
block the prefix was cut in at a breakpoint. A system prompt or a tool list the prefix holds
whole (no breakpoint in it) must be equal whole, and a string is never cut: a system prompt that
gains or loses text is a break where it changed. Going back to an earlier point of the same
conversation (the same opening, a shorter history) also hits the cache. Cache markers
(`RequestSplit.markers`: Anthropic's `cache_control`, Bedrock's `cachePoint` blocks) are
ignored, since moving the breakpoint forward is how a conversation keeps its cache, except a
marker's time to live where both requests mark the same place: another TTL is another entry.
Ignoring a marker never reorders what is compared: each request keeps its keys in the order it
sent them (the provider caches those bytes). A Responses request that continues a stored
response has its conversation on the server; its settings, tools and instructions are still
judged.

Bookkeeping fields (the rules pack's: streaming, output limits, a diagnostics request) never
break the prefix. A break whose cache effect the rules do not know for certain (a retention
setting, a setting no rule knows) or that the provider does on purpose (OpenAI's
`context_compacted`) is a warning, kept apart in `PrefixChain.warnings`: it is reported, never a
failure.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable
from urllib.parse import urlsplit

from harness._errors import Drift
from harness._views import CacheView, RequestSplit, encode_json, prompt_size
from harness.drift._compare import compare
from harness.drift._report import DriftReport
from harness.drift._wording import BYTES_PER_TOKEN, UNCERTAIN_KINDS
from harness.providers import split_request

__all__ = [
    "CONVERSATION_BLOCKS",
    "ChainItem",
    "PrefixBreak",
    "PrefixBroken",
    "PrefixChain",
    "check_prefix_chain",
    "conversation_links",
    "prefix_chain",
]

# The block that holds the conversation, in each provider's vocabulary.
CONVERSATION_BLOCKS: Final = ("messages", "input", "contents")
DEFAULT_TTL: Final = "5m"
# Breaks the gate reports as warnings: an effect the rules do not know for certain, or a move the
# provider makes on purpose.
WARNING_KINDS: Final = UNCERTAIN_KINDS | {"compaction"}


@runtime_checkable
class ChainItem(Protocol):
    """A request with its number in a conversation (a captured request is one).

    A `url` attribute, when the item has one, puts it on its endpoint.
    """

    number: int
    split: RequestSplit | None

    def continues_stored(self) -> bool:
        """Whether it continues a conversation stored on the server (its prefix lives there)."""
        ...


class PrefixBroken(Drift):
    """Consecutive requests of one conversation do not extend each other's cacheable prefix."""

    def __init__(self, breaks: Sequence[PrefixBreak]) -> None:
        self.breaks = tuple(breaks)
        text = "\n".join(item.to_text() for item in self.breaks)
        super().__init__(
            f"{len(self.breaks)} cache prefix {'break' if len(self.breaks) == 1 else 'breaks'}"
            " (mark the test @pytest.mark.moves_header(reason=...) if the move is deliberate)\n\n"
            + text
        )


@dataclass(frozen=True)
class PrefixBreak:
    """Request `index` does not extend the cacheable prefix of request `previous` (1-based)."""

    index: int
    previous: int
    block: str
    report: DriftReport
    prefix_bytes: int
    bytes_lost: int
    endpoint: str = ""

    @property
    def tokens_lost(self) -> int:
        return self.bytes_lost // BYTES_PER_TOKEN

    @property
    def verdict(self) -> str:
        return self.report.verdict or f"{self.block}_changed"

    @property
    def severity(self) -> str:
        """`error` for a certain break; `warning` for an effect the rules do not know for certain
        (a retention, a setting no rule knows) or a compaction the provider made."""
        return "warning" if self.report.kind in WARNING_KINDS else "error"

    def to_text(self) -> str:
        where = f" ({self.endpoint})" if self.endpoint else ""
        if self.report.kind in UNCERTAIN_KINDS:
            head = (
                f"{self.verdict}: request {self.index}{where} changed a setting of request"
                f" {self.previous} whose cache effect is not documented; {self.prefix_bytes:,}"
                f" prefix bytes (~{self.prefix_bytes // BYTES_PER_TOKEN:,} tokens) at stake"
            )
        else:
            head = (
                f"{self.verdict}: request {self.index}{where} does not extend request"
                f" {self.previous}'s cacheable prefix: the {self.block} block broke first;"
                f" {self.bytes_lost:,} of {self.prefix_bytes:,} prefix bytes lost"
                f" (~{self.tokens_lost:,} tokens, bytes / {BYTES_PER_TOKEN})"
            )
        return f"{head}\n{self.report.to_text()}"


@dataclass
class PrefixChain:
    """What the gate saw: the breaks (certain), the warnings (breaks whose effect is not certain,
    or a compaction), and per provider the requests it saw and judged."""

    breaks: list[PrefixBreak] = field(default_factory=list)
    warnings: list[PrefixBreak] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)  # provider requests, by provider
    judged: Counter[str] = field(default_factory=Counter)  # of those, judged against another
    unrecognised: int = 0  # requests no provider claimed (not judged)

    def coverage(self) -> str:
        """One line: requests checked per provider (rig's and pydantic-ai's coverage line)."""
        parts = [
            f"{provider} {self.seen[provider]} (judged {self.judged[provider]})"
            for provider in sorted(self.seen)
        ]
        text = ", ".join(parts) if parts else "no provider requests"
        if self.unrecognised:
            text += f"; {self.unrecognised} other request(s) not checked"
        return f"prefix chain: {text}"

    def add(self, other: PrefixChain) -> None:
        """Count `other` in (another conversation of the same test)."""
        self.breaks.extend(other.breaks)
        self.warnings.extend(other.warnings)
        self.seen.update(other.seen)
        self.judged.update(other.judged)
        self.unrecognised += other.unrecognised


@dataclass
class _Entry:
    number: int
    split: RequestSplit
    stored: bool
    endpoint: str
    opening: bytes | None  # the conversation's first message, encoded; None when it has none
    single: bool  # the conversation is one message
    position: int = 0  # 0-based place in the items


def prefix_chain(items: Sequence[Any]) -> PrefixChain:
    """Judge every request against the one it continues, per endpoint (see the module doc).

    `items` are captured requests, `RequestSplit`s, `CacheView`s (taken as exact-prefix, the whole
    view being the prefix) or request bodies; requests no provider recognises are counted, not
    judged.
    """
    chain = PrefixChain()
    for entry, previous in _walk(items):
        if entry is None:
            chain.unrecognised += 1
            continue
        chain.seen[entry.split.provider] += 1
        if previous is not None:
            chain.judged[entry.split.provider] += 1
            found = _judge(previous, entry)
            if found is not None:
                (chain.breaks if found.severity == "error" else chain.warnings).append(found)
    return chain


def conversation_links(items: Sequence[Any]) -> list[int | None]:
    """For each item (0-based), the item it continues by the gate's rules, or None (it starts a
    conversation, or no provider recognises it): what the rules read along a conversation."""
    links: list[int | None] = []
    for entry, previous in _walk(items):
        links.append(None if entry is None or previous is None else previous.position)
    return links


def _walk(items: Sequence[Any]) -> Iterator[tuple[_Entry | None, _Entry | None]]:
    """Each item's entry (None: no provider recognises it) and the entry it continues."""
    latest: dict[str, _Entry] = {}
    threads: dict[tuple[str, bytes | None], _Entry] = {}
    for position, item in enumerate(items, start=1):
        entry = _entry(item, position)
        if entry is None:
            yield None, None
            continue
        key = (entry.endpoint, entry.opening)
        previous = threads.get(key) if entry.opening is not None else None
        if entry.stored or (previous is None and not entry.single):
            previous = latest.get(entry.endpoint)
        yield entry, previous
        latest[entry.endpoint] = threads[key] = entry


def check_prefix_chain(items: Sequence[Any]) -> list[PrefixBreak]:
    """The breaks of `prefix_chain(items)`, in order."""
    return prefix_chain(items).breaks


def _entry(item: Any, position: int) -> _Entry | None:
    split, stored = _as_split(item)
    if split is None:
        return None
    number = item.number if isinstance(item, ChainItem) else position
    url = getattr(item, "url", None)
    endpoint = split.provider
    if isinstance(url, str):
        parts = urlsplit(url)
        method = getattr(item, "method", "POST")
        endpoint = f"{method} {parts.hostname or ''}{parts.path}"
    conversation = _conversation(split.view)
    opening: bytes | None = None
    single = False
    if isinstance(conversation, list) and conversation:
        opening = encode_json(_strip(conversation[0], split.markers))
        single = len(conversation) == 1
    elif isinstance(conversation, str):
        opening, single = encode_json(conversation), True
    return _Entry(number, split, stored, endpoint, opening, single, position - 1)


def _conversation(view: CacheView) -> Any:
    return next((view.blocks[name] for name in CONVERSATION_BLOCKS if name in view.blocks), None)


def _judge(a: _Entry, b: _Entry) -> PrefixBreak | None:
    markers = a.split.markers or b.split.markers
    prefix, view = a.split.prefix, b.split.view
    if b.stored:  # the conversation lives on the server: judge what is sent again
        prefix, view = _without_conversation(prefix), _without_conversation(view)
    prefix, view = _strip_pair(prefix, view, markers)
    candidate = _cut_like(
        prefix, view, cut_content=bool(a.split.markers), grows=_grows(a.split, prefix)
    )
    report = compare(
        prefix,
        candidate,
        label_a=f"request {a.number} (cacheable prefix)",
        label_b=f"request {b.number}",
    )
    if report.identical or _goes_back(a, b, markers):
        return None
    size = prompt_size(prefix)
    if report.kind == "settings" and not report.invalidated and size:
        return None  # e.g. tool_choice: it invalidates the messages, and the prefix stops before
    kept = min(report.prefix_bytes_kept, size)
    return PrefixBreak(
        index=b.number,
        previous=a.number,
        block=report.block or "settings",
        report=report,
        prefix_bytes=size,
        bytes_lost=size - kept,
        endpoint=b.endpoint if b.endpoint != b.split.provider else "",
    )


def _goes_back(a: _Entry, b: _Entry, markers: tuple[str, ...]) -> bool:
    """Whether `b` is an earlier point of `a`'s conversation: `a`'s request cut to `b`'s shape."""
    if a.opening is None or a.opening != b.opening:
        return False
    view, earlier = _strip_pair(b.split.view, a.split.view, markers)
    grows = _grows(b.split, view)
    return compare(view, _cut_like(view, earlier, cut_content=False, grows=grows)).identical


def _grows(split: RequestSplit, prefix: CacheView) -> bool:
    """Whether the last block of `prefix` may be a shorter form of the next request's: the
    conversation (it grows by turns), or the block a breakpoint cut the prefix in (what follows
    the breakpoint is not cached). A block held whole (Anthropic's system with no breakpoint in
    it, under automatic caching) is cached whole: any change to it is a break."""
    last = next(reversed(prefix.blocks), None)
    return last in CONVERSATION_BLOCKS or (split.rule == "breakpoint" and last is not None)


def _without_conversation(view: CacheView) -> CacheView:
    blocks = {k: v for k, v in view.blocks.items() if k not in CONVERSATION_BLOCKS}
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def _as_split(item: Any) -> tuple[RequestSplit | None, bool]:
    if isinstance(item, ChainItem):
        return item.split, item.continues_stored()
    if isinstance(item, RequestSplit):
        return item, False
    if isinstance(item, CacheView):
        return RequestSplit(item.provider, item, item, "exact-prefix"), False
    if isinstance(item, Mapping):
        stored = "previous_response_id" in item or "conversation" in item
        return split_request(item), stored
    raise TypeError(f"cannot check the prefix of a {type(item).__name__}")


def _cut_like(prefix: CacheView, view: CacheView, *, cut_content: bool, grows: bool) -> CacheView:
    """`view` cut to the shape of `prefix`: its blocks, and when the last one `grows` (see
    `_grows`) and is a list, that list no longer than prefix's. A string is never cut: a system
    prompt that gained text is not the earlier one followed by more turns (defect 3, issue 24)."""
    blocks: dict[str, Any] = {}
    names = list(prefix.blocks)
    for position, name in enumerate(names):
        if name not in view.blocks:
            continue
        value, shape = view.blocks[name], prefix.blocks[name]
        last = grows and position == len(names) - 1
        if last and isinstance(value, list) and isinstance(shape, list):
            value = value[: len(shape)]
            if cut_content and value and shape:
                value = [*value[:-1], _cut_message(value[-1], shape[-1])]
        blocks[name] = value
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def _cut_message(message: Any, shape: Any) -> Any:
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    content, cut = message.get("content"), shape.get("content")
    if isinstance(content, list) and isinstance(cut, list) and len(content) > len(cut):
        return {**message, "content": content[: len(cut)]}
    return message


def _strip_pair(
    a: CacheView, b: CacheView, markers: tuple[str, ...]
) -> tuple[CacheView, CacheView]:
    """Both views without cache markers, except a TTL that differs where both mark a place."""
    if not markers:
        return a, b
    blocks_a: dict[str, Any] = {}
    blocks_b: dict[str, Any] = {}
    for name in [*a.blocks, *(n for n in b.blocks if n not in a.blocks)]:
        value_a, value_b = _pair(a.blocks.get(name, _NONE), b.blocks.get(name, _NONE), markers)
        if name in a.blocks:
            blocks_a[name] = value_a
        if name in b.blocks:
            blocks_b[name] = value_b
    return (
        CacheView(settings=a.settings, blocks=blocks_a, provider=a.provider),
        CacheView(settings=b.settings, blocks=blocks_b, provider=b.provider),
    )


_NONE: Final = object()


def _pair(a: Any, b: Any, markers: tuple[str, ...]) -> tuple[Any, Any]:
    if isinstance(a, dict) and isinstance(b, dict):
        # Each side keeps its own key order: the provider caches the bytes as sent, so two
        # objects whose keys come in another order are another prefix (defect 2, issue 24:
        # rebuilding both in `a`'s order hid a swapped `properties` from the gate).
        paired: dict[str, tuple[Any, Any]] = {}
        for key in [*a, *(k for k in b if k not in a)]:
            if key in markers:
                ttl_a, ttl_b = _ttl(a.get(key)), _ttl(b.get(key))
                if key in a and key in b and ttl_a != ttl_b:
                    paired[key] = ({"ttl": ttl_a}, {"ttl": ttl_b})
                continue
            paired[key] = _pair(a.get(key, _NONE), b.get(key, _NONE), markers)
        out_a = {key: paired[key][0] for key in a if key in paired}
        out_b = {key: paired[key][1] for key in b if key in paired}
        return out_a, out_b
    if isinstance(a, list) and isinstance(b, list):
        items_a = [item for item in a if not _only_marker(item, markers)]
        items_b = [item for item in b if not _only_marker(item, markers)]
        pairs = [
            _pair(x, y, markers)
            for x, y in itertools.zip_longest(items_a, items_b, fillvalue=_NONE)
        ]
        return (
            [x for x, _ in pairs[: len(items_a)]],
            [y for _, y in pairs[: len(items_b)]],
        )
    return _strip(a, markers), _strip(b, markers)


def _strip(value: Any, markers: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, markers) for k, v in value.items() if k not in markers}
    if isinstance(value, list):
        return [_strip(item, markers) for item in value if not _only_marker(item, markers)]
    return value


def _only_marker(item: Any, markers: tuple[str, ...]) -> bool:
    """A list element that is nothing but a marker (Bedrock's `{"cachePoint": {...}}`)."""
    return isinstance(item, dict) and bool(item) and all(key in markers for key in item)


def _ttl(marker: Any) -> str:
    ttl = marker.get("ttl") if isinstance(marker, dict) else None
    return ttl if isinstance(ttl, str) else DEFAULT_TTL
