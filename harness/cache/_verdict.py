"""The verdict on one link: does a request keep the cached prefix of the request it continues?

`judge(a, b)` is the one answer the gate, `harness lint`'s `prefix-broken`, `harness diff` and
`harness scan` give. "Keeps" means, in the provider's own terms:
- the same settings (a setting that keys only a level, Anthropic's `tool_choice`, loses only that
  level and what follows; bookkeeping never counts);
- every cached block equal, in cache order, keys as sent; the last cached block may be followed
  by more (the conversation grew) and a list cut at a breakpoint may go on past it;
- where the provider caches an exact prefix of the prompt (OpenAI, Gemini, DeepSeek, an opaque
  body), the last message's text may also grow at its end (the cache holds every byte before
  it: DSPy's growing message); where it keys its cache by content block (Anthropic, Bedrock), a
  block that changed before the newest breakpoint, however it changed, is a break, never an
  extension: that block's entry is lost;
- cache markers are markers, not prompt: one that moves forward is how a conversation keeps its
  cache; one whose time to live changed where both requests mark the same place is its own word;
- a value in the API's documented shorthand is its long form (Anthropic's `"content": "hi"` is
  `[{"type": "text", "text": "hi"}]`), and a deferred tool (`defer_loading`) is not in the
  prefix at all (the provider's split keeps it apart);
- a request whose earlier turns the server holds (`RequestSplit.held`) is judged on what it sends
  again (OpenAI: settings, tools and instructions; Anthropic's thread: settings, and any block it
  sends again);
- going back to an earlier point of the same conversation (the same opening, a shorter history)
  is no break.

A break says what it costs in the cache model's terms (`Loss`): the tokens of the earlier
request's longest cache entry (an entry at or above the model's minimum: only those exist) that
the later request can no longer read. Where nothing was cached (no marker, below the minimum),
nothing is lost, and the report says so instead of claiming a loss; where the rules cannot tell
(a model they know no minimum for, a provider they know nothing of), the loss is unknown and
said so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

import msgspec

from harness._shared._views import OPAQUE, CacheView, RequestSplit, encode_json, prompt_size
from harness.cache._analysis import Analysis, analyse, scope_of
from harness.cache._extends import cut_like, opaque_cut
from harness.cache._links import CONVERSATION_BLOCKS, Link, link_of
from harness.cache._markers import strip_pair
from harness.drift._compare import compare
from harness.drift._report import DriftReport, Loss
from harness.providers._pack import Caching, rules_pack
from harness.providers._registry import provider_named, vocabulary_of

__all__ = ["Judged", "block_keyed", "judge", "judge_pair", "uncached"]

# Caching modes whose entries sit at the breakpoints (a content block's boundary); the others
# cache an exact prefix of the prompt, every boundary of a written prefix readable.
_BLOCK_KEYED: Final = frozenset({"breakpoints"})


def uncached(provider: str) -> bool:
    """Whether the rules say `provider` caches nothing (caching mode `none`: Cohere)."""
    row = rules_pack().first(Caching, provider)
    return row is not None and row.mode == "none"


def block_keyed(provider: str) -> bool:
    """Whether `provider` keys its cache entries by content block at its breakpoints."""
    row = rules_pack().first(Caching, provider)
    return row is not None and row.mode in _BLOCK_KEYED


@dataclass(frozen=True)
class Judged:
    """A break: the report (verdict, place, what it costs), the bytes of the earlier request's
    cacheable prefix and those the later one loses of it, and the cache model's loss."""

    report: DriftReport
    prefix_bytes: int
    bytes_lost: int
    loss: Loss


def judge_pair(a: object, b: object, *, labels: tuple[str, str]) -> Judged | None:
    """`b` against the cached prefix of `a` (two requests, as `harness diff` compares them):
    the break, or None when `b` keeps it; `labels` name the two in the report."""
    first, second = link_of(a, 1), link_of(b, 2)
    if first is None or second is None:
        return None
    return judge(first, second, labels=labels)


def judge(a: Link, b: Link, *, labels: tuple[str, str] | None = None) -> Judged | None:
    """`b` against the cached prefix of `a`, the request it continues; None when it keeps it."""
    markers = a.split.markers or b.split.markers
    prefix, view = a.split.prefix, b.split.view
    if b.split.held:  # the server holds the earlier turns: judge what is sent again
        prefix, view = _held(prefix, view, b.split)
    found = provider_named(b.split.provider)
    shorthand = found.shorthand if found is not None else None
    prefix, view = strip_pair(prefix, view, markers, shorthand)
    if OPAQUE in (prefix.provider, view.provider):
        candidate = opaque_cut(prefix, view)
    else:
        candidate = cut_like(
            prefix,
            view,
            cut_content=bool(a.split.markers),
            grows=_may_grow(a.split, prefix),
            text=not block_keyed(b.split.provider),
        )
    if _same(prefix, candidate) or _goes_back(a, b, markers, shorthand):
        return None
    loss = _loss(a, b, labels[0] if labels else f"request {a.number}")
    model, surface = scope_of(b.request)
    report = compare(
        prefix,
        candidate,
        label_a=labels[0] if labels else f"request {a.number} (cacheable prefix)",
        label_b=labels[1] if labels else f"request {b.number}",
        loss=loss,
        vocabulary=vocabulary_of(b.split.provider, model, surface),
    )
    if report.identical:
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
    return Judged(report, size, size - kept, loss)


def _same(prefix: CacheView, candidate: CacheView) -> bool:
    """Whether the two encode alike (the common case: checked before any report is made). Two
    views of the same block names encode alike exactly when each block does (a JSON value ends
    where its encoding says), and one value encodes as itself: a block both views hold as the
    same object (a conversation's requests share their unchanged parts) is not encoded."""
    if list(prefix.blocks) != list(candidate.blocks):
        return False
    if encode_json(prefix.settings) != encode_json(candidate.settings):
        return False
    return all(
        value is other or encode_json(value) == encode_json(other)
        for value, other in zip(prefix.blocks.values(), candidate.blocks.values(), strict=True)
    )


def _goes_back(a: Link, b: Link, markers: tuple[str, ...], shorthand: object) -> bool:
    """Whether `b` is an earlier point of `a`'s conversation: `a`'s request cut to `b`'s shape."""
    if a.opening is None or a.opening != b.opening:
        return False
    view, earlier = strip_pair(
        b.split.view,
        a.split.view,
        markers,
        shorthand if callable(shorthand) else None,
    )
    grows = _may_grow(b.split, view)
    return _same(view, cut_like(view, earlier, cut_content=False, grows=grows))


def _may_grow(split: RequestSplit, prefix: CacheView) -> bool:
    """Whether the last block of `prefix` may be a shorter form of the next request's: the
    conversation (it grows by turns), or the block a breakpoint cut the prefix in (what follows
    the breakpoint is not cached). A block held whole (Anthropic's system with no breakpoint in
    it, under automatic caching) is cached whole: any change to it is a break."""
    last = next(reversed(prefix.blocks), None)
    return last in CONVERSATION_BLOCKS or (split.rule == "breakpoint" and last is not None)


def _held(prefix: CacheView, view: CacheView, split: RequestSplit) -> tuple[CacheView, CacheView]:
    """What a request the server holds the earlier turns of is judged on: without the
    conversation; and for a server-held prefix (Anthropic's thread), only the blocks it sends
    again."""
    keep = [name for name in prefix.blocks if name not in CONVERSATION_BLOCKS]
    if split.held == "prefix":
        keep = [name for name in keep if name in view.blocks]
    cut_prefix = CacheView(
        settings=prefix.settings,
        blocks={name: prefix.blocks[name] for name in keep},
        provider=prefix.provider,
    )
    cut_view = CacheView(
        settings=view.settings,
        blocks={k: v for k, v in view.blocks.items() if k not in CONVERSATION_BLOCKS},
        provider=view.provider,
    )
    return cut_prefix, cut_view


class _Cached(NamedTuple):
    analysis: Analysis
    boundaries: list[int]  # where the earlier request's cache can be read, shortest first


def _loss(a: Link, b: Link, name: str) -> Loss:
    """What `b` can no longer read of `a`'s cache entries (see the module doc); `name` is how
    the report calls `a`."""
    earlier = analyse(a.request)
    later = analyse(b.request)
    if earlier is None or later is None or earlier.caching is None:
        return Loss(None, None, f"the rules say nothing of what {a.split.provider} caches")
    if earlier.caching.mode == "none":
        return Loss(0, 0, f"{a.split.provider} documents no prompt caching")
    if earlier.held_elsewhere:
        return Loss(None, None, f"{name} reads {earlier.held_elsewhere}")
    if not earlier.model_known:
        named = earlier.model or "a request without a model"
        return Loss(None, None, f"whether it cached is unknown: no minimum for {named}")
    cached = _cached(earlier)
    if cached is None:
        return Loss(0, 0, f"nothing was cached by {name}{_nothing(earlier)}")
    longest = cached.boundaries[-1]
    kept = 0
    if not b.split.held:
        units = len(later.layout.units)
        for boundary in reversed(cached.boundaries):
            if boundary <= units and later.layout.digest(boundary) == earlier.layout.digest(
                boundary
            ):
                kept = boundary
                break
    tokens = earlier.tokens(longest).tokens - (earlier.tokens(kept).tokens if kept else 0)
    size = earlier.layout.size(longest) - earlier.layout.size(kept)
    return Loss(max(tokens, 0), max(size, 0), "")


def _cached(analysis: Analysis) -> _Cached | None:
    """Where the request's cache can be read after it: at its written breakpoints (a provider
    that keys by block), or at every boundary of its longest written prefix at or above the
    minimum (an exact-prefix cache); None when it caches nothing."""
    written = sorted(write.after for write in analysis.writes if write.written)
    if not written:
        return None
    if block_keyed(analysis.provider):
        return _Cached(analysis, written)
    minimum = analysis.minimum.tokens if analysis.minimum is not None else 0
    longest = written[-1]
    boundaries = [
        boundary
        for boundary in range(1, longest + 1)
        if analysis.tokens(boundary).tokens >= minimum or boundary in written
    ]
    return _Cached(analysis, boundaries)


def _nothing(analysis: Analysis) -> str:
    """Why a request caches nothing, in the words `harness show` uses: ` (41 tokens, minimum
    1,024 for claude-sonnet-4-5; tokens: bytes / 4)`, or "" when there is no more to say."""
    said = analysis.describe().removeprefix("nothing is cached").removeprefix(": ")
    return f" ({said.replace(' (tokens: ', '; tokens: ').rstrip(')')})" if said else ""
