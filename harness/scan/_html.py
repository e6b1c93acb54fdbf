"""`harness scan --html FILE`: the scan on `harness report`'s page (`harness.cost._html.page`:
one self-contained file, inline CSS, no script, nothing fetched).

The page holds the totals (`data-figure` attributes carry the raw numbers, so a test reads the
DOM), the findings (verdict, evidence, place, tokens and dollars lost, deploy), which deploy
introduced each verdict, and the sessions, broken first. Every text is the printer's (redacted,
one line, bounded) and then HTML-escaped.
"""

from __future__ import annotations

from html import escape
from typing import Final

# The rules before the cost model (their modules import each other; see harness.scan._judge).
import harness.rules  # noqa: F401
from harness.cost._html import escaped, page
from harness.scan._result import ScanResult

__all__ = ["render_html"]

_ROWS: Final = 500  # findings and sessions shown; the JSON has them all


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _figures(found: ScanResult) -> str:
    t = found.totals
    figures = [
        ("requests", f"{t.requests:,}", t.requests),
        ("sessions", f"{t.sessions:,}", t.sessions),
        ("sessions_broken", f"{t.sessions_broken:,}", t.sessions_broken),
        ("findings", f"{t.findings:,}", t.findings),
        ("tokens_lost", f"{t.tokens_lost:,}", t.tokens_lost),
        ("usd_lost", _usd(t.usd_lost), t.usd_lost),
        ("provider_hit_rate", _pct(t.provider_hit_rate), t.provider_hit_rate),
        ("stable_hit_rate", _pct(t.stable_hit_rate), t.stable_hit_rate),
        ("requests_not_judged", f"{t.requests_not_judged:,}", t.requests_not_judged),
    ]
    return (
        '<div class="figures">'
        + "".join(
            f'<span>{name.replace("_", " ")}: <b data-figure="{name}"'
            f' data-value="{"" if value is None else value}">{escape(shown)}</b></span>'
            for name, shown, value in figures
        )
        + "</div>"
    )


def _findings(found: ScanResult) -> str:
    if not found.findings:
        return "<p>No finding: every request kept its session's cached prefix.</p>"
    rows = "".join(
        f'<tr class="{escape(f.severity)}" data-verdict="{escaped(f.verdict, 80)}">'
        f'<td>{escaped(f.session, 120)}</td><td class="num">{f.request}</td>'
        f"<td><code>{escaped(f.verdict, 80)}</code></td><td>{escape(f.evidence)}</td>"
        f"<td>{escape(f.block)}</td><td><code>{escaped(f.pointer or '', 120)}</code>"
        f"{'' if f.byte is None else f' byte {f.byte:,}'}</td>"
        f'<td class="num">{"" if f.tokens_lost is None else f"{f.tokens_lost:,}"}</td>'
        f'<td class="num">{escape(_usd(f.usd_lost))}</td><td>{escaped(f.deploy or "", 80)}</td>'
        f"<td>{escaped(f.summary, 300)}</td></tr>"
        for f in found.findings[:_ROWS]
    )
    more = (
        f"<p>{len(found.findings) - _ROWS:,} more findings: --format json lists them all.</p>"
        if len(found.findings) > _ROWS
        else ""
    )
    return (
        '<table class="findings"><tr><th>session</th><th>request</th><th>verdict</th>'
        "<th>evidence</th><th>block</th><th>where</th><th>tokens lost</th><th>USD lost</th>"
        f"<th>deploy</th><th>what</th></tr>{rows}</table>{more}"
    )


def _introduced(found: ScanResult) -> str:
    if not found.introduced_by:
        return ""
    rows = "".join(
        f"<tr><td><code>{escaped(v, 80)}</code></td><td>{escaped(d or 'unknown', 120)}</td></tr>"
        for v, d in found.introduced_by.items()
    )
    return (
        '<h2>Introduced by</h2><table class="introduced"><tr><th>verdict</th>'
        f"<th>first deploy</th></tr>{rows}</table>"
    )


def _sessions(found: ScanResult) -> str:
    ordered = sorted(found.sessions, key=lambda s: (s.status != "broken", s.session))
    rows = "".join(
        f'<tr class="{"error" if s.status == "broken" else ""}"><td>{escaped(s.session, 120)}</td>'
        f'<td class="num">{s.requests}</td><td>{escape(s.status)}</td>'
        f'<td>{escaped(s.deploy or "", 80)}</td><td class="num">{_pct(s.provider_hit_rate)}</td>'
        f'<td class="num">{_pct(s.stable_hit_rate)}</td></tr>'
        for s in ordered[:_ROWS]
    )
    return (
        '<h2>Sessions</h2><table class="sessions"><tr><th>session</th><th>requests</th>'
        "<th>status</th><th>deploy</th><th>provider hit rate</th><th>stable hit rate</th></tr>"
        f"{rows}</table>"
    )


def render_html(found: ScanResult) -> str:
    notes = "".join(f"<p>{escaped(note)}</p>" for note in found.notes)
    malformed = (
        f"<p>{found.totals.malformed:,} malformed record(s) skipped: "
        + "; ".join(escaped(name, 200) for name in found.malformed)
        + "</p>"
        if found.totals.malformed
        else ""
    )
    return page(
        "harness scan: production traces",
        "<h1>Prompt-cache breaks in production traces</h1>"
        + _figures(found)
        + "<h2>Findings</h2>"
        + _findings(found)
        + _introduced(found)
        + _sessions(found)
        + malformed
        + notes
        + "<p>Evidence: exact (the provider's body), structural (a converted or key-sorted"
        " body), digest (only digests or a truncated string differ), counters (only the"
        " provider's counters show the miss). Tokens are estimates where the trace holds no"
        " counters; prices are the price rows harness cost uses.</p>",
    )
