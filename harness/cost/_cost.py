"""A conversation's cost: the simulation priced, the provider's counters summed, their agreement.

`cost_of(conversation)` prices each simulated request at the price row in force for the
conversation's provider, model and date (`harness.cost._prices`): uncached input at `input`,
reads at `cache_read`, writes at `cache_write[ttl]` (a provider with no write fee bills a write
as input, so its tokens count as uncached), and output at `output` (the recorded output tokens;
none recorded, none priced). `usd_without_cache` is every input token at `input` plus the same
output.

`agreement` compares the predicted cache-read tokens with the recorded ones, request by request,
over the requests whose responses hold counters: 1 - sum |predicted - recorded| / max(sum
predicted, sum recorded) (1 when both are 0), so 1 is full agreement and 0 none; null without
counters. `SessionCost` is one entry of `harness cost --format json`'s `sessions`, its keys
exactly those of the issue.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import msgspec

from harness.cache._replay import Conversation, Step
from harness.cost._prices import Price, price_for

__all__ = ["Recorded", "SessionCost", "Totals", "agreement", "cost_of", "request_usd", "totals"]


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


def _day(conversation: Conversation) -> datetime.date | None:
    return next((s.timing.day for s in conversation.steps if s.timing.day is not None), None)


def price_of(conversation: Conversation) -> Price | None:
    return price_for(conversation.provider, conversation.model, _day(conversation))


def _fee(conversation: Conversation, price: Price | None) -> bool:
    """Whether writes are billed as writes (else as input)."""
    if price is None:
        return conversation.mode == "breakpoints"
    return bool(price.cache_write)


def request_usd(step: Step, price: Price | None, fee: bool) -> float | None:
    """One simulated request at `price`, in USD; None without a price."""
    if price is None:
        return None
    output = (step.recorded.output_tokens or 0) if step.recorded is not None else 0
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


def cost_of(conversation: Conversation) -> SessionCost:
    price = price_of(conversation)
    fee = _fee(conversation, price)
    steps = conversation.steps
    input_tokens = sum(s.input_tokens for s in steps)
    read = sum(s.read for s in steps)
    written = sum(s.write_tokens for s in steps) if fee else 0
    usd: float | None = None
    without: float | None = None
    if price is not None:
        usd = sum(request_usd(s, price, fee) or 0.0 for s in steps)
        output = sum((s.recorded.output_tokens or 0) for s in steps if s.recorded is not None)
        without = (input_tokens * price.input + output * price.output) / 1_000_000
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
        prices_checked_on=price.checked_on.isoformat() if price is not None else None,
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
