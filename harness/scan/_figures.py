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
        was_lost, was_usd, was_broken = lost.get(f["session"], (0, 0.0, False))
        lost[f["session"]] = (
            was_lost + (f["tokens_lost"] or 0),
            was_usd + (f["usd_lost"] or 0.0),
            was_broken or f["severity"] == "error",
        )
    names = grouped["session"].to_pylist()
    counted = np.asarray(grouped["counted_sum"].to_numpy(zero_copy_only=False), dtype=np.int64) > 0
    total = np.where(counted, _ints(grouped["input_tokens_sum"]), 0)
    reads = _ints(grouped["read_sum"])
    tokens = np.array([lost.get(name, (0, 0.0, False))[0] for name in names], dtype=np.int64)
    usd = [round(lost.get(name, (0, 0.0, False))[1], 6) for name in names]
    broken = [lost.get(name, (0, 0.0, False))[2] for name in names]
    return pa.table(
        {
            "session": grouped["session"],
            "requests": grouped["one_sum"],
            "deploy": grouped["deploy_first"],
            "status": pa.array(["broken" if b else "stable" for b in broken], pa.string()),
            "provider_hit_rate": _rates(reads, total),
            "stable_hit_rate": _rates(reads + tokens, total),
            "grouped": pc.fill_null(grouped["grouped_first"], False),
            "first_time": grouped["time_min"],
            "input_tokens": pa.array(total, mask=~counted),
            "cache_read": pa.array(reads, mask=~counted),
            "tokens_lost": pa.array(tokens),
            "usd_lost": pa.array(usd, pa.float64()),
            "not_judged": grouped["not_judged_sum"],
            "format": grouped["format_first"],
        }
    ).cast(schema)


def _ints(column: Any) -> np.ndarray[Any, Any]:
    """A summed column as integers, a null (nothing to sum) as 0."""
    values = pyarrow_compute().fill_null(column, 0).to_numpy(zero_copy_only=False)
    found: np.ndarray[Any, Any] = np.asarray(values, dtype=np.int64)
    return found


def _rates(numerator: np.ndarray[Any, Any], denominator: np.ndarray[Any, Any]) -> Any:
    """Each session's rate, at most 1 and rounded to 4 places (as Python rounds), null where
    nothing was counted."""
    pa = pyarrow()
    known = denominator > 0
    ratio = np.minimum(numerator / np.where(known, denominator, 1), 1.0)
    return pa.array(
        [round(float(r), 4) if k else None for r, k in zip(ratio, known, strict=True)],
        pa.float64(),
    )
