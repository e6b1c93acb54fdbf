"""Whether digest tables already hold their rows grouped: then they are judged as they stream.

The judge wants batches of whole sessions, each session's requests in time order; DuckDB gives
them by sorting every row (`ORDER BY session, time NULLS LAST, seq`), which costs several times
reading the table (decision 0035). A table a pipeline wrote session by session (as the
benchmark's is, and as a digest table written from sorted logs is) has its rows in that order
already, but for the order between sessions, which nothing depends on (the judge handles any
session apart from the others, and the output is ordered at the end).

`grouped(tables)` reads only the key columns (`session`, `time`, `seq`) of the tables, in the
order the scan reads them, and says whether every session's rows stand together and, within
it, in the sorted query's order: time ascending with nulls last, ties by `seq`, both as the
query reads them (`seq` defaults to the file's place and the row's; a table's own `seq` may be
null, then the same default). Anything the check does not model exactly (a session column
that is not text, a time that is not a number, a NaN or infinite time, a tie in both time and
`seq`) answers False, and the sorted query runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.scan._extras import pyarrow, pyarrow_compute, pyarrow_parquet

__all__ = ["grouped"]


def grouped(tables: Sequence[tuple[Path, int, frozenset[str]]]) -> bool:
    """Whether the tables (path, the file's place among the inputs, its columns), read one
    after the other, hold each session's rows together and in time order (see the module doc)."""
    pa, pc = pyarrow(), pyarrow_compute()
    sessions: list[Any] = []
    times: list[np.ndarray[Any, Any]] = []
    seqs: list[np.ndarray[Any, Any]] = []
    for path, number, columns in tables:
        wanted = [name for name in ("session", "time", "seq") if name in columns]
        keys = pyarrow_parquet().ParquetFile(path).read(columns=wanted)
        n = keys.num_rows
        session = keys["session"]
        if not (pa.types.is_string(session.type) or pa.types.is_large_string(session.type)):
            return False
        sessions.append(session.cast(pa.string()))
        time = np.full(n, np.inf)
        if "time" in columns:
            column = keys["time"]
            if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
                return False
            values = np.asarray(
                pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False),
                dtype=float,
            )
            known = pc.is_valid(column).to_numpy(zero_copy_only=False)
            if not np.isfinite(values[known]).all():
                return False  # NaN and infinities order apart from nulls in the query
            time = np.where(known, values, np.inf)
        seq = (number << 32) + np.arange(n, dtype=np.int64)
        if "seq" in columns:
            column = keys["seq"]
            if not pa.types.is_integer(column.type):
                return False
            own = pc.fill_null(column.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
            seq = np.where(pc.is_valid(column).to_numpy(zero_copy_only=False), own, seq)
        times.append(time)
        seqs.append(seq)
    if not sessions:
        return False
    codes, distinct = _codes(pa.chunked_array(sessions, type=pa.string()))
    time, seq = np.concatenate(times), np.concatenate(seqs)
    if len(codes) < 2:
        return True
    same = codes[1:] == codes[:-1]
    runs = int((~same).sum()) + 1
    if runs != distinct:
        return False  # a session comes back after another
    earlier = time[:-1] < time[1:]
    tied = (time[:-1] == time[1:]) & (seq[:-1] < seq[1:])
    return bool((earlier | tied)[same].all())


def _codes(sessions: Any) -> tuple[np.ndarray[Any, Any], int]:
    """Equal codes for equal sessions (a null session is one session, -1: the query groups
    them), and how many sessions there are."""
    pc = pyarrow_compute()
    encoded = pc.dictionary_encode(sessions.combine_chunks())
    indices = encoded.indices
    distinct = len(encoded.dictionary) + (1 if indices.null_count else 0)
    codes = np.asarray(pc.fill_null(indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return codes, distinct
