"""`harness report --html`: one self-contained HTML page (inline CSS and SVG; no script, nothing
fetched), per conversation:

- its figures (`data-figure` attributes carry the raw numbers, so a test reads the DOM);
- a timeline: one SVG bar per request, read / written / uncached tokens to scale, and its cost;
- the first divergence side by side: the drift report's excerpts, the difference highlighted;
- the tool-order table, recorded against replayed, the moved rows marked;
- the rules' findings, and the agreement with the provider's counters.

Every text is the printer's (`harness._shared._printer`: redacted) and then HTML-escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import Final

from harness._shared._printer import MARKER, line, redact
from harness.cost._report import Item, Row
from harness.cost._text import money, percent

__all__ = ["escaped", "page", "render_html"]

_CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #d6dbe3}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d6dbe3;padding:3px 8px}
th{background:#f1f4f8;text-align:left}.num{text-align:right;font-variant-numeric:tabular-nums}
.figures span{display:inline-block;margin:0 16px 6px 0}.figures b{font-size:16px}
.read{fill:#2e9d5b}.written{fill:#e0a100}.uncached{fill:#9aa3b0}
.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}
.side{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.side pre{white-space:pre-wrap;word-break:break-all;background:#f7f8fa;padding:8px;margin:0}
mark{background:#ffd966}tr.moved td{background:#fde2e1}
.error{color:#b3261e}.warning{color:#8a5a00}.info{color:#44546a}
"""
_BAR: Final = 520
_TOKEN: Final = re.compile(r'[^",:{}\[\]]{1,40}')


def _t(text: str, limit: int = 400) -> str:
    """A text as the page shows it: redacted, on one line, cut, escaped."""
    return escape(line(text, limit))


escaped = _t  # what another page made on this one (harness scan --html) shows text through


def page(title: str, body: str) -> str:
    """The self-contained page (inline CSS, no script, nothing fetched) around `body`, HTML
    made of escaped text; `title` is escaped here."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_t(title, 200)}</title>"
        f"<style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def _figures(item: Item) -> str:
    cost = item.cost
    figures = [
        ("usd", money(cost.usd), cost.usd),
        ("usd_without_cache", money(cost.usd_without_cache), cost.usd_without_cache),
        ("hit_rate", percent(cost.hit_rate), cost.hit_rate),
        ("cache_read_tokens", f"{cost.cache_read_tokens:,}", cost.cache_read_tokens),
        ("cache_write_tokens", f"{cost.cache_write_tokens:,}", cost.cache_write_tokens),
        ("uncached_tokens", f"{cost.uncached_tokens:,}", cost.uncached_tokens),
        ("agreement", percent(cost.agreement), cost.agreement),
    ]
    spans = "".join(
        f'<span>{name.replace("_", " ")}: <b data-figure="{name}"'
        f' data-value="{"" if value is None else value}">{escape(shown)}</b></span>'
        for name, shown, value in figures
    )
    checked = escape(cost.prices_checked_on or "no price row")
    return (
        f'<div class="figures">{spans}</div><p>{cost.requests} request(s) at'
        f" {_t(cost.model or 'no model', 80)} list price, prices checked {checked}; tokens:"
        f" {_t(item.conversation.tokens_how, 200)}.</p>"
    )


def _timeline(rows: Sequence[Row]) -> str:
    widest = max((r.read + r.written + r.uncached for r in rows), default=0) or 1
    height = 22
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_BAR + 260}"'
        f' height="{height * len(rows) + 8}" role="img" aria-label="requests timeline">'
    ]
    for place, row in enumerate(rows):
        y = 4 + place * height
        x = 90.0
        at = f"+{row.start:.0f}s" if row.start is not None else ""
        parts.append(f'<text x="0" y="{y + 14}" font-size="12">#{row.number} {at}</text>')
        for name, value in (
            ("read", row.read),
            ("written", row.written),
            ("uncached", row.uncached),
        ):
            width = round(_BAR * value / widest, 1)
            if width <= 0:
                continue
            parts.append(
                f'<rect class="{name}" x="{x}" y="{y}" width="{width}" height="{height - 6}"'
                f' data-tokens="{value}"><title>{name} {value:,} tokens</title></rect>'
            )
            x += width
        parts.append(
            f'<text x="{_BAR + 100}" y="{y + 14}" font-size="12" data-usd="{row.usd}">'
            f"{escape(money(row.usd))}</text>"
        )
    parts.append("</svg>")
    legend = (
        '<p class="legend"><i class="read" style="background:#2e9d5b"></i>read'
        '<i style="background:#e0a100"></i>written<i style="background:#9aa3b0"></i>uncached</p>'
    )
    table = "".join(
        f'<tr data-request="{r.number}"><td class="num">{r.number}</td><td class="num">'
        f'{r.read:,}</td><td class="num">{r.written:,}</td><td class="num">{r.uncached:,}</td>'
        f'<td class="num">{escape(money(r.usd))}</td></tr>'
        for r in rows
    )
    return (
        "".join(parts)
        + legend
        + '<table class="requests"><tr><th>request</th><th>read</th><th>written</th>'
        f"<th>uncached</th><th>cost</th></tr>{table}</table>"
    )


def _excerpt(text: str) -> str:
    """An excerpt with its first difference highlighted: the drift report marks it `<<HERE>>`;
    the token after the mark (up to a JSON delimiter) is the one that differs."""
    before, marker, after = redact(text).partition(MARKER)
    if not marker:
        return f"<pre>{escape(before)}</pre>"
    found = _TOKEN.match(after)
    size = found.end() if found is not None and found.end() > 0 else 1
    return f"<pre>{escape(before)}<mark>{escape(after[:size])}</mark>{escape(after[size:])}</pre>"


def _divergence(item: Item) -> str:
    report = item.divergence
    if report is None:
        return "<p>No divergence: every request extends the cached prefix of the one before.</p>"
    where = _t(report.pointer, 200)
    side = (
        f'<div class="side"><div><h4>recorded (request before)</h4>{_excerpt(report.context_a)}'
        f"</div><div><h4>replayed (request {item.divergence_at})</h4>"
        f"{_excerpt(report.context_b)}</div></div>"
    )
    summary = f'<p class="divergence"><mark>{_t(report.summary)}</mark> at <code>{where}</code></p>'
    return summary + side + _tools(report.tools_a, report.tools_b)


def _tools(before: Sequence[str], after: Sequence[str]) -> str:
    if not before and not after:
        return ""
    rows = []
    for place in range(max(len(before), len(after))):
        a = before[place] if place < len(before) else ""
        b = after[place] if place < len(after) else ""
        moved = ' class="moved"' if a != b else ""
        rows.append(
            f'<tr{moved}><td class="num">{place}</td><td>{_t(a, 120)}</td><td>{_t(b, 120)}</td>'
            f"<td>{'moved' if a != b else ''}</td></tr>"
        )
    return (
        '<table class="tools"><tr><th>#</th><th>recorded</th><th>replayed</th><th></th></tr>'
        + "".join(rows)
        + "</table>"
    )


def _findings(item: Item) -> str:
    if not item.findings:
        return "<p>No findings.</p>"
    rows = "".join(
        f'<li class="{escape(f.severity)}" data-rule="{escape(f.rule)}">request {f.request}:'
        f" <b>{escape(f.severity)}</b> <code>{escape(f.rule)}</code>: {_t(f.message)}</li>"
        for f in item.findings
    )
    return f'<ul class="findings">{rows}</ul>'


def _agreement(item: Item) -> str:
    cost = item.cost
    if cost.recorded is None or cost.agreement is None:
        return "<p>The recordings hold no provider counters: nothing to compare.</p>"
    steps = [step for step in item.conversation.steps if step.recorded is not None]
    predicted = sum(step.read for step in steps)
    return (
        f'<p class="agreement">Over the {len(steps)} request(s) whose responses hold counters:'
        f' predicted cache reads <b data-figure="predicted_reads" data-value="{predicted}">'
        f'{predicted:,}</b> tokens; the provider recorded <b data-figure="recorded_reads"'
        f' data-value="{cost.recorded.cache_read_tokens}">{cost.recorded.cache_read_tokens:,}'
        f"</b>: agreement {escape(percent(cost.agreement))}.</p>"
    )


def render_html(items: Sequence[Item]) -> str:
    total = sum(item.cost.usd or 0.0 for item in items)
    without = sum(item.cost.usd_without_cache or 0.0 for item in items)
    sections = []
    for number, item in enumerate(items, start=1):
        sections.append(
            f'<section class="conversation" id="c{number}" data-file="{_t(item.cost.file, 300)}">'
            f"<h2>{_t(item.cost.file, 200)} ({_t(item.cost.provider, 40)})</h2>"
            f"{_figures(item)}<h3>Requests</h3>{_timeline(item.rows)}"
            f"<h3>First divergence</h3>{_divergence(item)}"
            f"<h3>Findings</h3>{_findings(item)}<h3>Agreement</h3>{_agreement(item)}</section>"
        )
    return page(
        "harness report: prompt-cache cost",
        "<h1>Prompt-cache cost</h1>"
        f'<p class="total">{len(items)} conversation(s): <b data-figure="total_usd"'
        f' data-value="{total}">{escape(money(total))}</b> ({escape(money(without))} without'
        " the cache). Prices are list prices as checked on the date shown (or the project's);"
        " tokens are estimates; provider-side eviction and routing are not known.</p>"
        + "".join(sections),
    )
