"""What a scan found, as one value: the findings, the sessions, which deploy introduced each
verdict, and the totals; `harness scan --format json` prints it.

`result(judged, tally)` gathers the judge's tables from either engine and orders everything
(findings by session, request and verdict; sessions by name), so the same input gives the same
bytes whatever the engine or its partitions. The JSON is one object: `findings`, `sessions`,
`introduced_by`, `totals`, and `malformed` (the first records that could not be read, named) and
`notes` (what the reader should know: grouped sessions, files no reader claimed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from harness.scan._judge import Judged
from harness.scan._read import Tally

__all__ = ["Finding", "ScanResult", "SessionFigures", "Totals", "result"]


class Finding(msgspec.Struct, frozen=True):
    session: str
    request: int
    request_id: str | None
    block: str
    verdict: str
    evidence: str
    deploy: str | None
    severity: str
    tokens_lost: int | None
    usd_lost: float | None
    pointer: str | None
    byte: int | None
    summary: str
    source: str


class SessionFigures(msgspec.Struct, frozen=True):
    session: str
    requests: int
    deploy: str | None
    status: str
    provider_hit_rate: float | None
    stable_hit_rate: float | None
    grouped: bool
    requests_not_judged: int


class Totals(msgspec.Struct, frozen=True):
    requests: int
    requests_not_judged: int
    sessions: int
    sessions_broken: int
    sessions_grouped: int
    findings: int
    errors: int
    warnings: int
    tokens_lost: int
    usd_lost: float
    provider_hit_rate: float | None
    stable_hit_rate: float | None
    malformed: int
    outside_window: int
    formats: dict[str, int]


class ScanResult(msgspec.Struct, frozen=True):
    findings: list[Finding]
    sessions: list[SessionFigures]
    introduced_by: dict[str, str | None]
    totals: Totals
    malformed: list[str]
    notes: list[str]


def _rate(numerator: int, denominator: int) -> float | None:
    return round(min(numerator / denominator, 1.0), 4) if denominator else None


def result(judged: Iterable[Judged], tally: Tally) -> ScanResult:
    findings: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    for part in judged:
        findings += part.findings.to_pylist()
        sessions += part.sessions.to_pylist()
    findings.sort(key=lambda f: (f["session"], f["request"], f["verdict"]))
    sessions.sort(key=lambda s: s["session"])
    counted = [s for s in sessions if s["input_tokens"] is not None]
    total_input = sum(s["input_tokens"] for s in counted)
    read = sum(s["cache_read"] or 0 for s in counted)
    lost = sum(s["tokens_lost"] for s in counted)
    notes = []
    if tally.grouped:
        notes.append(
            f"{tally.grouped:,} request(s) had no session id: grouped by endpoint and their"
            " conversation's opening message (sessions named ~ENDPOINT DIGEST)"
        )
    notes += [f"{path}: no reader recognises this file; skipped" for path in tally.unknown]
    totals = Totals(
        requests=sum(s["requests"] for s in sessions),
        requests_not_judged=sum(s["not_judged"] for s in sessions),
        sessions=len(sessions),
        sessions_broken=sum(1 for s in sessions if s["status"] == "broken"),
        sessions_grouped=sum(1 for s in sessions if s["grouped"]),
        findings=len(findings),
        errors=sum(1 for f in findings if f["severity"] == "error"),
        warnings=sum(1 for f in findings if f["severity"] == "warning"),
        tokens_lost=sum(f["tokens_lost"] or 0 for f in findings),
        usd_lost=round(sum(f["usd_lost"] or 0.0 for f in findings), 6),
        provider_hit_rate=_rate(read, total_input),
        stable_hit_rate=_rate(read + lost, total_input),
        malformed=tally.malformed,
        outside_window=tally.outside,
        formats=dict(sorted(tally.formats.items())),
    )
    return ScanResult(
        findings=[
            Finding(**{k: v for k, v in f.items() if k in Finding.__struct_fields__})
            for f in findings
        ],
        sessions=[
            SessionFigures(
                session=s["session"],
                requests=s["requests"],
                deploy=s["deploy"],
                status=s["status"],
                provider_hit_rate=s["provider_hit_rate"],
                stable_hit_rate=s["stable_hit_rate"],
                grouped=s["grouped"],
                requests_not_judged=s["not_judged"],
            )
            for s in sessions
        ],
        introduced_by=_introduced_by(findings, sessions),
        totals=totals,
        malformed=list(tally.named),
        notes=notes,
    )


def _introduced_by(
    findings: list[dict[str, Any]], sessions: list[dict[str, Any]]
) -> dict[str, str | None]:
    """Each verdict's first deploy: of the deploys whose sessions show it, the one seen first
    in the traces (its earliest request; by name when no time is known)."""
    first_seen: dict[str, tuple[float, str]] = {}
    for s in sessions:
        if s["deploy"] is None:
            continue
        when = s["first_time"] if s["first_time"] is not None else float("inf")
        known = first_seen.get(s["deploy"])
        if known is None or when < known[0]:
            first_seen[s["deploy"]] = (when, s["deploy"])
    deploy_of = {s["session"]: s["deploy"] for s in sessions}
    shown: dict[str, set[str]] = {}
    for f in findings:
        deploy = f["deploy"] or deploy_of.get(f["session"])
        found = shown.setdefault(f["verdict"], set())
        if deploy is not None:
            found.add(deploy)
    return {
        verdict: min(deploys, key=lambda d: first_seen.get(d, (float("inf"), d)))
        if deploys
        else None
        for verdict, deploys in sorted(shown.items())
    }
