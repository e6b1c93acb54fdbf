"""Each session's figures, for a whole batch at once (Arrow's group-by; no Python per request).

`session_figures(table, findings, not_judged, schema)`: per session (the batch sorted by session
and time), its requests, its deploy (its first request's that names one), its first time, its
counters (input and cache-read tokens over the requests that reported them), whether it was
grouped, its format, the requests not judged, and from the findings the tokens and dollars lost
and its status (`broken` when a finding is an error). `provider_hit_rate` is the cache reads over
the input the provider reported; `stable_hit_rate` adds the tokens the breaks lost (what stable
headers would have read); both null without counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.scan._extras import pyarrow, pyarrow_compute

__all__ = ["session_figures"]


def _rate(numerator: int, denominator: int) -> float | None:
    return round(min(numerator / denominator, 1.0), 4) if denominator else None


def session_figures(
    table: Any, findings: Sequence[dict[str, Any]], not_judged: np.ndarray[Any, Any], schema: Any
) -> Any:
    pa, pc = pyarrow(), pyarrow_compute()
    counted = pc.is_valid(table["input_tokens"])
    read = pc.if_else(counted, pc.fill_null(table["cache_read"], 0), None)
    work = pa.table(
        {
            "session": table["session"],
            "one": pa.array(np.ones(table.num_rows, dtype=np.int64)),
            "input_tokens": table["input_tokens"],
            "read": read,
            "counted": pc.cast(counted, pa.int64()),
            "deploy": table["deploy"],
            "time": table["time"],
            "grouped": table["grouped"],
            "format": table["format"],
            "not_judged": pa.array(not_judged),
        }
    )
    first = pc.ScalarAggregateOptions(skip_nulls=True)
    grouped = work.group_by("session", use_threads=False).aggregate(
        [
            ("one", "sum"),
            ("input_tokens", "sum"),
            ("read", "sum"),
            ("counted", "sum"),
            ("deploy", "first", first),
            ("time", "min"),
            ("grouped", "first"),
            ("format", "first"),
            ("not_judged", "sum"),
        ]
    )
    lost: dict[str, tuple[int, float, bool]] = {}
    for f in findings:
        tokens, usd, broken = lost.get(f["session"], (0, 0.0, False))
        lost[f["session"]] = (
            tokens + (f["tokens_lost"] or 0),
            usd + (f["usd_lost"] or 0.0),
            broken or f["severity"] == "error",
        )
    rows = []
    for g in grouped.to_pylist():
        tokens, usd, broken = lost.get(g["session"], (0, 0.0, False))
        total = g["input_tokens_sum"] or 0 if g["counted_sum"] else 0
        reads = g["read_sum"] or 0
        rows.append(
            {
                "session": g["session"],
                "requests": g["one_sum"],
                "deploy": g["deploy_first"],
                "status": "broken" if broken else "stable",
                "provider_hit_rate": _rate(reads, total),
                "stable_hit_rate": _rate(reads + tokens, total),
                "grouped": bool(g["grouped_first"]),
                "first_time": g["time_min"],
                "input_tokens": total if g["counted_sum"] else None,
                "cache_read": reads if g["counted_sum"] else None,
                "tokens_lost": tokens,
                "usd_lost": round(usd, 6),
                "not_judged": g["not_judged_sum"],
                "format": g["format_first"],
            }
        )
    return pa.Table.from_pylist(rows, schema=schema)
