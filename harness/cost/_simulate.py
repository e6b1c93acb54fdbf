"""The cost model's simulation: request by request, what is read from the cache, written (per
TTL) and sent uncached, under the rules pack and the recorded times.

A session's requests are grouped by endpoint (a conversation: one provider at one URL), then
replayed in the order they started (file order when a request has no time). For each request:

- lookup: each breakpoint (Anthropic, Bedrock: the markers, each looking back `Lookback.reach`
  blocks; OpenAI, Gemini, DeepSeek: the whole request) finds the longest earlier entry with the
  same prefix digest that is *live*: written by a request that had finished before this one
  started (two requests in flight together cannot read each other's write; without an end time,
  one that started earlier), and not expired (its TTL, refreshed by every read, ran out before
  this request started: `expired`);
- read: the tokens up to that entry;
- write: every breakpoint after it at or above the model's minimum writes the tokens from the
  previous covered boundary up to itself, at its TTL; a prefix below the minimum writes nothing;
- uncached: the rest of the request's input.

Tokens (`Tokens`): a request whose response recorded plausible usage (1.5 to 12 bytes a token:
a stand-in's made-up `"input_tokens": 10` is neither used nor compared) counts exactly that
many input tokens, its prefixes scaled by its own tokens-to-bytes ratio; the conversation's other
requests use the ratio of the ones that recorded usage (calibration), else bytes / 4, stated as an
uncertainty of about ±25%. `model` re-simulates under another model's rules (its minimum).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from harness.cost._timing import Timing, timing_of
from harness.drift._wording import BYTES_PER_TOKEN
from harness.providers import CacheUsage
from harness.providers._pack import Minimum
from harness.rules._analysis import Analysis
from harness.rules._engine import Session
from harness.rules._tokens import PLAUSIBLE

__all__ = ["Conversation", "Entry", "Step", "conversations", "ttl_seconds"]

_TTL: Final = re.compile(r"(?P<n>\d+)\s*(?P<unit>[smhd])")
_UNIT: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def ttl_seconds(ttl: str) -> float | None:
    """`"5m"` -> 300.0; None for a TTL the harness cannot read (it then never expires)."""
    found = _TTL.fullmatch(ttl.strip().lower()) if ttl else None
    return float(int(found.group("n")) * _UNIT[found.group("unit")]) if found else None


@dataclass
class Entry:
    """A cache entry: who wrote it, up to which boundary, when it can be read and until when."""

    owner: int
    after: int
    pointer: str
    ttl: str
    tokens: int
    visible_at: float | None
    end_known: bool
    expires_at: float | None
    read: bool = False

    def visible(self, index: int, start: float | None) -> bool:
        if self.visible_at is None or start is None:
            return self.owner < index
        return self.visible_at <= start if self.end_known else self.visible_at < start

    def expired(self, start: float | None) -> bool:
        return self.expires_at is not None and start is not None and start > self.expires_at


@dataclass
class Step:
    """One request as simulated (tokens are estimates, see the module doc)."""

    index: int
    timing: Timing
    input_tokens: int
    read: int
    written: dict[str, int]
    recorded: CacheUsage | None
    read_from: Entry | None = None
    expired: list[Entry] = field(default_factory=list)
    hidden: list[Entry] = field(default_factory=list)
    below_minimum: bool = False

    @property
    def write_tokens(self) -> int:
        return sum(self.written.values())

    @property
    def uncached(self) -> int:
        return max(self.input_tokens - self.read - self.write_tokens, 0)


@dataclass
class Conversation:
    """One endpoint's requests in a session, simulated."""

    file: str
    endpoint: str
    provider: str
    model: str | None
    mode: str
    steps: list[Step]
    tokens_how: str
    unknown_model: bool = False

    @property
    def recorded(self) -> list[CacheUsage]:
        return [step.recorded for step in self.steps if step.recorded is not None]


def _endpoint(analysis: Analysis) -> str:
    url = analysis.request.url
    if url is None:
        return analysis.provider
    parts = urlsplit(url)
    return f"{analysis.provider} {parts.hostname or ''}{parts.path}"


def _believed(usage: CacheUsage | None, size: int) -> bool:
    tokens = usage.input_tokens if usage is not None else 0
    return tokens > 0 and size > 0 and PLAUSIBLE[0] <= size / tokens <= PLAUSIBLE[1]


class Tokens:
    """Bytes to tokens for one conversation (see the module doc)."""

    def __init__(self, analyses: Sequence[Analysis]) -> None:
        counted = [a for a in analyses if _believed(a.usage, a.layout.total)]
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
        if usage is not None and _believed(usage, analysis.layout.total):
            return usage.input_tokens / analysis.layout.total
        if analysis.tokenized is not None and analysis.layout.total:
            return analysis.tokenized.tokens / analysis.layout.total
        return self.ratio


def conversations(session: Session, model: str | None = None) -> list[Conversation]:
    """The session's conversations (one per endpoint), simulated; under `model`'s rules if given."""
    groups: dict[str, list[Analysis]] = {}
    for analysis in session.analysed():
        groups.setdefault(_endpoint(analysis), []).append(analysis)
    return [_simulate(session.file, key, group, model) for key, group in groups.items()]


def _simulate(
    file: str, endpoint: str, analyses: list[Analysis], override: str | None
) -> Conversation:
    first = analyses[0]
    model = override or first.model
    timings = [timing_of(a.request.time) for a in analyses]
    order = list(range(len(analyses)))
    if all(t.known for t in timings):
        order.sort(key=lambda i: (timings[i].start or 0.0, i))
    tokens = Tokens(analyses)
    pack = first.pack
    minimum_row = pack.first(Minimum, first.provider, model, first.surface)
    mode = first.caching.mode if first.caching is not None else ""
    unknown = minimum_row is None and pack.has_models(Minimum, first.provider) and mode != "units"
    minimum = minimum_row.tokens if minimum_row is not None and mode != "units" else 0
    entries: dict[bytes, Entry] = {}
    steps: list[Step] = []
    for place in order:
        steps.append(_request(analyses[place], place, timings[place], tokens, minimum, entries))
    steps.sort(key=lambda step: step.index)
    return Conversation(
        file, endpoint, first.provider, model, mode, steps, tokens.how, unknown_model=unknown
    )


def _request(
    analysis: Analysis,
    index: int,
    timing: Timing,
    tokens: Tokens,
    minimum: int,
    entries: dict[bytes, Entry],
) -> Step:
    lay = analysis.layout
    ratio = tokens.ratio_of(analysis)

    def tok(boundary: int) -> int:
        return round(lay.size(boundary) * ratio)

    total = (
        analysis.usage.input_tokens
        if analysis.usage is not None and _believed(analysis.usage, lay.total)
        else round(lay.total * ratio)
    )
    believed = _believed(analysis.usage, lay.total)  # a stand-in's made-up usage is not the word
    step = Step(index, timing, total, 0, {}, analysis.usage if believed else None)
    if analysis.caching is None or analysis.refused:
        return step
    start = timing.start
    lookback = analysis.lookback
    reach = lookback.reach if lookback is not None and lookback.unit == "blocks" else None
    lookups = [mark.after for mark in analysis.marks] if reach is not None else [len(lay.units)]
    best: Entry | None = None
    for point in lookups:
        low = max(point - reach, 1) if reach is not None else 1
        for boundary in range(point, low - 1, -1):
            entry = entries.get(lay.digest(boundary))
            if entry is None or entry.after != boundary:
                continue
            if not entry.visible(index, start):
                step.hidden.append(entry)
            elif entry.expired(start):
                step.expired.append(entry)
            else:
                if best is None or entry.after > best.after:
                    best = entry
                break
    covered = 0
    if best is not None:
        covered = best.after
        step.read_from = best
        step.read = min(tok(best.after), total)
        for boundary in range(best.after, 0, -1):  # a read refreshes every entry it covers
            entry = entries.get(lay.digest(boundary))
            if entry is not None and entry.after == boundary and not entry.expired(start):
                entry.read = True
                seconds = ttl_seconds(entry.ttl)
                if start is not None and seconds is not None:
                    entry.expires_at = max(entry.expires_at or 0.0, start + seconds)
    done = timing.end if timing.end is not None else start
    for write in sorted(analysis.writes, key=lambda w: w.after):
        if write.after <= covered:
            continue
        size = tok(write.after)
        if size < minimum or write.after <= 0:
            step.below_minimum = True
            continue
        segment = max(min(size, total) - min(tok(covered), total), 0)
        step.written[write.ttl] = step.written.get(write.ttl, 0) + segment
        covered = write.after
        key = lay.digest(write.after)
        existing = entries.get(key)
        if existing is not None and existing.visible(index, start) and not existing.expired(start):
            continue
        seconds = ttl_seconds(write.ttl)
        entries[key] = Entry(
            owner=index,
            after=write.after,
            pointer=write.pointer,
            ttl=write.ttl,
            tokens=size,
            visible_at=done,
            end_known=timing.end is not None,
            expires_at=done + seconds if done is not None and seconds is not None else None,
        )
    if step.written:
        step.below_minimum = False
    return step
