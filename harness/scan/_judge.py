"""The one judge: a batch of whole sessions in (an Arrow table), findings and sessions out.

This module is the scan's only door to the cache model the gate, `harness lint`, `harness diff`
and `harness cost` share (`harness.cache`): which request continues which (`_links.walk`), the one
verdict on a link (`_verdict.judge`: the word, block, pointer, byte offset and the cache model's
`Loss`, nothing lost where nothing was cached), the gate's severity and words
(`harness.capture._prefix.PrefixBreak`), the rules pack (TTLs) and the price rows `harness cost`
prices with. When the cache model changes, this module changes and nothing else in
`harness/scan/` does.

`judge(table)` is a pure function of its input (both engines call it, DuckDB on the batches it
streams, Dask in `map_partitions` after a shuffle by session):
1. the digest tier (`harness.scan._tier.plan`) clears every request that holds the bytes of the
   one before it, for the whole batch at once;
2. each request it could not clear is linked and judged by the cache model (`walk` over the
   earlier requests of its session the tier names, the ones the gate's own walk could pick, then
   `judge` of the link), on their bytes (the `body` column, filled for those rows only by
   `harness.scan._bytes.attach`): a break is a finding with the model's verdict; no bytes (a
   digest table, a record that could not be read again) is a finding from the digests, evidence
   `digest`;
3. a request the provider's counters say missed the cache, where the bytes (or their absence)
   cannot explain it, is an `unexplained_miss` (evidence `counters`, severity `warning`).
Tokens lost are the cache model's `Loss` (the earlier request's written entries the later one can
no longer read: 0 where nothing was cached, null where the rules cannot say), estimated as `harness
lint` estimates them: the trace's counters reach the cache model as the response usage lint would
read (`_USAGE`, a shape used only when the provider reads it back to the same counters); dollars
lost are those tokens at the price row's input price less its cache-read price.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import msgspec
import numpy as np

from harness._shared._printer import line
from harness.cache._analysis import LintRequest
from harness.cache._links import walk
from harness.cache._replay import ttl_seconds
from harness.cache._verdict import judge as judge_link
from harness.capture._prefix import PrefixBreak
from harness.cost._prices import price_for
from harness.drift._structured import without_structured_diff
from harness.providers import cache_usage
from harness.providers._pack import Ttl, rules_pack
from harness.scan._digest import BLOCKS
from harness.scan._extras import pyarrow, pyarrow_compute
from harness.scan._figures import session_figures
from harness.scan._tier import Pair, Plan, plan, wanted

__all__ = [
    "FINDING_COLUMNS",
    "SESSION_COLUMNS",
    "UNEXPLAINED",
    "Judged",
    "forget_prices",
    "judge",
    "table_schema",
]

UNEXPLAINED: Final = "unexplained_miss"
_SUMMARY: Final = 300  # characters of a finding's summary (redacted, one line)
_BLOCK_NAMES: Final = frozenset(BLOCKS)
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


def judge(
    table: Any, fetch: Callable[[Any, Any], Any] | None = None, *, full: bool = False
) -> Judged:
    """Findings and session figures for a batch of whole sessions (see the module doc). With
    `fetch(table, rows)`, the rows whose bytes the digests could not spare are filled in first
    (the engines pass `harness.scan._bytes.attach`); without it, the table's `body` column is
    what there is. `full` skips the digest tier (`harness.scan._tier.plan`'s `full`): every
    request is judged on its bytes, the reference the tier must agree with."""
    found = plan(table, _ttls(), full=full)
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
    request = LintRequest(int(found.place[row]) - 1, decoded, url=url)
    response = _response(
        request, cols["input_tokens"][row], cols["cache_read"][row], cols["cache_write"][row]
    )
    if response is not None:  # the counters, as `harness lint` reads them in a response
        request = LintRequest(
            request.index, decoded, url=url, response=response, split=request.split, presplit=True
        )
    return request


# The usage a response reports, in each API's shape: the trace's counters are handed to the cache
# model as the response `harness lint` would read, so its estimates (and what it says was cached)
# are the ones lint makes. A shape is used only when the provider reads it back to the same
# counters. Arguments: all input tokens, cache reads, cache writes.
_USAGE: Final[tuple[Callable[[int, int, int], dict[str, Any]], ...]] = (
    lambda total, read, write: {  # Anthropic's Messages API (uncached input apart)
        "usage": {
            "input_tokens": total - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }
    },
    lambda total, read, write: {  # Bedrock's Converse
        "usage": {
            "inputTokens": total - read - write,
            "cacheReadInputTokens": read,
            "cacheWriteInputTokens": write,
        }
    },
    lambda total, read, write: {  # OpenAI's Chat Completions
        "usage": {"prompt_tokens": total, "prompt_tokens_details": {"cached_tokens": read}}
    },
    lambda total, read, write: {  # OpenAI's Responses
        "usage": {"input_tokens": total, "input_tokens_details": {"cached_tokens": read}}
    },
    lambda total, read, write: {  # Gemini
        "usageMetadata": {"promptTokenCount": total, "cachedContentTokenCount": read}
    },
    lambda total, read, write: {  # DeepSeek
        "usage": {"prompt_cache_hit_tokens": read, "prompt_cache_miss_tokens": total - read}
    },
)


def _response(
    request: LintRequest, total: int | None, read: int | None, write: int | None
) -> dict[str, Any] | None:
    if request.split is None or total is None or total <= 0:
        return None
    read, write = read or 0, write or 0
    if read + write > total:
        return None
    for shape in _USAGE:
        response = shape(total, read, write)
        found = cache_usage(request.split.provider, response)
        if (
            found is not None
            and found.read_tokens == read
            and found.written_tokens == write
            and found.read_tokens + found.written_tokens + (found.uncached_tokens or 0) == total
        ):
            return response
    return None


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
    link, previous = list(walk(requests))[-1]  # the gate's walk: the last is this request's
    if link is None:
        not_judged[pair.row] += 1  # no provider claims it
        return []
    if previous is None:
        return []  # it starts a conversation: nothing earlier to keep
    with without_structured_diff():  # the scan prints no deepdiff: most of a break's cost
        found_break = judge_link(previous, link)
    if found_break is None:
        return [_miss(found, pair.row, cols)] if _missed(found, pair) else []
    raw_block = found_break.report.raw_block  # the printed report is never made: the scan
    item = PrefixBreak(  # prints one line of its own (its summary), redacted
        index=link.number,
        previous=previous.number,
        block=_block(raw_block),
        report=found_break.report,
        prefix_bytes=found_break.prefix_bytes,
        bytes_lost=found_break.bytes_lost,
        endpoint=link.endpoint if link.endpoint != link.split.provider else "",
        loss=found_break.loss,
    )
    earlier = rows[previous.position]
    return [_from_break(found, pair, cols, item, previous.request, earlier)]


def _from_break(
    found: Plan,
    pair: Pair,
    cols: _Columns,
    item: PrefixBreak,
    earlier: LintRequest,
    before: int,
) -> dict[str, Any]:
    row = pair.row
    tokens = _tokens_lost(item)
    provider = earlier.split.provider if earlier.split is not None else cols["provider"][row]
    report = item.report
    evidence = _evidence([row, before], cols)
    summary = item.headline
    cached = _cached(before, cols)
    if tokens == 0 and evidence != "exact" and cached:
        # A converted body may have lost its cache markers (OTel GenAI parts carry none): the
        # cache model's "nothing was cached" is about the bytes the trace holds, and the
        # provider's counters say otherwise, so what was lost is not judged.
        tokens = None
        summary = summary.split(" broke first; ", 1)[0] + (
            f" broke first; the provider's counters say request {int(found.place[before])} had"
            f" {cached:,} tokens cached, and its {evidence} body may have lost its cache"
            " markers: what it lost is not judged"
        )
    return _finding(
        found,
        row,
        cols,
        block=item.block,
        verdict=item.verdict,
        evidence=evidence,
        severity=item.severity,
        tokens_lost=tokens,
        usd_lost=_usd(
            tokens, provider, cols["model"][row] or earlier.body.get("model"), cols["time"][row]
        ),
        pointer=line(report.raw_pointer, _SUMMARY) if report.raw_pointer else None,
        byte=report.offset if report.offset >= 0 else None,
        summary=line(summary, _SUMMARY),
    )


def _block(raw: str | None) -> str:
    """The block a break is in: one of the cache's block names, else (an opaque body's member)
    a redacted line."""
    if not raw:
        return "settings"
    return raw if raw in _BLOCK_NAMES else line(raw, _SUMMARY)


def _tokens_lost(item: PrefixBreak) -> int | None:
    """The cache model's loss in tokens (its estimate, scaled by the counters the trace reported,
    handed to it as a response); None where the rules cannot say what was cached."""
    return item.loss.tokens if item.loss is not None else None


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
        summary=(  # the scan's own words and numbers: nothing of the trace to redact
            f"{block}_changed: request {int(found.place[row])} does not extend request"
            f" {int(found.place[before])}: the {block} digests differ (no bytes to compare)"
        ),
    )


def _cached(row: int, cols: _Columns) -> int | None:
    read, write = cols["cache_read"][row], cols["cache_write"][row]
    if read is None and write is None:
        return None
    return (read or 0) + (write or 0)


def _missed(found: Plan, pair: Pair) -> bool:
    """The counters show a miss (the tier's test, TTL included) the cache model found no
    break for."""
    return found.missable is not None and bool(found.missable[pair.row])


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
        summary=(  # the scan's own words and numbers: nothing of the trace to redact
            f"{UNEXPLAINED}: request {int(found.place[row])} read 0 cached tokens where request"
            f" {int(found.place[row]) - 1} had {expected:,} cached, and the bytes the trace holds"
            " do not explain it (an eviction, a routing change, a prefix under the minimum, or"
            " content the trace does not hold)"
        ),
    )


def _usd(tokens: int | None, provider: Any, model: Any, time: Any) -> float | None:
    if tokens is None or not isinstance(provider, str):
        return None
    day = datetime.datetime.fromtimestamp(time, datetime.UTC).date() if time else None
    rate = _rate(provider, model if isinstance(model, str) else None, day)
    if rate is None:
        return None
    return round(tokens * rate / 1_000_000, 6)


def forget_prices() -> None:
    """Look the prices up again (a scan starts: the project's price files may have changed)."""
    _rate.cache_clear()


@functools.lru_cache(maxsize=4096)
def _rate(provider: str, model: str | None, day: datetime.date | None) -> float | None:
    """Dollars a million tokens lost cost: the price row's input price less its cache-read
    price (`harness cost`'s rows; looked up once per provider, model and day in a scan)."""
    price = price_for(provider, model, day)
    if price is None:
        return None
    return max(price.input - price.cache_read, 0.0)
