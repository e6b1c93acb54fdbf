"""The bytes of a pair, read again: only the requests the digest tier could not clear.

`attach(table, wanted)` fills the `body` column of the wanted rows (the rest stay null) by
reading their records again: a line is read at its offset (decompressing up to it when the file
is compressed) and given to its format's reader; a record of a document is found by replaying
the document through its reader. A record that cannot be found again (the file changed or went
away under the scan) keeps a null body: the judge then says what the digests say, with evidence
`digest`. Nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from harness._shared._errors import HarnessError
from harness.scan._extras import pyarrow
from harness.scan._readers import reader_named
from harness.scan._readers._base import BadRecord, Unit
from harness.scan._record import TraceRecord, joined
from harness.scan._sources import Malformed, reread_lines, units

__all__ = ["attach", "body_bytes"]


def body_bytes(record: TraceRecord) -> bytes | None:
    """The record's request body as JSON text: as sent, or encoded from what the reader kept."""
    if record.raw is not None:
        return record.raw
    if record.members is not None:
        return joined(record.members)
    return msgspec.json.encode(record.body) if record.body is not None else None


def attach(table: Any, wanted: np.ndarray[Any, Any]) -> Any:
    """`table` with the bodies of the `wanted` rows read again (see the module doc)."""
    rows = np.flatnonzero(wanted)
    if not len(rows):
        return table
    asked = table.select(["file", "format", "offset", "length", "ordinal"]).take(rows)
    files = asked["file"].to_pylist()
    formats = asked["format"].to_pylist()
    offsets = asked["offset"].to_pylist()
    lengths = asked["length"].to_pylist()
    ordinals = asked["ordinal"].to_pylist()
    bodies: list[bytes | None] = [None] * table.num_rows
    lines: dict[str, list[int]] = {}  # file -> the places in `rows` of its lines
    documents: dict[str, dict[tuple[int, int], bytes | None]] = {}
    for place, row in enumerate(rows.tolist()):
        path, fmt = files[place], formats[place]
        if path is None or fmt is None or reader_named(fmt) is None:
            continue  # a digest table: no record to read again
        if offsets[place] is not None and offsets[place] >= 0:
            lines.setdefault(path, []).append(place)
            continue
        try:
            if path not in documents:
                documents[path] = _document(Path(path), fmt)
            bodies[row] = documents[path].get((lengths[place], ordinals[place]))
        except (OSError, HarnessError, BadRecord, msgspec.DecodeError):
            bodies[row] = None
    for path, places in lines.items():
        for fmt in {formats[p] for p in places}:
            begin = reader_named(fmt)
            if begin is not None:
                begin.begin()
        try:
            read = reread_lines(Path(path), [(offsets[p], lengths[p]) for p in places])
        except (OSError, HarnessError):
            continue  # the file went away under the scan: the digests speak
        for place in places:
            bodies[int(rows[place])] = _body(
                Path(path),
                formats[place],
                read.get(offsets[place]),
                offsets[place],
                ordinals[place],
            )
    pa = pyarrow()
    index = table.schema.get_field_index("body")
    return table.set_column(index, "body", pa.array(bodies, type=pa.binary()))


def _body(path: Path, fmt: str, data: bytes | None, offset: int, index: int) -> bytes | None:
    """The request body of the `index`-th record of a line read again (None when it is gone)."""
    reader = reader_named(fmt)
    if reader is None or not data:
        return None
    try:
        records = list(reader.read(Unit.line(data, str(path), offset)))
    except (HarnessError, BadRecord, msgspec.DecodeError):
        return None
    return body_bytes(records[index]) if index < len(records) else None


def _document(path: Path, fmt: str) -> dict[tuple[int, int], bytes | None]:
    """Every record of a document file by (unit number, place in its unit)."""
    reader = reader_named(fmt)
    found: dict[tuple[int, int], bytes | None] = {}
    if reader is None:
        return found
    for number, unit in enumerate(units(path)):
        if isinstance(unit, Malformed):
            continue
        try:
            records = list(reader.read(unit))
        except BadRecord:
            continue
        for index, record in enumerate(records):
            found[(number, index)] = body_bytes(record)
    return found
