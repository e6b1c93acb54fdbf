"""The reading stage: one trace file to rows of the scan table, streamed in batches.

`read_file(path, number, options)` offers the file's first readable unit to the readers (or uses
`--from`), reads every unit with the chosen reader, and turns each `TraceRecord` into a row: the
keys a user named override the format's own ids (`--session-key`, `--request-id-key`,
`--deploy-key`, dotted paths into the record), the digest-tier keys are made from the body (which
is then dropped), and requests outside `--since` / `--until` are left out. What could not be
read is tallied (`Tally`): a malformed line or span is counted and named, never fatal.

Sessions: the format's own id; a Responses request whose `previous_response_id` names a response
seen earlier in the file joins that response's session; a request with neither is grouped by its
endpoint and its conversation's opening message (`~<endpoint> <digest>`, `grouped` true), and
the output says how many were.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from harness._shared._errors import UsageError
from harness.providers import split_request
from harness.scan._conversation import Conversations
from harness.scan._digest import digests_of, digests_of_members, first_block
from harness.scan._keys import dig, id_of
from harness.scan._readers import Reader, reader_named, readers
from harness.scan._readers._base import BadRecord, Unit
from harness.scan._record import TraceRecord, joined
from harness.scan._sources import Malformed, units
from harness.scan._table import Rows

__all__ = ["NAMED_LIMIT", "Options", "Tally", "read_file"]

NAMED_LIMIT: Final = 20  # malformed records named in the summary; the rest are counted
_SNIFF: Final = 50  # units offered to the readers before a file is called unknown


@dataclass(frozen=True)
class Options:
    """What the user asked of the reading stage."""

    fmt: str | None = None
    session_key: str | None = None
    request_id_key: str | None = None
    deploy_key: str | None = None
    since: float | None = None
    until: float | None = None


@dataclass
class Tally:
    """What one file (or every file, added up) gave and what it could not."""

    requests: int = 0
    malformed: int = 0
    named: list[str] = field(default_factory=list)
    outside: int = 0  # left out by --since / --until (or no time while a window is set)
    grouped: int = 0
    formats: dict[str, int] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # files no reader claims
    empty: list[str] = field(default_factory=list)  # files that held no request

    def bad(self, where: str, problem: str) -> None:
        self.malformed += 1
        if len(self.named) < NAMED_LIMIT:
            self.named.append(f"{where}: {problem}")

    def add(self, other: Tally) -> None:
        self.requests += other.requests
        self.malformed += other.malformed
        self.named += other.named[: max(NAMED_LIMIT - len(self.named), 0)]
        self.outside += other.outside
        self.grouped += other.grouped
        for name, count in other.formats.items():
            self.formats[name] = self.formats.get(name, 0) + count
        self.unknown += other.unknown
        self.empty += other.empty


def _chosen(options: Options) -> Reader | None:
    if options.fmt is None:
        return None
    reader = reader_named(options.fmt)
    if reader is None:
        names = ", ".join(r.name for r in readers())
        raise UsageError(f"--from {options.fmt}: unknown format; the formats are {names}")
    return reader


@dataclass
class _File:
    """What reading one file keeps beside its rows."""

    name: str  # the path, as the rows name it
    number: int  # the file's place among the files given: the high bits of `seq`
    options: Options
    tally: Tally
    chains: dict[str, str] = field(default_factory=dict)  # response id -> session
    # (endpoint, provider) -> the markers its bodies' split names
    markers: dict[tuple[str, str | None], tuple[str, ...]] = field(default_factory=dict)
    conversations: Conversations = field(default_factory=Conversations)
    windowed: bool = field(init=False)  # --since or --until given
    keyed: bool = field(init=False)  # a key given: the record's view is read

    def __post_init__(self) -> None:
        options = self.options
        self.windowed = options.since is not None or options.until is not None
        self.keyed = bool(options.session_key or options.request_id_key or options.deploy_key)


def read_file(path: Path, number: int, options: Options, tally: Tally) -> Iterator[Any]:
    """The file's rows as Arrow record batches (see the module doc); `tally` counts the rest."""
    reader = _chosen(options)
    if reader is not None:
        reader.begin()
    rows = Rows()
    file = _File(str(path), number, options, tally)
    ordinal = 0
    sniffed = 0
    found = 0
    for unit_no, unit in enumerate(units(path)):
        if isinstance(unit, Malformed):
            tally.bad(unit.where, unit.problem)
            continue
        if reader is None:
            try:
                value = unit.value
            except BadRecord as error:
                tally.bad(unit.where, str(error))
                continue
            reader = next((r for r in readers() if _claims(r, value)), None)
            sniffed += 1
            if reader is None:
                if sniffed >= _SNIFF:
                    break
                continue
            reader.begin()
        try:
            records = list(reader.read(unit))
        except BadRecord as error:
            tally.bad(unit.where, str(error))
            continue
        for index, record in enumerate(records):
            record.ordinal = ordinal
            ordinal += 1
            row = _row(record, unit, (unit_no, index), file)
            if row is not None:
                found += 1
                batch = rows.add(row)
                if batch is not None:
                    yield batch
    if reader is None:
        tally.unknown.append(str(path))
    elif found == 0 and not tally.outside:
        tally.empty.append(str(path))
    if reader is not None and found:
        tally.formats[reader.name] = tally.formats.get(reader.name, 0) + found
    tally.requests += found
    if rows.pending():
        yield rows.flush()


def _claims(reader: Reader, value: Any) -> bool:
    try:
        return reader.claims(value)
    except (AttributeError, TypeError, KeyError, IndexError):
        return False


def _outside(time: float | None, options: Options) -> bool:
    """Whether --since / --until leave the request out (one with no time, when a window is set)."""
    if options.since is None and options.until is None:
        return False
    return (
        time is None
        or (options.since is not None and time < options.since)
        or (options.until is not None and time > options.until)
    )


def _row(
    record: TraceRecord, unit: Unit, place: tuple[int, int], file: _File
) -> tuple[Any, ...] | None:
    options, tally = file.options, file.tally
    if file.windowed and _outside(record.time, options):
        tally.outside += 1
        return None
    session = record.session
    view = None
    if file.keyed:
        view = record.view if record.view is not None else unit.value
        if options.session_key:
            session = id_of(dig(view, options.session_key)) or record.session
    found = None
    endpoint = _endpoint(record)
    body = record.raw if record.raw is not None else record.body
    if record.members is not None:
        found = digests_of_members(
            record.members,
            record.provider,
            _markers(record, endpoint, file.markers),
            file.conversations,
            session or record.url,  # what the conversation read last is remembered by
        )
    elif body is not None:
        found = digests_of(body, record.provider, _markers(record, endpoint, file.markers))
        if found is None and record.body is not None:
            tally.bad(record.source, "its request body is not a JSON object")
            return None
    previous = record.previous_response_id or (found.previous if found is not None else None)
    if session is None and previous in file.chains:
        session = file.chains[previous or ""]
    request_id = record.request_id
    if options.request_id_key:
        request_id = id_of(dig(view, options.request_id_key)) or request_id
    deploy = record.deploy
    if options.deploy_key:
        deploy = id_of(dig(view, options.deploy_key)) or deploy
    grouped = session is None
    if grouped:
        key = first_block(found).hex() if found is not None else (request_id or record.source)
        session = f"~{endpoint} {key}"
        tally.grouped += 1
    if record.response_id:
        file.chains[record.response_id] = session or ""
    counters = record.counters
    line = unit.offset >= 0
    # in the order of `harness.scan._table.COLUMNS`
    if found is None:
        digests: tuple[Any, ...] = (None, None, None, None, None, 0, None, False)
        model = record.model
        evidence = "counters"
    else:
        digests = (
            found.settings,
            found.tools,
            found.system,
            found.ttls,
            found.conversation,
            found.items,
            found.thread,
            found.stored,
        )
        model = record.model or found.model
        evidence = record.evidence
    return (
        session,
        grouped,
        (file.number << 32) + record.ordinal,
        record.time,
        request_id,
        deploy,
        record.source,
        record.format,
        file.name,
        unit.offset if line else -1,
        unit.length if line else place[0],
        place[1],
        endpoint,
        record.provider,
        model,
        evidence,
        record.truncated,
        *digests,
        counters.input_tokens,
        counters.cache_read,
        counters.cache_write,
        counters.output_tokens,
        None,
    )


def _markers(
    record: TraceRecord, endpoint: str, learnt: dict[tuple[str, str | None], tuple[str, ...]]
) -> tuple[str, ...]:
    """The cache markers' keys the cache model sets aside in this record's body: those of the
    split the judge makes of it (the body sent to its endpoint, `harness.scan._judge`), learnt
    from the first body per endpoint (and provider, as the trace names it) in the file; none for
    a body no provider splits (its digests then keep every byte, and any change goes to the
    cache model, which sets aside only what a split names)."""
    key = (endpoint, record.provider)
    known = learnt.get(key)
    if known is None:
        body = record.body
        text = record.raw if record.members is None else joined(record.members)
        if body is None and text is not None:
            try:
                body = msgspec.json.decode(text)
            except (msgspec.DecodeError, RecursionError):
                body = None
        url = f"https://{endpoint}" if "/" in endpoint else None  # as the judge sends it
        split = split_request(body, url=url) if isinstance(body, dict) else None
        known = learnt[key] = tuple(split.markers) if split is not None else ()
    return known


def _endpoint(record: TraceRecord) -> str:
    if record.url:
        return _host_path(record.url)
    return record.provider or record.format


@functools.lru_cache(maxsize=4096)
def _host_path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname or ''}{parts.path}"
