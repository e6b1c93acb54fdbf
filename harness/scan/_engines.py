"""The two engines: they only read, partition and call the one judge.

- `duckdb` (the default, embedded: one wheel, no server): the rows the readers make are loaded
  into an in-memory DuckDB table that spills to a temporary folder beyond its memory limit (a
  digest table in Parquet is loaded by DuckDB itself, no Python per row), then streamed back
  sorted by session and time, in batches of whole sessions, each judged as it comes.
- `dask` (beyond one machine: `--scheduler tcp://HOST:PORT`, or a local cluster of `--workers
  N`): each file is read by a worker (the paths must be readable there), the rows are shuffled
  by session, and `map_partitions` calls the same judge on each partition.

Both hand back `Judged` tables and the readers' `Tally`; `harness.scan._result` orders them, so
both engines print the same bytes for the same input.
"""

from __future__ import annotations

import logging
import operator
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from harness._shared._errors import UsageError
from harness.scan._bytes import attach
from harness.scan._extras import dask, dask_modules, duckdb, pandas, pyarrow, pyarrow_parquet
from harness.scan._grouped import grouped
from harness.scan._judge import (
    FINDING_COLUMNS,
    SESSION_COLUMNS,
    Judged,
    forget_prices,
    judge,
    table_schema,
)
from harness.scan._read import Options, Tally, read_file
from harness.scan._table import COLUMNS, DIGEST_COLUMNS, schema

__all__ = ["judge_batch", "run_dask", "run_duckdb"]

_ROWS: Final = 16384  # rows fetched from DuckDB at a time (a batch is cut at a session's end)
_MEMORY: Final = "128MB"  # past it DuckDB spills its sort to the temporary folder


def judge_batch(table: Any) -> Judged:
    """The judge with the bytes it needs: the digest tier says which rows, they are read
    again, and the judge runs. What both engines call on a batch of whole sessions."""
    return judge(table, fetch=attach)


def _digest_table(path: Path) -> frozenset[str] | None:
    """A Parquet file's columns when it is a digest table (the scan table's own columns)."""
    if not path.name.lower().endswith(".parquet"):
        return None
    try:
        names = frozenset(pyarrow_parquet().read_schema(path).names)
    except Exception:  # not readable as Parquet: the readers say so, in one line
        return None
    return names if names >= DIGEST_COLUMNS else None


def run_duckdb(
    files: Sequence[Path], options: Options, tally: Tally, progress: Callable[[str], None]
) -> Iterator[Judged]:
    db = duckdb()
    with tempfile.TemporaryDirectory(prefix="harness-scan-") as spill:
        try:
            con = db.connect(
                ":memory:",
                config={
                    "temp_directory": spill,
                    "memory_limit": _MEMORY,
                    "threads": 1,  # the judge is one Python thread; one sort thread stays in
                    # the memory limit on any machine (each thread sorts in memory of its own)
                    "preserve_insertion_order": False,  # every read is ordered by the query
                },
            )
        except db.Error as error:
            raise UsageError(f"DuckDB could not start: {_first_line(error)}") from None
        try:
            _run(con, "SET enable_progress_bar = false")  # the scan's progress line is its own
            yield from _duckdb(con, files, options, tally, progress)
        except db.OutOfMemoryException as error:
            raise UsageError(
                f"DuckDB ran out of the {_MEMORY} the scan gives it: {_first_line(error)}"
            ) from None
        except db.Error as error:
            raise UsageError(
                f"DuckDB failed: {_first_line(error)} (the scan spills its sort to {spill}:"
                " is that disk full?)"
            ) from None
        finally:
            con.close()


def _first_line(error: BaseException) -> str:
    return " ".join(str(error).split("\n", 1)[0].split())


def _duckdb(
    con: Any,
    files: Sequence[Path],
    options: Options,
    tally: Tally,
    progress: Callable[[str], None],
) -> Iterator[Judged]:
    ddl = ", ".join(f'"{name}" {_SQL[kind]}' for name, kind in COLUMNS.items())
    _run(con, f"CREATE TABLE scan ({ddl})")
    names = ", ".join(f'"{name}"' for name in COLUMNS)
    tables: list[tuple[str, list[Any]]] = []  # digest tables: read by the query itself
    digests: list[tuple[Path, int, frozenset[str]]] = []
    read = 0
    for number, path in enumerate(files):
        columns = _digest_table(path)
        if columns is not None:
            digests.append((path, number, columns))
            count = _run(con, "SELECT count(*) FROM read_parquet(?)", [str(path)])[0][0]
            tally.requests += count
            tally.formats["digests"] = tally.formats.get("digests", 0) + count
            read += count
            wanted = ", ".join(_cast(name, kind, columns) for name, kind in COLUMNS.items())
            tables.append(
                (
                    f"SELECT {wanted} FROM (SELECT *, ? AS _file, ? AS _first"
                    " FROM read_parquet(?, file_row_number = true))",
                    [str(path), number << 32, str(path)],
                )
            )
            continue
        for batch in read_file(path, number, options, tally):
            con.register("incoming", batch)
            _run(con, f"INSERT INTO scan SELECT {names} FROM incoming")
            con.unregister("incoming")
            read += batch.num_rows
            progress(f"harness scan: {read:,} requests read")
    progress(f"harness scan: judging {read:,} requests")
    params = [value for _, given in tables for value in given]
    if digests and len(digests) == len(files) and grouped(digests):
        # digest tables whose sessions stand together in time order already: streamed as
        # they are, no sort (`harness.scan._grouped`); insertion order kept for this read
        _run(con, "SET preserve_insertion_order = true")
        ordered = con.sql(" UNION ALL ".join(sql for sql, _ in tables), params=params)
    else:
        query = " UNION ALL ".join([f"SELECT {names} FROM scan", *(sql for sql, _ in tables)])
        ordered = con.sql(f"{query} ORDER BY session, time NULLS LAST, seq", params=params)
    stream = getattr(ordered, "to_arrow_reader", None) or ordered.record_batch  # 1.4: record_batch
    reader = stream(_ROWS)
    pa = pyarrow()
    carry: Any = None
    for batch in reader:
        table = pa.Table.from_batches([batch])
        if carry is not None:
            table = pa.concat_tables([carry, table])
        sessions = table["session"]
        last = sessions[table.num_rows - 1]
        cut = table.num_rows
        while cut > 0 and sessions[cut - 1] == last:
            cut -= 1
        if cut == 0:
            carry = table
            continue
        carry = table.slice(cut)
        yield judge_batch(table.slice(0, cut))
    if carry is not None and carry.num_rows:
        yield judge_batch(carry)


def _run(con: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """A statement run to its end (DuckDB 2 wants every result consumed)."""
    return list(con.execute(sql, list(params)).fetchall())


_SQL: Final = {
    "string": "VARCHAR",
    "bool": "BOOLEAN",
    "int64": "BIGINT",
    "int32": "INTEGER",
    "float64": "DOUBLE",
    "binary": "BLOB",
}


def _cast(name: str, kind: str, present: frozenset[str]) -> str:
    """A digest table's column as the scan table holds it (an absent one null; where a row is,
    the table's file and row, and its place in the input, the file's place and the row's, when
    the table does not say)."""
    fallback = {
        "file": "_file",
        "source": "_file || '#' || (file_row_number + 1)",
        "format": "'digests'",
        "seq": "_first + file_row_number",
    }.get(name, "NULL")
    value = f'"{name}"' if name in present else fallback
    if name in ("file", "source", "seq") and name in present:
        value = f'coalesce("{name}", {fallback})'
    return f'CAST({value} AS {_SQL[kind]}) AS "{name}"'


# -- Dask ------------------------------------------------------------------------------------


def _read_part(path: str, number: int, options: Options) -> tuple[Any, bytes]:
    """One file read on a worker: its rows as a pandas frame (Arrow types kept) and its tally
    (as JSON: what comes back is data, never a pickled object of ours)."""
    pd = pandas()

    tally = Tally()
    pa = pyarrow()
    batches = list(read_file(Path(path), number, options, tally))
    table = pa.Table.from_batches(batches, schema=schema())
    return table.to_pandas(types_mapper=pd.ArrowDtype), msgspec.json.encode(tally)


def _judge_frame(frame: Any) -> Any:
    """`judge_batch` on one partition (a pandas frame of whole sessions), its two tables
    returned as one frame of JSON rows (`kind`: finding or session)."""
    pd = pandas()

    pa = pyarrow()
    table = pa.Table.from_pandas(frame, schema=schema(), preserve_index=False)
    forget_prices()  # a worker may outlive the scan that started it
    judged = judge_batch(table)
    rows = [("finding", msgspec.json.encode(r)) for r in judged.findings.to_pylist()]
    rows += [("session", msgspec.json.encode(r)) for r in judged.sessions.to_pylist()]
    return pd.DataFrame(
        {"kind": [k for k, _ in rows], "payload": [p.decode() for _, p in rows]},
        columns=["kind", "payload"],
    ).astype({"kind": object, "payload": object})


def run_dask(
    files: Sequence[Path],
    options: Options,
    tally: Tally,
    *,
    scheduler: str | None,
    workers: int | None,
    progress: Callable[[str], None] = lambda text: None,
) -> list[Judged]:
    dd, distributed = dask_modules()
    pd = pandas()
    compute, delayed = dask().compute, dask().delayed

    pa = pyarrow()
    if any(_digest_table(path) is not None for path in files):
        raise UsageError("a digest table (Parquet) is read by --engine duckdb only")
    if scheduler:
        try:
            client = distributed.Client(scheduler)
        except (OSError, TimeoutError, ValueError) as error:
            why = _first_line(error)
            raise UsageError(
                f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({why})"
            ) from None
        cluster = None
    else:
        # worker processes, one thread each: the judge is Python, so threads would share one
        # core; one worker runs in this process (nothing to start)
        processes = (workers or 1) > 1
        cluster = distributed.LocalCluster(
            n_workers=workers or 1,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
            # worker processes talk over TCP on this machine only; one worker in this process
            # talks in memory (an in-process address has no host: giving one fails to start)
            **({"host": "127.0.0.1"} if processes else {}),
        )
        client = distributed.Client(cluster)
    try:
        where = scheduler or f"{workers or 1} local worker(s)"
        progress(f"harness scan: reading and judging {len(files):,} file(s) on Dask ({where})")
        parts = [
            delayed(_read_part)(str(path), number, options) for number, path in enumerate(files)
        ]
        frames = [delayed(operator.getitem)(part, 0) for part in parts]
        tallies = [delayed(operator.getitem)(part, 1) for part in parts]
        meta = schema().empty_table().to_pandas(types_mapper=pd.ArrowDtype)
        rows = dd.from_delayed(frames, meta=meta, verify_meta=False)
        shuffled = rows.shuffle(on="session", npartitions=max(len(files), workers or 1, 1))
        out_meta = pd.DataFrame(
            {"kind": pd.Series([], dtype=object), "payload": pd.Series([], dtype=object)}
        )
        judged = shuffled.map_partitions(_judge_frame, meta=out_meta)
        with warnings.catch_warnings(), _quiet_logs():
            # the tallies ride in the same graph as the frames (each file read once)
            warnings.filterwarnings("ignore", message="Computing mixed collections")
            result, found = compute(judged, tallies)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    for data in found:
        tally.add(msgspec.json.decode(data, type=Tally))
    findings = [
        msgspec.json.decode(p)
        for k, p in zip(result["kind"], result["payload"], strict=True)
        if k == "finding"
    ]
    sessions = [
        msgspec.json.decode(p)
        for k, p in zip(result["kind"], result["payload"], strict=True)
        if k == "session"
    ]
    return [
        Judged(
            pa.Table.from_pylist(findings, schema=table_schema(FINDING_COLUMNS)),
            pa.Table.from_pylist(sessions, schema=table_schema(SESSION_COLUMNS)),
        )
    ]


class _quiet_logs:
    """Dask's shuffle logs each shuffle it starts at WARNING; the scan's output is its own."""

    def __enter__(self) -> None:
        self._logger = logging.getLogger("distributed.shuffle")
        self._level = self._logger.level
        self._logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self._logger.setLevel(self._level)
