"""The one judge: a batch of whole sessions in (an Arrow table), findings and sessions out.

This module is the scan's only door to the cache model the gate, `harness lint` and `harness
cost` share: the prefix-chain gate (`harness.capture._prefix.prefix_chain`, its `PrefixBreak`:
verdict, block, severity, the drift report's pointer and byte offset, the bytes lost), a request
as the rules read it (`harness.rules.LintRequest`), the rules pack (TTLs), the token estimate and
the price rows `harness cost` prices with. When the cache model changes, this module changes and
nothing else in `harness/scan/` does.

`judge(table)` is a pure function of its input (both engines call it, DuckDB on the batches it
streams, Dask in `map_partitions` after a shuffle by session):
1. the digest tier (`harness.scan._tier.plan`) clears every request that holds the bytes of the
   one before it, for the whole batch at once;
2. each request it could not clear is judged by the cache model against the requests it may
   continue, on their bytes (the `body` column, filled for those rows only by
   `harness.scan._bytes.attach`): a break is a finding with the model's verdict; no bytes (a
   digest table, a record that could not be read again) is a finding from the digests, evidence
   `digest`;
3. a request the provider's counters say missed the cache, where the bytes (or their absence)
   cannot explain it, is an `unexplained_miss` (evidence `counters`, severity `warning`).
Tokens lost are the break's bytes lost at the request's own tokens-per-byte (from its counters,
else bytes / 4); dollars lost are those tokens at the price row's input price less its
cache-read price.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import msgspec
import numpy as np

# The rules before the cost model: harness.cost._simulate and harness.rules import each other's
# modules, and only this order initialises both (the CLI imports them so too).
import harness.rules  # noqa: F401
from harness._shared._printer import line
from harness._shared._views import prompt_size
from harness.capture._prefix import PrefixBreak, prefix_chain
from harness.cost._prices import price_for
from harness.cost._simulate import ttl_seconds
from harness.drift._structured import without_structured_diff
from harness.drift._wording import BYTES_PER_TOKEN
from harness.providers._pack import Ttl, rules_pack
from harness.rules._analysis import LintRequest
from harness.rules._tokens import PLAUSIBLE
from harness.scan._digest import BLOCKS
from harness.scan._extras import pyarrow, pyarrow_compute
from harness.scan._figures import session_figures
from harness.scan._tier import Pair, Plan, plan, wanted

__all__ = ["FINDING_COLUMNS", "SESSION_COLUMNS", "UNEXPLAINED", "Judged", "judge", "table_schema"]

UNEXPLAINED: Final = "unexplained_miss"
_SUMMARY: Final = 300  # characters of a finding's summary (redacted, one line)
FINDING_COLUMNS: Final = {
    "session": "string",
    "request": "int64",
    "request_id": "string",
    "block": "string",
    "verdict": "string",
    "evidence": "string",
    "deploy": "string",
    "severity": "string",
    "tokens_lost": "int64",
    "usd_lost": "float64",
    "pointer": "string",
    "byte": "int64",
    "summary": "string",
    "source": "string",
    "time": "float64",
}
SESSION_COLUMNS: Final = {
    "session": "string",
    "requests": "int64",
    "deploy": "string",
    "status": "string",
    "provider_hit_rate": "float64",
    "stable_hit_rate": "float64",
    "grouped": "bool",
    "first_time": "float64",
    "input_tokens": "int64",
    "cache_read": "int64",
    "tokens_lost": "int64",
    "usd_lost": "float64",
    "not_judged": "int64",
    "format": "string",
}


class Judged(NamedTuple):
    findings: Any  # pa.Table, FINDING_COLUMNS
    sessions: Any  # pa.Table, SESSION_COLUMNS


def table_schema(columns: dict[str, str]) -> Any:
    pa = pyarrow()
    kinds = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
    }
    return pa.schema([(name, kinds[kind]) for name, kind in columns.items()])


def _ttls() -> dict[str, float]:
    """Each provider's default TTL in seconds, from the rules pack."""
    found: dict[str, float] = {}
    for row in rules_pack().rows:
        if isinstance(row, Ttl):
            seconds = ttl_seconds(row.default)
            for provider in row.providers:
                if seconds is not None:
                    found.setdefault(provider, seconds)
    return found


def judge(table: Any, fetch: Callable[[Any, Any], Any] | None = None) -> Judged:
    """Findings and session figures for a batch of whole sessions (see the module doc). With
    `fetch(table, rows)`, the rows whose bytes the digests could not spare are filled in first
    (the engines pass `harness.scan._bytes.attach`); without it, the table's `body` column is
    what there is."""
    found = plan(table, _ttls())
    if fetch is not None:
        found.table = fetch(found.table, wanted(found))
    t = found.table
    cols = _Columns(t)
    findings: list[dict[str, Any]] = []
    not_judged = np.zeros(t.num_rows, dtype=np.int64)
    for pair in found.pairs:
        if pair.context:
            findings += _pair(found, pair, cols, not_judged)
    for row in np.flatnonzero(found.miss).tolist():
        findings.append(_miss(found, row, cols))
    counted = pyarrow_compute().is_valid(t["input_tokens"]).to_numpy(zero_copy_only=False)
    not_judged += (~found.has & ~counted).astype(np.int64)
    findings.sort(key=lambda f: (f["session"], f["request"], f["verdict"]))
    pa = pyarrow()
    return Judged(
        pa.Table.from_pylist(findings, schema=table_schema(FINDING_COLUMNS)),
        session_figures(t, findings, not_judged, table_schema(SESSION_COLUMNS)),
    )


class _Column:
    """One column, read a row at a time (the judge looks at the few rows of its pairs)."""

    def __init__(self, column: Any) -> None:
        self._array = column.combine_chunks() if hasattr(column, "combine_chunks") else column

    def __getitem__(self, row: int) -> Any:
        return self._array[row].as_py()


class _Columns:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._found: dict[str, _Column] = {}

    def __getitem__(self, name: str) -> _Column:
        if name not in self._found:
            self._found[name] = _Column(self._table[name])
        return self._found[name]


def _finding(found: Plan, row: int, cols: _Columns, **fields: Any) -> dict[str, Any]:
    return {
        "session": cols["session"][row],
        "request": int(found.place[row]),
        "request_id": cols["request_id"][row],
        "deploy": cols["deploy"][row],
        "source": cols["source"][row],
        "time": cols["time"][row],
        "pointer": None,
        "byte": None,
        **fields,
    }


def _request(row: int, found: Plan, cols: _Columns) -> LintRequest | None:
    body = cols["body"][row]
    if body is None:
        return None
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if not isinstance(decoded, dict):
        return None
    endpoint = cols["endpoint"][row] or ""
    url = f"https://{endpoint}" if "/" in endpoint else None
    return LintRequest(int(found.place[row]) - 1, decoded, url=url)


def _evidence(rows: Sequence[int], cols: _Columns) -> str:
    if any(cols["truncated"][r] for r in rows):
        return "digest"
    if any(cols["evidence"][r] == "structural" for r in rows):
        return "structural"
    return "exact"


def _pair(
    found: Plan, pair: Pair, cols: _Columns, not_judged: np.ndarray[Any, Any]
) -> list[dict[str, Any]]:
    rows = [*pair.context, pair.row]
    requests = [_request(row, found, cols) for row in rows]
    if any(request is None for request in requests):
        return [_from_digests(found, pair, cols)]
    if requests[-1] is None or requests[-1].split is None:
        not_judged[pair.row] += 1
        return []
    with without_structured_diff():  # the scan prints no deepdiff: most of a break's cost
        chain = prefix_chain(requests)
    number = int(found.place[pair.row])
    broken = [b for b in (*chain.breaks, *chain.warnings) if b.index == number]
    if not broken:
        return [_miss(found, pair.row, cols)] if _missed(found, pair, cols) else []
    return [_from_break(found, pair, cols, broken[0], requests[-1], rows)]


def _from_break(
    found: Plan,
    pair: Pair,
    cols: _Columns,
    item: PrefixBreak,
    request: LintRequest,
    rows: Sequence[int],
) -> dict[str, Any]:
    row = pair.row
    split = request.split
    size = prompt_size(split.view) if split is not None else 0
    total = cols["input_tokens"][row]
    ratio = 1 / BYTES_PER_TOKEN
    if total and size and PLAUSIBLE[0] <= size / total <= PLAUSIBLE[1]:
        ratio = total / size
    tokens = round(item.bytes_lost * ratio)
    provider = split.provider if split is not None else cols["provider"][row]
    report = item.report
    return _finding(
        found,
        row,
        cols,
        block=item.block,
        verdict=item.verdict,
        evidence=_evidence([row, int(found.starts[row]) + item.previous - 1], cols),
        severity=item.severity,
        tokens_lost=tokens,
        usd_lost=_usd(
            tokens, provider, cols["model"][row] or request.body.get("model"), cols["time"][row]
        ),
        pointer=line(report.pointer, _SUMMARY) if report.pointer else None,
        byte=report.offset if report.offset >= 0 else None,
        summary=line(_head(item), _SUMMARY),
    )


def _head(item: PrefixBreak) -> str:
    """The break in one sentence (the gate's first line, without building the printed report,
    which the scan never shows)."""
    where = f" at {item.report.raw_pointer}" if item.report.raw_pointer else ""
    return (
        f"{item.verdict}: request {item.index} does not extend request {item.previous}'s"
        f" cacheable prefix: the {item.block} block broke first{where}; {item.bytes_lost:,} of"
        f" {item.prefix_bytes:,} prefix bytes lost"
    )


def _from_digests(found: Plan, pair: Pair, cols: _Columns) -> dict[str, Any]:
    """No bytes to read again: the first block whose digest differs, in cache order."""
    row, before = pair.row, max(pair.context)
    block = "messages"
    for name, column in zip(BLOCKS[:3], ("d_settings", "d_tools", "d_system"), strict=True):
        if cols[column][row] != cols[column][before]:
            block = name
            break
    tokens = _cached(before, cols)
    return _finding(
        found,
        row,
        cols,
        block=block,
        verdict=f"{block}_changed",
        evidence="digest",
        severity="error",
        tokens_lost=tokens,
        usd_lost=_usd(tokens, cols["provider"][row], cols["model"][row], cols["time"][row]),
        summary=line(
            f"{block}_changed: request {int(found.place[row])} does not extend request"
            f" {int(found.place[before])}: the {block} digests differ (no bytes to compare)",
            _SUMMARY,
        ),
    )


def _cached(row: int, cols: _Columns) -> int | None:
    read, write = cols["cache_read"][row], cols["cache_write"][row]
    if read is None and write is None:
        return None
    return (read or 0) + (write or 0)


def _missed(found: Plan, pair: Pair, cols: _Columns) -> bool:
    row = pair.row
    before = row - 1
    return (
        cols["cache_read"][row] == 0
        and (_cached(before, cols) or 0) > 0
        and bool(found.starts[row] == found.starts[before])
    )


def _miss(found: Plan, row: int, cols: _Columns) -> dict[str, Any]:
    expected = _cached(row - 1, cols) or 0
    total = cols["input_tokens"][row]
    tokens = min(expected, total) if total is not None else expected
    return _finding(
        found,
        row,
        cols,
        block="messages",
        verdict=UNEXPLAINED,
        evidence="counters",
        severity="warning",
        tokens_lost=tokens,
        usd_lost=_usd(tokens, cols["provider"][row], cols["model"][row], cols["time"][row]),
        summary=line(
            f"{UNEXPLAINED}: request {int(found.place[row])} read 0 cached tokens where request"
            f" {int(found.place[row]) - 1} had {expected:,} cached, and the bytes the trace holds"
            " do not explain it (an eviction, a routing change, a prefix under the minimum, or"
            " content the trace does not hold)",
            _SUMMARY,
        ),
    )


def _usd(tokens: int | None, provider: Any, model: Any, time: Any) -> float | None:
    if tokens is None or not isinstance(provider, str):
        return None
    day = datetime.datetime.fromtimestamp(time, datetime.UTC).date() if time else None
    price = price_for(provider, model if isinstance(model, str) else None, day)
    if price is None:
        return None
    return round(tokens * max(price.input - price.cache_read, 0.0) / 1_000_000, 6)
