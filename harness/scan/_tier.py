"""The digest tier: which requests kept their session's cached prefix, decided on digests alone,
for a whole batch at once (numpy over the Arrow columns; no Python call per request).

`plan(table, ttl)` sorts a batch of whole sessions by session, time and input order, and says for
each request (`Plan`):
- `clean`: it holds every byte of the request before it in its session (same endpoint, settings,
  tools, system and marker TTLs, and a conversation whose running digest at the earlier length is
  the earlier request's last), so nothing broke and no bytes are read again;
- `pairs`: the requests that did not, each with the earlier requests of its session the cache
  model may link it to (`harness.cache._links`' candidates: the latest one on its endpoint,
  the latest that opened its conversation with the same message, and the recent one-message
  requests); a request that extends the latest one with its opening is clean too (two
  conversations taking turns on one endpoint);
- `miss`: the provider's counters say it read nothing from the cache although the request before
  it, within the TTL, had cached tokens, and its bytes extend that request (or there are no bytes
  to look at): an unexplained miss.
Only `pairs` go on to the cache model, with their bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from harness.scan._digest import DIGEST_SIZE
from harness.scan._extras import pyarrow, pyarrow_compute

__all__ = ["DEFAULT_TTL", "Pair", "Plan", "needs_bytes", "plan", "wanted"]

DEFAULT_TTL: Final = 300.0  # the shortest default TTL the providers document (5 minutes)
_SINGLES: Final = 16  # as many recent one-message requests as the gate looks back at


@dataclass(frozen=True)
class Pair:
    """Request `row` (sorted order) and the earlier rows of its session it may continue."""

    row: int
    context: tuple[int, ...]
    previous: int  # the request before it in its session


@dataclass
class Plan:
    table: Any  # the batch, sorted
    starts: np.ndarray[Any, Any]  # first row of each row's session
    place: np.ndarray[Any, Any]  # 1-based place in the session
    has: np.ndarray[Any, Any]  # digests known (a body was read)
    clean: np.ndarray[Any, Any]
    miss: np.ndarray[Any, Any]  # cleared by the digests, and the counters show a miss
    missable: np.ndarray[Any, Any] | None = None  # the counters show a miss (bytes or not)
    pairs: list[Pair] = field(default_factory=list)


def _in_order(keys: Any) -> bool:
    """Whether the rows are sorted by session, then time, then input order already."""
    pc = pyarrow_compute()
    n = keys.num_rows
    if n < 2:
        return True
    session = keys["session"].combine_chunks()
    a, b = session[:-1], session[1:]
    same = pc.fill_null(pc.equal(a, b), False)
    before = pc.fill_null(pc.less(a, b), False)
    time = keys["time"].combine_chunks()
    seq = keys["seq"].combine_chunks()
    earlier = pc.less(time[:-1], time[1:])
    tied = pc.and_(pc.equal(time[:-1], time[1:]), pc.less(seq[:-1], seq[1:]))
    within = pc.and_(same, pc.fill_null(pc.or_(earlier, tied), False))
    return bool(pc.all(pc.or_(before, within)).as_py())


def _shift_equal(column: Any, n: int) -> np.ndarray[Any, Any]:
    pc = pyarrow_compute()
    out = np.zeros(n, dtype=bool)
    if n > 1:
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        same = pc.fill_null(pc.equal(column[1:], column[:-1]), False)
        out[1:] = same.to_numpy(zero_copy_only=False)
    return out


def _numbers(column: Any, fill: float) -> np.ndarray[Any, Any]:
    pc = pyarrow_compute()
    return np.asarray(pc.fill_null(column, fill).to_numpy(zero_copy_only=False), dtype=float)


def _words(column: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A binary column of running digests as 64-bit words, and each row's first word."""
    array = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    n = len(array)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[array.offset : array.offset + n + 1]
    end = int(offsets[-1]) if n else 0
    if end == 0 or buffers[2] is None:
        return np.zeros(1, dtype=np.uint64), np.zeros(n, dtype=np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8)[: end + 8]
    data = np.concatenate([data[:end], np.zeros(8, dtype=np.uint8)])  # aligned, one spare word
    return data.view("<u8"), (offsets[:-1] // DIGEST_SIZE).astype(np.int64)


def plan(table: Any, ttl: Mapping[str, float] | None = None, *, full: bool = False) -> Plan:
    """The batch sorted, and what its digests decide (see the module doc). `full` clears
    nothing: every request with bytes goes to the cache model with every earlier request of its
    session on its endpoint (what the gate's walk reads; the reference the tier is tested
    against)."""
    pc = pyarrow_compute()
    keys = pyarrow().table(
        {
            "session": table["session"],
            "time": pc.fill_null(table["time"], np.inf),  # requests with no time: last
            "seq": table["seq"],
        }
    )
    if _in_order(keys):  # DuckDB hands its batches sorted already
        t = table
    else:
        order = pc.sort_indices(
            keys, sort_keys=[("session", "ascending"), ("time", "ascending"), ("seq", "ascending")]
        )
        t = table.take(order)
    n = t.num_rows
    same = _shift_equal(t["session"], n)
    starts = np.zeros(n, dtype=np.int64)
    if n:
        boundary = np.flatnonzero(~same)
        starts = boundary[np.searchsorted(boundary, np.arange(n), side="right") - 1]
    place = np.arange(n) - starts + 1
    has = pc.is_valid(t["d_settings"]).to_numpy(zero_copy_only=False)
    prev_has = np.zeros(n, dtype=bool)
    prev_has[1:] = has[:-1]
    head = same.copy()
    for name in ("d_settings", "d_tools", "d_system", "d_ttls", "endpoint"):
        head &= _shift_equal(t[name], n)
    words, first = _words(t["conv"])
    items = _numbers(t["items"], 0).astype(np.int64)
    k = np.zeros(n, dtype=np.int64)
    k[1:] = items[:-1]
    prev_first = np.zeros(n, dtype=np.int64)
    prev_first[1:] = first[:-1]
    check = (k > 0) & (items >= k)
    at = np.where(check, first + k - 1, 0)
    prev_at = np.where(check, prev_first + k - 1, 0)
    # An earlier request with no conversation is held whole only by one with none either: a
    # request that opens one is linked by its opening, maybe to another request (the links).
    conv_ok = ((k == 0) & (items == 0)) | (check & (words[at] == words[prev_at]))
    stored = pc.fill_null(t["stored"], False).to_numpy(zero_copy_only=False)
    conv_ok |= stored  # the links take the latest request on the endpoint: the one before
    comparable = same & has & prev_has
    clean = comparable & head & conv_ok
    if full:
        clean = np.zeros(n, dtype=bool)
    found = Plan(t, starts, place, has, clean, np.zeros(n, dtype=bool))
    # every request with bytes the digests did not clear (the one before it may have none: an
    # earlier one on its endpoint may still be the one it continues)
    _link(found, words, first, items, same & has & ~clean, stored, full=full)
    found.miss = _misses(found, ttl or {})
    return found


def _extends(words: Any, first: Any, items: Any, a: int, b: int) -> bool:
    k = int(items[a])
    if k == 0:
        return True
    if items[b] < k:
        return False
    return bool(words[first[b] + k - 1] == words[first[a] + k - 1])


def _codes(column: Any) -> np.ndarray[Any, Any]:
    """A column as integer codes, equal where the values are equal (null: -1): what the links
    compare, without a Python object per row."""
    pc = pyarrow_compute()
    array = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    indices = pc.dictionary_encode(array).indices
    return np.asarray(pc.fill_null(indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _link(
    found: Plan,
    words: Any,
    first: Any,
    items: Any,
    broken: np.ndarray[Any, Any],
    stored: np.ndarray[Any, Any],
    *,
    full: bool = False,
) -> None:
    """For each request the tier could not clear, the rows the cache model may link it to; one
    that extends the latest request with its opening is cleared (conversations taking turns)."""
    t = found.table
    candidates = np.flatnonzero(broken)
    if not len(candidates):
        return
    endpoint = _codes(t["endpoint"])
    heads = np.stack([_codes(t[name]) for name in ("d_settings", "d_tools", "d_system", "d_ttls")])
    threads = _Threads(t, words, first, items)
    for row in candidates.tolist():
        start = int(found.starts[row])
        mine = endpoint[row]
        if full:
            earlier = range(start, row)
            context = {j for j in earlier if endpoint[j] == mine and found.has[j]}
            found.pairs.append(Pair(row, tuple(sorted(context)), row - 1))
            continue
        opening = threads[row]
        same_opening = latest = None
        singles: list[int] = []
        for j in range(row - 1, start - 1, -1):
            if endpoint[j] != mine or not found.has[j]:
                continue
            if latest is None:
                latest = j
            if same_opening is None and opening is not None and threads[j] == opening:
                same_opening = j
            if items[j] == 1 and len(singles) < _SINGLES:
                singles.append(j)
        if (
            same_opening is not None
            and not stored[row]
            and same_opening != row - 1
            and bool((heads[:, same_opening] == heads[:, row]).all())
            and _extends(words, first, items, same_opening, row)
        ):
            found.clean[row] = True
            continue
        # the one request the gate links it to: the latest with its opening (a thread), else the
        # latest on its endpoint, and for a one-message request the recent one-message ones
        # (it may have grown from one of them)
        if same_opening is not None and not stored[row]:
            context = {same_opening}
        else:
            context = {j for j in (latest,) if j is not None}
            if items[row] == 1:
                context |= set(singles)
        found.pairs.append(Pair(row, tuple(sorted(context)), row - 1))


class _Threads:
    """Each row's opening as the cache model's links compare them (the `thread` column: the
    first message without markers, in its long form); a digest table without it falls back on
    the first running digest (its bytes as sent). Read a row at a time: the links look at the
    few sessions that hold a request the digests did not clear."""

    def __init__(self, t: Any, words: Any, first: Any, items: Any) -> None:
        self._column = t["thread"] if "thread" in t.column_names else None
        self._words, self._first, self._items = words, first, items
        self._known: dict[int, Any] = {}

    def __getitem__(self, row: int) -> Any:
        if row not in self._known:
            thread = self._column[row].as_py() if self._column is not None else None
            if thread is None and self._items[row]:
                thread = self._words[self._first[row]].tobytes()
            self._known[row] = thread
        return self._known[row]


def _misses(found: Plan, ttl: Mapping[str, float]) -> np.ndarray[Any, Any]:
    t = found.table
    n = t.num_rows
    if n < 2:
        return np.zeros(n, dtype=bool)
    read = _numbers(t["cache_read"], -1)
    cached = _numbers(t["cache_read"], 0) + _numbers(t["cache_write"], 0)
    time = _numbers(t["time"], np.nan)
    limit = _limits(t["provider"], ttl)
    same = np.zeros(n, dtype=bool)
    same[1:] = found.starts[1:] == found.starts[:-1]
    gap = np.full(n, np.nan)
    gap[1:] = time[1:] - time[:-1]
    in_time = np.isnan(gap) | (gap <= limit)
    prev_cached = np.zeros(n, dtype=bool)
    prev_cached[1:] = cached[:-1] > 0
    prev_has = np.zeros(n, dtype=bool)
    prev_has[1:] = found.has[:-1]
    unseen = ~found.has & ~prev_has  # no bytes on either side: only the counters speak
    missed: np.ndarray[Any, Any] = same & (read == 0) & prev_cached & in_time
    found.missable = missed
    return missed & (found.clean | unseen)


def _limits(providers: Any, ttl: Mapping[str, float]) -> np.ndarray[Any, Any]:
    """Each row's provider's TTL in seconds (the default for one the rules pack does not name)."""
    pc = pyarrow_compute()
    array = providers.combine_chunks() if hasattr(providers, "combine_chunks") else providers
    encoded = pc.dictionary_encode(array)
    names = encoded.dictionary.to_pylist()
    seconds = np.array([ttl.get(name or "", DEFAULT_TTL) for name in names] + [DEFAULT_TTL])
    codes = pc.fill_null(encoded.indices, len(names)).to_numpy(zero_copy_only=False)
    return np.asarray(seconds[np.asarray(codes, dtype=np.int64)], dtype=float)


def needs_bytes(table: Any) -> tuple[Any, np.ndarray[Any, Any]]:
    """The batch sorted as the judge sorts it, and which of its rows the judge needs the bytes
    of: every row of a pair the digests could not clear."""
    found = plan(table)
    return found.table, wanted(found)


def wanted(found: Plan) -> np.ndarray[Any, Any]:
    """The rows of `found`'s table whose bytes the judge needs."""
    wanted = np.zeros(found.table.num_rows, dtype=bool)
    for pair in found.pairs:
        if not pair.context:
            continue  # nothing earlier on its endpoint: it starts a conversation
        wanted[pair.row] = True
        wanted[list(pair.context)] = True
    return wanted
