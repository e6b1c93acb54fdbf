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
  message in a longer history is a break, not a new conversation);
- a conversation inlined into one growing message (DSPy's ReAct: the system prompt and one user
  message holding the trajectory) continues the latest of the recent one-message requests to its
  endpoint whose text it grew from (more at the end, or inserted before a kept tail), or whose
  text it holds all of but the first line (a rewritten start, which then breaks), or, failing
  that, the latest whose head (settings, tools, system) holds the same pieces in another order
  (a tool moved between two steps of one program: DSPy names its tools in the message too); any
  other one-message request starts a new conversation.

"Extends" means: the same settings, every prefix block before the last one equal, and the last
one a prefix of the next request's (the previous messages, then more; the last message's text may
grow at its end, since the cache holds every byte before it). Only a list is cut to the
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

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable
from urllib.parse import urlsplit

import msgspec

from harness._shared._errors import Drift
from harness._shared._views import OPAQUE, CacheView, RequestSplit, encode_json, prompt_size
from harness.capture._extends import (
    cut_like,
    head_of,
    message_grew,
    opaque_cut,
    strip,
    strip_pair,
    words_of,
)
from harness.drift._compare import compare
from harness.drift._report import DriftReport
from harness.drift._wording import BYTES_PER_TOKEN, UNCERTAIN_KINDS
from harness.providers import split_request
from harness.providers._opaque import BODY
from harness.providers._pack import Caching, rules_pack

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
    first: Any = None  # the conversation's first message, without markers
    heads: tuple[bytes, list[bytes]] | None = None  # `_head` and its words, once asked


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
    singles: dict[str, list[_Entry]] = {}  # one-message requests, per endpoint, latest last
    for position, item in enumerate(items, start=1):
        entry = _entry(item, position)
        if entry is None:
            yield None, None
            continue
        key = (entry.endpoint, entry.opening)
        previous = threads.get(key) if entry.opening is not None else None
        if entry.stored or (
            previous is None and not entry.single and not _opaque_conversation(entry)
        ):
            previous = latest.get(entry.endpoint)
        elif previous is None and entry.single:
            earlier = singles.setdefault(entry.endpoint, [])
            previous = next((e for e in reversed(earlier) if _grows(e, entry)), None)
            if previous is None:
                same = next((e for e in reversed(earlier) if _same_words(e, entry)), None)
                if same is not None and _heads(same)[0] != _heads(entry)[0]:
                    previous = same  # the latest with the same head, in another order
        yield entry, previous
        latest[entry.endpoint] = threads[key] = entry
        if entry.single:
            singles.setdefault(entry.endpoint, []).append(entry)
            del singles[entry.endpoint][:-_SINGLES]


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
    first: Any = None
    if isinstance(conversation, list) and conversation:
        first = strip(conversation[0], split.markers)
        opening = encode_json(first)
        single = len(conversation) == 1
    elif isinstance(conversation, str):
        first = conversation
        opening, single = encode_json(conversation), True
    return _Entry(number, split, stored, endpoint, opening, single, position - 1, first)


# How many earlier one-message requests of an endpoint a growing message may continue (DSPy
# sends another module's request between two steps of a ReAct loop).
_SINGLES: Final = 16


def _same_words(a: _Entry, b: _Entry) -> bool:
    """Whether `a` and `b`, one message each, have heads of the same words (in the same order or
    not). The latest such request before `b` is the one `b` is judged against when its head is
    in another order: the tools or the system prompt's lines moved between two steps of one
    program (DSPy names its tools in the message too, so the message is new as well). A new
    question with the same head, in the same order, is a new conversation."""
    if not (a.single and b.single) or a.split.provider != b.split.provider:
        return False
    (head_a, words_a), (head_b, words_b) = _heads(a), _heads(b)
    return len(head_a) == len(head_b) and words_a == words_b


def _heads(entry: _Entry) -> tuple[bytes, list[bytes]]:
    if entry.heads is None:
        head = head_of(entry.split.view, CONVERSATION_BLOCKS)
        entry.heads = (head, words_of(head))
    return entry.heads


def uncached(provider: str) -> bool:
    """Whether the rules say `provider` caches nothing (caching mode `none`: Cohere)."""
    row = rules_pack().first(Caching, provider)
    return row is not None and row.mode == "none"


def _opaque_conversation(entry: _Entry) -> bool:
    """An opaque body whose `input` is a list of plain values (an embeddings or moderation batch,
    not messages) continues only a request that opened it the same way: a batch whose first item
    is new is another batch, not an edited conversation. Messages (objects) thread as usual, so
    an edited system message in an unknown API's conversation still breaks."""
    return (
        entry.split.provider == OPAQUE
        and entry.opening is not None
        and not isinstance(entry.first, dict)
    )


def _grows(a: _Entry | None, b: _Entry) -> bool:
    """Whether `b`, one message, continues `a`, one message, by inlining the conversation into
    that message (DSPy's ReAct): its text grew from `a`'s (`text_grew`: more at the end, or
    inserted before a kept tail), or holds all of `a`'s text but its first line (a rewritten
    start: the gate judges it, and it breaks)."""
    return a is not None and a.single and b.single and message_grew(a.first, b.first)


def _conversation(view: CacheView) -> Any:
    blocks = view.blocks
    if view.provider == OPAQUE and isinstance(blocks.get(BODY), dict):
        blocks = blocks[BODY]  # an opaque JSON body: its own conversation member, if any
    return next((blocks[name] for name in CONVERSATION_BLOCKS if name in blocks), None)


def _judge(a: _Entry, b: _Entry) -> PrefixBreak | None:
    markers = a.split.markers or b.split.markers
    prefix, view = a.split.prefix, b.split.view
    if b.stored:  # the conversation lives on the server: judge what is sent again
        prefix, view = _without_conversation(prefix), _without_conversation(view)
    prefix, view = strip_pair(prefix, view, markers)
    if OPAQUE in (prefix.provider, view.provider):
        candidate = opaque_cut(prefix, view)
    else:
        candidate = cut_like(
            prefix, view, cut_content=bool(a.split.markers), grows=_may_grow(a.split, prefix)
        )
    report = compare(
        prefix,
        candidate,
        label_a=f"request {a.number} (cacheable prefix)",
        label_b=f"request {b.number}",
    )
    if report.identical or _goes_back(a, b, markers):
        return None
    if uncached(b.split.provider):
        note = (
            f"{b.split.provider} documents no prompt caching: no cache is lost, but the prefix"
            " the next turn repeats is not stable"
        )
        report = msgspec.structs.replace(report, notes=(*report.notes, note))
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
    view, earlier = strip_pair(b.split.view, a.split.view, markers)
    grows = _may_grow(b.split, view)
    return compare(view, cut_like(view, earlier, cut_content=False, grows=grows)).identical


def _may_grow(split: RequestSplit, prefix: CacheView) -> bool:
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
