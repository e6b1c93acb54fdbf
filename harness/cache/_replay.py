"""The replay: the provider's cache over a file's requests, request by request, one way for all.

`replay(file, analyses)` groups a file's analysed requests by endpoint (one provider at one URL:
the provider keeps one cache for them), orders them by when they started (file order when a
request has no time) and replays the cache over them. Every reader of "what was read, written
and lost" reads this replay: the rules along a conversation (`lookback-exceeded`,
`write-never-read`), the cost model (`harness cost`, the `cache_budget` marker, `ttl-expired`,
`provider-disagrees`) and `harness scan`. For each request:

- lookups: each breakpoint looks back on its own (Anthropic, Bedrock: the markers, each at most
  `Lookback.reach` blocks; OpenAI, Gemini, DeepSeek: one lookup over the whole request, as their
  prefix rules say). A breakpoint finds the longest earlier entry with the same prefix digest
  that is *live*: written by a request that had finished before this one started (two requests
  in flight together never read each other's write; without an end time, one that started
  earlier), and not expired (its TTL, refreshed by every read, ran out before this one started).
  A breakpoint that finds nothing in its reach while a longer entry than the request reads lies
  further back records it (`Lookup.beyond`): that is `lookback-exceeded`, whatever another
  breakpoint of the same request found (a hit at the system breakpoint never hides a miss at
  the conversation's);
- read: the tokens up to the longest entry any breakpoint found; the read refreshes every entry
  it covers;
- write: every breakpoint after the read at or above the model's minimum writes the tokens from
  the previous covered boundary up to itself, at its TTL; a prefix below the minimum writes
  nothing (and creates no entry, so nothing later can be lost from it);
- uncached: the rest of the request's input.

Tokens (`Tokens`): a request whose response recorded plausible usage (1.5 to 12 bytes a token:
a stand-in's made-up `"input_tokens": 10` is neither used nor compared) counts exactly that
many input tokens, its prefixes scaled by its own ratio; the conversation's other requests use
the ratio of those that recorded usage (calibration), a token counter, else bytes / 4.
`model` replays under another model's rules (its minimum).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from harness.cache._analysis import Analysis
from harness.cache._layout import Mark
from harness.cache._timing import Timing, timing_of
from harness.cache._tokens import PLAUSIBLE
from harness.drift._wording import BYTES_PER_TOKEN
from harness.providers import CacheUsage
from harness.providers._pack import Minimum

__all__ = [
    "Conversation",
    "Entry",
    "Lookup",
    "Step",
    "Tokens",
    "endpoint_of",
    "replay",
    "ttl_seconds",
]

_TTL: Final = re.compile(r"(?P<n>\d+)\s*(?P<unit>[smhd])")
_UNIT: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def ttl_seconds(ttl: str) -> float | None:
    """`"5m"` -> 300.0; None for a TTL the harness cannot read (it then never expires)."""
    found = _TTL.fullmatch(ttl.strip().lower()) if ttl else None
    return float(int(found.group("n")) * _UNIT[found.group("unit")]) if found else None


@dataclass
class Entry:
    """A cache entry: who wrote it (0-based in the file), up to which boundary, at what TTL,
    how many tokens it holds, when it can be read and until when, and whether it was read."""

    owner: int
    after: int
    pointer: str
    ttl: str
    tokens: int
    visible_at: float | None
    end_known: bool
    expires_at: float | None
    read: bool = False
    readers: list[int] = field(default_factory=list)
    # where an exact-prefix cache (OpenAI, Gemini) can read a shorter prefix of a written one:
    # the entry that wrote it, which a read of this one reads too
    parent: Entry | None = None

    def visible(self, index: int, start: float | None, order: dict[int, int]) -> bool:
        if self.visible_at is None or start is None:
            return order.get(self.owner, self.owner) < order.get(index, index)
        return self.visible_at <= start if self.end_known else self.visible_at < start

    def expired(self, start: float | None) -> bool:
        return self.expires_at is not None and start is not None and start > self.expires_at


@dataclass
class Lookup:
    """One breakpoint's lookup: the entry it found within its reach (`hit`), and, when it found
    nothing there, the nearest live entry further back (`beyond`, `distance` blocks from it)."""

    mark: Mark
    reach: int | None
    hit: Entry | None = None
    beyond: Entry | None = None
    distance: int = 0  # in positions (a run of parallel tool calls counts once where it does)
    blocks: int = 0  # the same distance in blocks


@dataclass
class Step:
    """One request as replayed (tokens are estimates, see the module doc)."""

    index: int
    timing: Timing
    input_tokens: int
    read: int
    written: dict[str, int]
    recorded: CacheUsage | None
    read_from: Entry | None = None
    lookups: list[Lookup] = field(default_factory=list)
    expired: list[Entry] = field(default_factory=list)
    hidden: list[Entry] = field(default_factory=list)
    below_minimum: bool = False
    wrote: list[Entry] = field(default_factory=list)
    held: bool = False  # the server holds its earlier turns: what it reads is not predicted

    @property
    def write_tokens(self) -> int:
        return sum(self.written.values())

    @property
    def uncached(self) -> int:
        return max(self.input_tokens - self.read - self.write_tokens, 0)

    def out_of_reach(self) -> list[Lookup]:
        """The lookups whose breakpoint missed an entry longer than what the request read."""
        read = self.read_from.after if self.read_from is not None else 0
        return [
            lookup
            for lookup in self.lookups
            if lookup.beyond is not None and lookup.beyond.after > read
        ]


@dataclass
class Conversation:
    """One endpoint's requests in a file, replayed."""

    file: str
    endpoint: str
    provider: str
    model: str | None
    mode: str
    steps: list[Step]
    tokens_how: str
    unknown_model: bool = False
    entries: list[Entry] = field(default_factory=list)

    @property
    def recorded(self) -> list[CacheUsage]:
        return [step.recorded for step in self.steps if step.recorded is not None]


def endpoint_of(analysis: Analysis) -> str:
    """The cache a request reads and writes: its provider at its host and path."""
    url = analysis.request.url
    if url is None:
        return analysis.provider
    parts = urlsplit(url)
    return f"{analysis.provider} {parts.hostname or ''}{parts.path}"


def believed(usage: CacheUsage | None, size: int) -> bool:
    """Whether a response's usage is plausible for a request of `size` bytes (see `Tokens`)."""
    tokens = usage.input_tokens if usage is not None else 0
    return tokens > 0 and size > 0 and PLAUSIBLE[0] <= size / tokens <= PLAUSIBLE[1]


class Tokens:
    """Bytes to tokens for one conversation (see the module doc)."""

    def __init__(self, analyses: Sequence[Analysis]) -> None:
        counted = [a for a in analyses if believed(a.usage, a.layout.total)]
        size = sum(a.layout.total for a in counted)
        tokens = sum(a.usage.input_tokens for a in counted if a.usage is not None)
        self.ratio = tokens / size if size else 1 / BYTES_PER_TOKEN
        # the others: a token counter (a tokenizer, the project's) before the calibration
        rest = [a for a in analyses if a not in counted]
        by = sorted({a.tokenized.how for a in rest if a.tokenized is not None})
        tokenized = sum(1 for a in rest if a.tokenized is not None)
        if not counted and rest and tokenized == len(rest):
            self.how = "; ".join(by)
        elif not counted:
            self.how = f"bytes / {BYTES_PER_TOKEN}, about ±25%"
            if tokenized:
                self.how += f" ({tokenized} of {len(analyses)} requests {'; '.join(by)})"
        elif len(counted) == len(analyses):
            self.how = "the provider's recorded usage"
        else:
            others = f"; {tokenized} {'; '.join(by)}" if tokenized else ""
            self.how = (
                f"the provider's recorded usage ({len(counted)} of {len(analyses)} requests;"
                f" the others scaled by their ratio{others})"
            )

    def ratio_of(self, analysis: Analysis) -> float:
        usage = analysis.usage
        if usage is not None and believed(usage, analysis.layout.total):
            return usage.input_tokens / analysis.layout.total
        if analysis.tokenized is not None and analysis.layout.total:
            return analysis.tokenized.tokens / analysis.layout.total
        return self.ratio


def replay(file: str, analyses: Sequence[Analysis], model: str | None = None) -> list[Conversation]:
    """The file's requests replayed, one `Conversation` per endpoint (see the module doc);
    under `model`'s rules when given."""
    groups: dict[str, list[Analysis]] = {}
    for analysis in analyses:
        groups.setdefault(endpoint_of(analysis), []).append(analysis)
    return [_conversation(file, key, group, model) for key, group in groups.items()]


def _conversation(
    file: str, endpoint: str, analyses: list[Analysis], override: str | None
) -> Conversation:
    first = analyses[0]
    model = override or first.model
    timings = [timing_of(a.request.time) for a in analyses]
    order = list(range(len(analyses)))
    if all(t.known for t in timings):
        order.sort(key=lambda i: (timings[i].start or 0.0, i))
    rank = {analyses[place].request.index: at for at, place in enumerate(order)}
    tokens = Tokens(analyses)
    pack = first.pack
    minimum_row = pack.first(Minimum, first.provider, model, first.surface)
    mode = first.caching.mode if first.caching is not None else ""
    unknown = minimum_row is None and pack.has_models(Minimum, first.provider) and mode != "units"
    minimum = minimum_row.tokens if minimum_row is not None and mode != "units" else 0
    state = _Cache(rank)
    steps = [_request(analyses[place], timings[place], tokens, minimum, state) for place in order]
    steps.sort(key=lambda step: step.index)
    return Conversation(
        file,
        endpoint,
        first.provider,
        model,
        mode,
        steps,
        tokens.how,
        unknown_model=unknown,
        entries=state.written,
    )


class _Cache:
    """The entries written so far, by the digest of the prefix they hold."""

    def __init__(self, rank: dict[int, int]) -> None:
        self.rank = rank
        self.by_digest: dict[bytes, Entry] = {}
        self.written: list[Entry] = []
        # DeepSeek's units: every prefix an earlier request sent, so a common prefix becomes a
        # unit of its own (by digest: the request that sent it first, the boundary)
        self.sent: dict[bytes, tuple[int, int]] = {}

    def find(self, digest: bytes, boundary: int) -> Entry | None:
        entry = self.by_digest.get(digest)
        return entry if entry is not None and entry.after == boundary else None


def _request(
    analysis: Analysis, timing: Timing, tokens: Tokens, minimum: int, cache: _Cache
) -> Step:
    lay = analysis.layout
    index = analysis.request.index
    ratio = tokens.ratio_of(analysis)
    believe = believed(analysis.usage, lay.total)  # a stand-in's made-up usage is not the word
    total = (
        analysis.usage.input_tokens
        if analysis.usage is not None and believe
        else round(lay.total * ratio)
    )

    def tok(boundary: int) -> int:
        return min(round(lay.size(boundary) * ratio), total)

    step = Step(index, timing, total, 0, {}, analysis.usage if believe else None)
    if analysis.caching is None or analysis.refused or analysis.caching.mode == "none":
        return step
    start = timing.start
    if analysis.split.held:
        # the server holds the earlier turns (a stored response, a message thread): the request
        # reads what they cached, in an amount the request does not show
        step.held = True
        for held in cache.by_digest.values():
            if held.visible(index, start, cache.rank) and not held.expired(start):
                held.read = True
                if held.parent is not None:
                    held.parent.read = True
        return step
    lookback = analysis.lookback
    reach = lookback.reach if lookback is not None and lookback.unit == "blocks" else None
    whole = Mark(len(lay.units), None, "(the request)")
    lookups: list[tuple[Mark, int | None]] = [(whole, None)]
    if reach is not None:  # each breakpoint looks back on its own; implicit caching the whole way
        lookups = [(mark, reach) for mark in analysis.marks]
        if analysis.implicit:
            lookups.append((whole, None))
    # lookback positions per boundary: only a lookup with a reach counts them
    positions = lay.positions(lookback.runs) if lookback is not None and reach is not None else ()
    best: Entry | None = None
    for mark, scope in lookups:
        lookup = _look(cache, analysis, mark, scope, start, step, positions)
        step.lookups.append(lookup)
        if lookup.hit is not None and (best is None or lookup.hit.after > best.after):
            best = lookup.hit
    covered = 0
    if best is not None:
        covered = best.after
        step.read_from = best
        step.read = tok(best.after)
        for boundary in range(best.after, 0, -1):  # a read refreshes every entry it covers
            entry = cache.find(lay.digest(boundary), boundary)
            if entry is not None and not entry.expired(start):
                entry.read = True
                entry.readers.append(index)
                if entry.parent is not None:
                    entry.parent.read = True
                seconds = ttl_seconds(entry.ttl)
                if start is not None and seconds is not None:
                    entry.expires_at = max(entry.expires_at or 0.0, start + seconds)
    done = timing.end if timing.end is not None else start
    # an exact-prefix cache reads any prefix of what it wrote; explicit breakpoints (OpenAI's
    # explicit mode, Claude's checkpoints on Bedrock) are read at the breakpoints only
    prefixes = analysis.caching.mode == "implicit" or analysis.implicit
    if analysis.caching.mode == "units":
        _common_unit(cache, analysis, covered, minimum, tok, timing)
    for write in sorted(analysis.writes, key=lambda w: w.after):
        if write.after <= covered:
            continue
        size = tok(write.after)
        if size < minimum or write.after <= 0:
            step.below_minimum = True
            continue
        step.written[write.ttl] = step.written.get(write.ttl, 0) + max(size - tok(covered), 0)
        covered = write.after
        key = lay.digest(write.after)
        existing = cache.by_digest.get(key)
        if (
            existing is not None
            and existing.after == write.after
            and existing.visible(index, start, cache.rank)
            and not existing.expired(start)
        ):
            continue
        seconds = ttl_seconds(write.ttl)
        entry = Entry(
            owner=index,
            after=write.after,
            pointer=write.pointer,
            ttl=write.ttl,
            tokens=size,
            visible_at=done,
            end_known=timing.end is not None,
            expires_at=done + seconds if done is not None and seconds is not None else None,
        )
        cache.by_digest[key] = entry
        cache.written.append(entry)
        step.wrote.append(entry)
        if prefixes:
            _readable_prefixes(cache, analysis, entry, minimum, tok)
    if step.written:
        step.below_minimum = False
    return step


def _common_unit(
    cache: _Cache,
    analysis: Analysis,
    covered: int,
    minimum: int,
    tok: Callable[[int], int],
    timing: Timing,
) -> None:
    """DeepSeek: "The system detects the common prefix A and persists it as a unit": when a
    request diverges from what an earlier one sent past what it could read, the longest prefix
    the two share becomes a unit a later request can hit (no write fee: DeepSeek has none)."""
    lay = analysis.layout
    index = analysis.request.index
    boundaries = range(len(lay.units), covered, -1)
    common = next(
        (
            boundary
            for boundary in boundaries
            if lay.digest(boundary) in cache.sent
            and cache.sent[lay.digest(boundary)][0] != index
            and cache.find(lay.digest(boundary), boundary) is None
        ),
        None,
    )
    if common is not None and common < len(lay.units) and tok(common) >= max(minimum, 1):
        done = timing.end if timing.end is not None else timing.start
        entry = Entry(
            owner=index,
            after=common,
            pointer=lay.pointer(common),
            ttl="",
            tokens=tok(common),
            visible_at=done,
            end_known=timing.end is not None,
            expires_at=None,
        )
        cache.by_digest[lay.digest(common)] = entry
    for boundary in range(1, len(lay.units) + 1):
        cache.sent.setdefault(lay.digest(boundary), (index, boundary))


def _readable_prefixes(
    cache: _Cache,
    analysis: Analysis,
    entry: Entry,
    minimum: int,
    tok: Callable[[int], int],
) -> None:
    """An exact-prefix cache (OpenAI, Gemini) reads any prefix of a written one at or above the
    minimum: each shorter boundary no entry holds yet becomes readable, through `entry`."""
    lay = analysis.layout
    for boundary in range(entry.after - 1, 0, -1):
        key = lay.digest(boundary)
        if key in cache.by_digest:
            break  # an earlier request made the shorter prefixes readable already
        tokens = tok(boundary)
        if tokens < minimum or tokens <= 0:
            break
        cache.by_digest[key] = Entry(
            owner=entry.owner,
            after=boundary,
            pointer=lay.pointer(boundary),
            ttl=entry.ttl,
            tokens=tokens,
            visible_at=entry.visible_at,
            end_known=entry.end_known,
            expires_at=entry.expires_at,
            parent=entry,
        )


def _look(
    cache: _Cache,
    analysis: Analysis,
    mark: Mark,
    reach: int | None,
    start: float | None,
    step: Step,
    positions: Sequence[int],
) -> Lookup:
    """One breakpoint's lookup: back from its boundary over at most `reach` positions, the
    breakpoint's own counted as the first (None: all): "The system checks at most 20 positions
    per breakpoint, counting the breakpoint itself as the first" (Anthropic's prompt-caching
    page), so an entry 20 blocks before the breakpoint is one position outside. `positions`
    (the layout's, per boundary) count a run of parallel tool calls once where the provider
    does (unread without a reach)."""
    lay = analysis.layout
    index = analysis.request.index
    lookup = Lookup(mark, reach)
    low = 1
    if reach is not None:  # the first boundary whose position is within the reach
        first = positions[mark.after] - reach + 1
        low = max(bisect_left(positions, first, 1, mark.after + 1), 1)
    for boundary in range(mark.after, low - 1, -1):
        entry = cache.find(lay.digest(boundary), boundary)
        if entry is None:
            continue
        if not entry.visible(index, start, cache.rank):
            step.hidden.append(entry)
        elif entry.expired(start):
            step.expired.append(entry)
        else:
            lookup.hit = entry
            return lookup
    if reach is None:
        return lookup
    for boundary in range(low - 1, 0, -1):  # beyond the reach: what a longer look would find
        entry = cache.find(lay.digest(boundary), boundary)
        if (
            entry is not None
            and entry.visible(index, start, cache.rank)
            and not entry.expired(start)
        ):
            lookup.beyond, lookup.distance = entry, positions[mark.after] - positions[boundary]
            lookup.blocks = mark.after - boundary
            break
    return lookup
