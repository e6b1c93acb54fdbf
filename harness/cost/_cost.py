"""A conversation's cost: the simulation priced, the provider's counters summed, their agreement.

`cost_of(conversation)` prices each simulated request at its own prices (`harness.cost._prices`:
the project's rows, the price pack, genai-prices), asked for the conversation's provider and
model at the request's start (a recorded wall-clock time picks the price in force that day and,
for DeepSeek, that hour) and size (a request over a long-context threshold pays the tier's price
for all its tokens): uncached input at `input`, reads at `cache_read`, writes at
`cache_write[ttl]` (a provider with no write fee bills a write as input, so its tokens count as
uncached), and output at `output` (the recorded output tokens; none recorded, none priced).
`usd_without_cache` is every input token at `input` plus the same output. A conversation with a
request nothing prices costs `null`, never a partial sum. `prices_used` says where each price
came from (the `prices` of `harness cost --format json`).

`agreement` compares the predicted cache-read tokens with the recorded ones, request by request,
over the requests whose responses hold counters: 1 - sum |predicted - recorded| / max(sum
predicted, sum recorded) (1 when both are 0), so 1 is full agreement and 0 none; null without
counters. `SessionCost` is one entry of `harness cost --format json`'s `sessions`, its keys
exactly those of the issue.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from harness.cache._replay import Conversation, Step
from harness.cost._prices import PriceSource, Quote, price_for

__all__ = [
    "PricesUsed",
    "Recorded",
    "SessionCost",
    "Totals",
    "agreement",
    "cost_of",
    "price_of",
    "prices_used",
    "quote_of",
    "request_usd",
    "totals",
]

_EPOCH_FLOOR = 1e9  # a start above this is a Unix time (harness.cost._timing), not an offset


class Recorded(msgspec.Struct, frozen=True):
    """The provider's counters, summed over the requests that recorded them."""

    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    output_tokens: int
    miss_reasons: list[str]


class SessionCost(msgspec.Struct, frozen=True):
    file: str
    provider: str
    model: str | None
    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    hit_rate: float
    usd: float | None
    usd_without_cache: float | None
    recorded: Recorded | None
    agreement: float | None
    prices_checked_on: str | None


class Totals(msgspec.Struct, frozen=True):
    sessions: int
    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    hit_rate: float
    usd: float
    usd_without_cache: float


class PricesUsed(msgspec.Struct, frozen=True):
    """Where a conversation's prices came from: one entry of `harness cost`'s `prices`, in the
    order of `sessions`. The prices are its first request's (USD per million tokens); `applied`
    counts the requests a tier, a time-of-day window or a weekday price applied to."""

    file: str
    provider: str
    model: str | None
    requests: int
    input: float | None
    output: float | None
    cache_read: float | None
    cache_write: dict[str, float]
    sources: list[PriceSource]
    applied: dict[str, int]


def _day(conversation: Conversation) -> datetime.date | None:
    return next((s.timing.day for s in conversation.steps if s.timing.day is not None), None)


def _moment(step: Step) -> datetime.datetime | None:
    start = step.timing.start
    if step.timing.day is None or start is None or start < _EPOCH_FLOOR:
        return None
    return datetime.datetime.fromtimestamp(start, datetime.UTC)


def quote_of(conversation: Conversation, step: Step) -> Quote | None:
    """One request's prices: at its recorded start, else on the conversation's day."""
    return price_for(
        conversation.provider,
        conversation.model,
        _day(conversation),
        at=_moment(step),
        input_tokens=step.input_tokens,
    )


def price_of(conversation: Conversation) -> Quote | None:
    """The conversation's prices as its first request pays them (whether anything prices it)."""
    if conversation.steps:
        return quote_of(conversation, conversation.steps[0])
    return price_for(conversation.provider, conversation.model, _day(conversation))


def _fee(conversation: Conversation, price: Quote | None) -> bool:
    """Whether writes are billed as writes (else as input)."""
    if price is None:
        return conversation.mode == "breakpoints"
    return bool(price.cache_write)


def request_usd(step: Step, price: Quote | None, fee: bool) -> float | None:
    """One simulated request at `price`, in USD; None without a price."""
    if price is None:
        return None
    output = _output(step)
    written = step.write_tokens if fee else 0
    uncached = step.input_tokens - step.read - written
    total = uncached * price.input + step.read * price.cache_read + output * price.output
    if fee:
        for ttl, tokens in step.written.items():
            total += tokens * (price.write(ttl) or price.input)
    return total / 1_000_000


def agreement(steps: Sequence[Step]) -> float | None:
    pairs = [(s.read, s.recorded.read_tokens) for s in steps if s.recorded is not None]
    if not pairs:
        return None
    predicted = sum(p for p, _ in pairs)
    recorded = sum(r for _, r in pairs)
    if max(predicted, recorded) == 0:
        return 1.0
    off = sum(abs(p - r) for p, r in pairs)
    return round(max(0.0, 1 - off / max(predicted, recorded)), 4)


def _recorded(conversation: Conversation) -> Recorded | None:
    found = conversation.recorded
    if not found:
        return None
    return Recorded(
        requests=len(found),
        input_tokens=sum(u.input_tokens for u in found),
        cache_read_tokens=sum(u.read_tokens for u in found),
        cache_write_tokens=sum(u.written_tokens for u in found),
        uncached_tokens=sum(u.uncached_tokens or 0 for u in found),
        output_tokens=sum(u.output_tokens or 0 for u in found),
        miss_reasons=[u.miss_reason for u in found if u.miss_reason],
    )


def _quotes(conversation: Conversation) -> list[Quote | None]:
    return [quote_of(conversation, step) for step in conversation.steps]


def cost_of(conversation: Conversation) -> SessionCost:
    quotes = _quotes(conversation)
    first = quotes[0] if quotes else price_of(conversation)
    fee = _fee(conversation, first)
    steps = conversation.steps
    input_tokens = sum(s.input_tokens for s in steps)
    read = sum(s.read for s in steps)
    written = sum(s.write_tokens for s in steps) if fee else 0
    usd: float | None = None
    without: float | None = None
    priced = [q for q in quotes if q is not None]
    if first is not None and len(priced) == len(quotes):
        usd = sum(request_usd(s, q, fee) or 0.0 for s, q in zip(steps, priced, strict=True))
        without = sum(
            s.input_tokens * q.input + _output(s) * q.output
            for s, q in zip(steps, priced, strict=True)
        )
        without /= 1_000_000
    checked = [q.checked_on for q in priced if q.checked_on] or (
        [first.checked_on] if first is not None and first.checked_on else []
    )
    return SessionCost(
        file=conversation.file,
        provider=conversation.provider,
        model=conversation.model,
        requests=len(steps),
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_write_tokens=written,
        uncached_tokens=input_tokens - read - written,
        hit_rate=round(read / input_tokens, 4) if input_tokens else 0.0,
        usd=round(usd, 6) if usd is not None else None,
        usd_without_cache=round(without, 6) if without is not None else None,
        recorded=_recorded(conversation),
        agreement=agreement(steps),
        prices_checked_on=max(checked) if checked else None,
    )


def _output(step: Step) -> int:
    return (step.recorded.output_tokens or 0) if step.recorded is not None else 0


def prices_used(conversation: Conversation) -> PricesUsed:
    """Where the conversation's prices came from (see `PricesUsed`)."""
    quotes = _quotes(conversation)
    first = quotes[0] if quotes else price_of(conversation)
    sources: list[PriceSource] = []
    applied: Counter[str] = Counter()
    for quote in [q for q in quotes if q is not None] or ([first] if first else []):
        sources += [s for s in quote.sources if s not in sources]
        applied.update(quote.applied)
    return PricesUsed(
        file=conversation.file,
        provider=conversation.provider,
        model=conversation.model,
        requests=len(conversation.steps),
        input=first.input if first is not None else None,
        output=first.output if first is not None else None,
        cache_read=first.cache_read if first is not None else None,
        cache_write=dict(first.cache_write) if first is not None else {},
        sources=sources,
        applied=dict(applied),
    )


def totals(costs: Sequence[SessionCost]) -> Totals:
    input_tokens = sum(c.input_tokens for c in costs)
    read = sum(c.cache_read_tokens for c in costs)
    return Totals(
        sessions=len(costs),
        requests=sum(c.requests for c in costs),
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_write_tokens=sum(c.cache_write_tokens for c in costs),
        uncached_tokens=sum(c.uncached_tokens for c in costs),
        hit_rate=round(read / input_tokens, 4) if input_tokens else 0.0,
        usd=round(sum(c.usd or 0.0 for c in costs), 6),
        usd_without_cache=round(sum(c.usd_without_cache or 0.0 for c in costs), 6),
    )


def as_builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)
