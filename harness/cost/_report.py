"""What `harness report` shows, per conversation, and its Markdown for a pull-request comment.

`report_items(paths, model)` reads what `harness lint` reads and gathers, for each conversation:
its cost (`SessionCost`), its simulated requests (read / written / uncached, each request's cost),
the first divergence the prefix-chain gate found in its file (the drift report: its excerpts and
the tool order, recorded against replayed), the rules' findings on its file, and the agreement
with the provider's counters. `markdown(items)` is the same summary as Markdown;
`harness.cost._html` renders it as one self-contained HTML page. Every text is the printer's
(`harness._shared._printer`: redacted) before it reaches either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness._shared._formats import code, text
from harness.cache._replay import Conversation
from harness.cost._cost import (
    PricesUsed,
    SessionCost,
    cost_of,
    price_of,
    prices_used,
    quote_of,
    request_usd,
)
from harness.cost._simulate import conversations
from harness.cost._text import money, origin, percent
from harness.drift._report import DriftReport
from harness.rules._engine import Finding, Policy
from harness.rules._inputs import sessions_of
from harness.rules._registry import lint

__all__ = ["Item", "Row", "markdown", "report_items"]


@dataclass
class Row:
    """One request on the timeline."""

    number: int
    start: float | None
    read: int
    written: int
    uncached: int
    usd: float | None


@dataclass
class Item:
    """One conversation of the report."""

    cost: SessionCost
    conversation: Conversation
    rows: list[Row]
    divergence: DriftReport | None = None
    divergence_at: int = 0
    findings: list[Finding] = field(default_factory=list)
    prices: PricesUsed | None = None  # named under the same price rows as `cost`


def report_items(
    paths: Sequence[Path], model: str | None = None, policy: Policy | None = None
) -> list[Item]:
    items: list[Item] = []
    for session in sessions_of(paths):
        chain = session.chain
        broken = sorted([*chain.breaks, *chain.warnings], key=lambda item: item.index)
        findings = lint(session, policy)
        for conversation in conversations(session, model):
            price = price_of(conversation)
            fee = bool(price.cache_write) if price is not None else True
            first = conversation.steps[0].timing.start if conversation.steps else None
            rows = [
                Row(
                    number=session.offset + step.index,
                    start=(step.timing.start - first)
                    if step.timing.start is not None and first is not None
                    else None,
                    read=step.read,
                    written=step.write_tokens if fee else 0,
                    uncached=step.input_tokens - step.read - (step.write_tokens if fee else 0),
                    usd=request_usd(step, quote_of(conversation, step), fee),
                )
                for step in conversation.steps
            ]
            indexes = {step.index for step in conversation.steps}
            mine = [b for b in broken if b.index - 1 in indexes]
            items.append(
                Item(
                    cost=cost_of(conversation),
                    conversation=conversation,
                    rows=rows,
                    divergence=mine[0].report if mine else None,
                    divergence_at=session.offset + mine[0].index - 1 if mine else 0,
                    findings=[f for f in findings if f.request - session.offset in indexes],
                    prices=prices_used(conversation),
                )
            )
    return items


def markdown(items: Sequence[Item]) -> str:
    """The report's summary as Markdown: a table of the conversations, then each one's first
    divergence and findings."""
    lines = [
        "## Prompt-cache cost",
        "",
        "| conversation | model | requests | cost | without cache | hit rate | agreement |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for item in items:
        cost = item.cost
        lines.append(
            f"| {code(cost.file, 200, cell=True)} | {code(cost.model or 'no model', 60, cell=True)}"
            f" | {cost.requests} | {money(cost.usd)} | {money(cost.usd_without_cache)}"
            f" | {percent(cost.hit_rate)} | {percent(cost.agreement)} |"
        )
    total = sum(item.cost.usd or 0.0 for item in items)
    without = sum(item.cost.usd_without_cache or 0.0 for item in items)
    lines += ["", f"Total: {money(total)} ({money(without)} without the cache)."]
    checked = sorted({i.cost.prices_checked_on for i in items if i.cost.prices_checked_on})
    if checked:
        sources = sorted({origin(i.prices) for i in items if i.cost.usd and i.prices})
        named = f" ({'; '.join(sources)})" if sources else ""
        said = f"List prices checked {', '.join(checked)}{named}"
        lines.append(f"{text(said, 2000)}; tokens are estimates.")
    for item in items:
        if item.divergence is None and not item.findings:
            continue
        lines += ["", f"### {code(item.cost.file, 200)}", ""]
        if item.divergence is not None:
            lines += [
                f"First divergence at request {item.divergence_at}:"
                f" {text(item.divergence.summary, 300)}",
                "",
            ]
        for finding in item.findings:
            lines.append(
                f"- request {finding.request}: **{text(finding.severity, 20)}**"
                f" {code(finding.rule)}: {text(finding.message, 300)}"
            )
    return "\n".join(lines) + "\n"
