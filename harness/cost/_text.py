"""A conversation's cost in words: the line `harness cost`, the budget marker and the report
print ("$0.0123 ($0.0456 without the cache) at claude-sonnet-5 list price, prices checked
2026-12-05 (genai-prices 0.2.5), hit rate 72%: read 12,000, written 5,000, uncached 800 tokens").

The parenthesis names where the prices came from: genai-prices and its version, the price pack's
page or assumption, a project's file; then what applied to some requests (a long-context tier, a
time-of-day window, a weekday price, the day's highest price when the time was not recorded).
"""

from __future__ import annotations

from harness.cache._replay import Conversation
from harness.cost._cost import PricesUsed, SessionCost, prices_used

__all__ = ["breakdown", "money", "origin", "percent"]


def money(value: float | None) -> str:
    if value is None:
        return "no price"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def origin(prices: PricesUsed) -> str:
    """Where the prices came from, and what applied to how many requests, in a few words."""
    names: list[str] = []
    for source in prices.sources:
        if source.version is not None:
            name = f"{source.source} {source.version}"
        elif source.source.startswith(("http://", "https://")):
            name = f"the price pack ({', '.join(source.gave)}: {source.source})"
        elif source.source == "assumption":
            name = f"the price pack's assumption for {', '.join(source.gave)}"
        else:
            name = source.source
        if name not in names:
            names.append(name)
    said = " and ".join(names)
    for what, count in prices.applied.items():
        said += f"; {what} on {count} of {prices.requests} request(s)"
    return said


def breakdown(
    cost: SessionCost, conversation: Conversation | None = None, prices: PricesUsed | None = None
) -> str:
    """What the conversation costs, its hit rate and where its tokens went, in one line."""
    model = cost.model or "no model"
    if prices is None and conversation is not None:
        prices = prices_used(conversation)
    source = f" ({origin(prices)})" if prices is not None and prices.sources else ""
    price = (
        f"{money(cost.usd)} ({money(cost.usd_without_cache)} without the cache) at {model}"
        f" list price, prices checked {cost.prices_checked_on}{source}"
        if cost.usd is not None
        else f"no price for {model} ({cost.provider}) in genai-prices or the price pack: add a"
        " row to harness-prices.json"
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
