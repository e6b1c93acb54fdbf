"""A scan's result as text (the terminal) and Markdown (a pull-request comment or a step
summary). Every line is the printer's (`harness._shared._printer.line`: redacted, one line,
bounded): what a trace holds never reaches the output otherwise.
"""

from __future__ import annotations

from typing import Final

from harness._shared import _formats
from harness._shared._formats import code
from harness._shared._printer import line
from harness.scan._result import Finding, ScanResult

__all__ = ["markdown", "text"]

_SHOWN: Final = 50  # findings listed in text and Markdown; --format json lists them all
_NAME: Final = 160


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _where(f: Finding) -> str:
    place = f" at {line(f.pointer, _NAME)}" if f.pointer else ""
    byte = f", byte {f.byte:,}" if f.byte is not None else ""
    return place + byte


def _headline(found: ScanResult) -> str:
    t = found.totals
    formats = ", ".join(f"{name} {count:,}" for name, count in t.formats.items())
    return (
        f"harness scan: {t.requests:,} request(s) in {t.sessions:,} session(s) ({formats});"
        f" {t.sessions_broken:,} session(s) broken; {t.findings:,} finding(s) ({t.errors:,}"
        f" error(s), {t.warnings:,} warning(s)); lost ~{t.tokens_lost:,} tokens"
        f" ({_usd(t.usd_lost)}); hit rate: provider {_pct(t.provider_hit_rate)}, with stable"
        f" headers {_pct(t.stable_hit_rate)}; {t.requests_not_judged:,} request(s) not judged"
    )


def text(found: ScanResult) -> str:
    lines = [_headline(found)]
    for f in found.findings[:_SHOWN]:
        deploy = f"; deploy {line(f.deploy, _NAME)}" if f.deploy else ""
        ident = f" ({line(f.request_id, _NAME)})" if f.request_id else ""
        tokens = f"~{f.tokens_lost:,} tokens" if f.tokens_lost is not None else "tokens unknown"
        lines.append(
            f"{line(f.session, _NAME)} request {f.request}{ident}: {f.severity} {f.verdict}"
            f" [{f.evidence}] {f.block}{_where(f)}; {tokens} ({_usd(f.usd_lost)}){deploy}"
        )
        lines.append(f"  {line(f.summary, 400)}")
        lines.append(f"  source: {line(f.source, 300)}")
    if len(found.findings) > _SHOWN:
        lines.append(f"... and {len(found.findings) - _SHOWN:,} more (--format json lists all)")
    for verdict, first in found.introduced_by.items():
        if first:
            lines.append(f"introduced by: {verdict} first in deploy {line(first, _NAME)}")
        else:
            lines.append(f"introduced by: {verdict}: no deploy known (--deploy-key KEY)")
    if found.totals.malformed:
        lines.append(f"{found.totals.malformed:,} malformed record(s) skipped:")
        lines += [f"  {line(name, 400)}" for name in found.malformed]
        if found.totals.malformed > len(found.malformed):
            lines.append(f"  ... and {found.totals.malformed - len(found.malformed):,} more")
    if found.totals.outside_window:
        lines.append(f"{found.totals.outside_window:,} request(s) outside --since/--until")
    lines += [line(note, 400) for note in found.notes]
    return "\n".join(lines)


def markdown(found: ScanResult) -> str:
    t = found.totals
    lines = [
        "## harness scan",
        "",
        _formats.text(_headline(found), 1000),
        "",
    ]
    if found.findings:
        lines += [
            "| session | request | verdict | evidence | block | where | tokens lost | USD lost |"
            " deploy |",
            "|---|---:|---|---|---|---|---:|---:|---|",
        ]
        for f in found.findings[:_SHOWN]:
            cells = [  # a session id, a pointer, a deploy come from the traces: shown inert
                code(f.session, _NAME, cell=True),
                str(f.request),
                f"**{line(f.verdict, _NAME)}** ({f.severity})",  # the harness's words
                line(f.evidence, _NAME),
                line(f.block, _NAME),
                code(_where(f).removeprefix(" at "), _NAME, cell=True) if _where(f) else "",
                "" if f.tokens_lost is None else f"{f.tokens_lost:,}",
                _usd(f.usd_lost),
                code(f.deploy, _NAME, cell=True) if f.deploy else "",
            ]
            lines.append("| " + " | ".join(cells) + " |")
        if len(found.findings) > _SHOWN:
            lines.append(f"\n{len(found.findings) - _SHOWN:,} more findings: `--format json`.")
    if found.introduced_by:
        lines += ["", "| verdict | first deploy |", "|---|---|"]
        lines += [
            f"| {line(v, _NAME)} | {code(d, _NAME, cell=True) if d else 'unknown'} |"
            for v, d in found.introduced_by.items()
        ]
    if t.malformed:
        lines += ["", f"{t.malformed:,} malformed record(s) skipped."]
    lines += ["", *[_formats.text(note, 400) for note in found.notes]]
    return "\n".join(lines).rstrip() + "\n"
