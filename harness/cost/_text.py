"""A conversation's cost in words: the line `harness cost`, the budget marker and the report
print ("$0.0123 ($0.0456 without the cache), hit rate 72%: read 12,000, written 5,000, uncached
800 tokens").
"""

from __future__ import annotations

from harness.cache._replay import Conversation
from harness.cost._cost import SessionCost

__all__ = ["breakdown", "money", "percent"]


def money(value: float | None) -> str:
    if value is None:
        return "no price"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def breakdown(cost: SessionCost, conversation: Conversation | None = None) -> str:
    """What the conversation costs, its hit rate and where its tokens went, in one line."""
    model = cost.model or "no model"
    price = (
        f"{money(cost.usd)} ({money(cost.usd_without_cache)} without the cache) at {model}"
        f" list price, prices checked {cost.prices_checked_on}"
        if cost.usd is not None
        else f"no price for {model} ({cost.provider}) in the price pack: add a row to"
        " harness-prices.json"
    )
    parts = [
        f"{cost.requests} request(s): {price}",
        f"hit rate {percent(cost.hit_rate)}: read {cost.cache_read_tokens:,}, written"
        f" {cost.cache_write_tokens:,}, uncached {cost.uncached_tokens:,} of"
        f" {cost.input_tokens:,} input tokens",
    ]
    if conversation is not None:
        parts.append(f"tokens: {conversation.tokens_how}")
        if conversation.unknown_model:
            parts.append(f"the rules know no minimum for {model}: none applied")
    if cost.agreement is not None and cost.recorded is not None:
        parts.append(
            f"agreement with the provider's counters {percent(cost.agreement)} (recorded reads"
            f" {cost.recorded.cache_read_tokens:,})"
        )
    return "; ".join(parts)
