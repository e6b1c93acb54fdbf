"""The scan table: one row per request, what both engines sort, partition and hand the judge.

A row holds no body: the ids (session, request, deploy), when it started, where its record is
(`file`; for a line its `offset` and `length` in the decompressed stream, for a document's unit
`offset` -1 and the unit's number in `length`; `ordinal`, the record's place among those its
unit gave), its endpoint, provider and model, its evidence, the digest-tier keys
(`harness.scan._digest`: `d_settings`, `d_tools`, `d_system`, `d_ttls`, the running digests of
its conversation `conv` and their count `items`, its opening as the cache model's links read it
`thread`, `stored`), and the provider's counters. `body`
stays null until the judge asks for a pair's bytes (`harness.scan._bytes`). `seq` is the row's
place in the input (file by file, in the order given, record by record): the tie-break of equal
times, the same for every engine.

A Parquet file with these columns is a digest table: read as it is, with no reader (the digest
tier's benchmark input, or a table a previous pipeline wrote).
"""

from __future__ import annotations

import functools
from typing import Any, Final

from harness.scan._extras import pyarrow

__all__ = ["COLUMNS", "DIGEST_COLUMNS", "Rows", "schema"]

# name -> Arrow type name (see `schema`)
COLUMNS: Final = {
    "session": "string",
    "grouped": "bool",
    "seq": "int64",
    "time": "float64",
    "request_id": "string",
    "deploy": "string",
    "source": "string",
    "format": "string",
    "file": "string",
    "offset": "int64",
    "length": "int64",
    "ordinal": "int64",
    "endpoint": "string",
    "provider": "string",
    "model": "string",
    "evidence": "string",
    "truncated": "bool",
    "d_settings": "binary",
    "d_tools": "binary",
    "d_system": "binary",
    "d_ttls": "binary",
    "conv": "binary",
    "items": "int32",
    "thread": "binary",
    "stored": "bool",
    "input_tokens": "int64",
    "cache_read": "int64",
    "cache_write": "int64",
    "output_tokens": "int64",
    "body": "binary",
}
DIGEST_COLUMNS: Final = frozenset({"d_settings", "d_tools", "d_system", "conv", "items", "session"})
_BATCH: Final = 8192


@functools.cache
def schema() -> Any:
    pa = pyarrow()
    types = {
        "string": pa.string(),
        "bool": pa.bool_(),
        "int64": pa.int64(),
        "int32": pa.int32(),
        "float64": pa.float64(),
        "binary": pa.binary(),
    }
    return pa.schema([(name, types[kind]) for name, kind in COLUMNS.items()])


class Rows:
    """Rows gathered as tuples (in `COLUMNS` order), handed out as Arrow record batches."""

    def __init__(self, size: int = _BATCH) -> None:
        self.size = size
        self._rows: list[tuple[Any, ...]] = []
        self.count = 0

    def add(self, row: tuple[Any, ...]) -> Any:
        """Add a row; a full batch when one is ready, else None."""
        self._rows.append(row)
        self.count += 1
        return self.flush() if len(self._rows) >= self.size else None

    def flush(self) -> Any:
        pa = pyarrow()
        columns = zip(*self._rows, strict=True) if self._rows else ([] for _ in COLUMNS)
        arrays = [
            pa.array(values, type=field.type)
            for values, field in zip(columns, schema(), strict=True)
        ]
        self._rows = []
        return pa.RecordBatch.from_arrays(arrays, schema=schema())

    def pending(self) -> bool:
        return bool(self._rows)
