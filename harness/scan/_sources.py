"""Where the traces are, and how a file becomes units a reader reads.

`files(paths)` expands what the user gave: files, folders (every trace file under them, hidden
and virtual-environment folders skipped) and globs (`logs/**/*.jsonl.gz`); a path that names
nothing is bad input (one line, exit 2). `units(path)` opens one file, decompressing gzip and zstd
(told by their magic bytes, whatever the name says), and yields its units:
- JSONL (`.jsonl`, `.ndjson`, or a `.json` that holds more than one value): one unit a line,
  with its byte span in the decompressed stream; a line that is not JSON is a `Malformed` unit;
- JSON: the document, or each element of a top-level array;
- YAML (`.yaml`, `.yml`: vcrpy and pydantic-ai cassettes): the document;
- Parquet: one unit a row (read in batches).
zstd needs the `zstandard` module (the `scan` extra brings it; DuckDB reads zstd JSON itself,
but not the YAML, cassettes and OTLP documents the readers need: decision 0028).
The input is only ever opened for reading.
"""

from __future__ import annotations

import glob
import gzip
import io
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Final, NamedTuple

import msgspec

from harness._shared._errors import FixtureError, UsageError
from harness.scan._extras import pyarrow_parquet, yaml
from harness.scan._readers._base import Unit

__all__ = ["Malformed", "files", "open_bytes", "reread_lines", "units"]

_EXTENSIONS: Final = (".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".parquet")
_COMPRESSED: Final = (".gz", ".zst", ".zstd")
_SKIP: Final = frozenset({"node_modules", "__pycache__", "site-packages", "venv", ".venv"})
_GZIP: Final = b"\x1f\x8b"
_ZSTD: Final = b"\x28\xb5\x2f\xfd"
_PARQUET: Final = b"PAR1"
_BUFFER: Final = 1 << 20  # a trace line is often several KB: read the file in large pieces


class Malformed(NamedTuple):
    """A unit that could not be decoded: where, and why."""

    where: str
    problem: str


def files(paths: Sequence[str]) -> list[Path]:
    """Every trace file the paths name, in a stable order (see the module doc)."""
    found: list[Path] = []
    for given in paths:
        if any(ch in given for ch in "*?["):
            matched = sorted(Path(p) for p in glob.glob(given, recursive=True))
            if not matched:
                raise UsageError(f"{given}: no file matches this pattern (check the glob)")
            for path in matched:
                found += _under(path) if path.is_dir() else [path]
            continue
        path = Path(given)
        if not path.exists():
            raise FixtureError(path, "does not exist", "check the path")
        found += _under(path) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


def _under(folder: Path) -> list[Path]:
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file()
        and _trace_name(path.name)
        and not any(
            part.startswith(".") or part in _SKIP for part in path.relative_to(folder).parts
        )
    )


def _trace_name(name: str) -> bool:
    lower = name.lower()
    for suffix in _COMPRESSED:
        lower = lower.removesuffix(suffix)
    return lower.endswith(_EXTENSIONS)


def open_bytes(path: Path) -> IO[bytes]:
    """The file's decompressed bytes, as a stream (gzip and zstd by their magic bytes)."""
    try:
        handle: IO[bytes] = open(path, "rb", buffering=_BUFFER)  # noqa: SIM115 - closed by the caller
    except OSError as error:
        raise FixtureError(path, f"cannot be read: {error.strerror or error}") from None
    head = handle.peek(4)[:4] if isinstance(handle, io.BufferedReader) else b""
    if head.startswith(_GZIP):
        return gzip.GzipFile(fileobj=handle)  # type: ignore[return-value]
    if head.startswith(_ZSTD):
        try:
            import zstandard
        except ImportError:
            handle.close()
            raise UsageError(
                f"{path}: is zstd-compressed and the zstandard module is missing: pip install"
                " 'prompt-cache-harness[scan]'"
            ) from None
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(handle))
    return handle


def _kind(path: Path, head: bytes) -> str:
    name = path.name.lower()
    for suffix in _COMPRESSED:
        name = name.removesuffix(suffix)
    if head.startswith(_PARQUET) or name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    if name.endswith((".jsonl", ".ndjson")):
        return "lines"
    return "json"


def units(path: Path) -> Iterator[Unit | Malformed]:
    """The file's units (see the module doc)."""
    with open_bytes(path) as stream:
        head = stream.peek(4)[:4] if hasattr(stream, "peek") else b""
        kind = _kind(path, head)
        if kind == "parquet":
            yield from _parquet(path)
        elif kind == "lines":
            yield from _lines(path, stream)
        else:
            data = _read_all(path, stream)
            if kind == "yaml":
                yield _yaml(path, data)
            else:
                yield from _json(path, data)


def _read_all(path: Path, stream: IO[bytes]) -> bytes:
    try:
        return stream.read()
    except (OSError, EOFError) as error:
        raise FixtureError(path, f"cannot be decompressed: {error}", "is it truncated?") from None


def _lines(path: Path, stream: IO[bytes]) -> Iterator[Unit | Malformed]:
    """One unit a line, decoded when a reader asks (a line that is not JSON is then a bad
    record, named and counted)."""
    offset = 0
    number = 0
    name = str(path)
    try:
        for line in stream:
            number += 1
            if line.strip():
                yield Unit.line(line, f"{name}:{number}", offset)
            offset += len(line)
    except (OSError, EOFError) as error:
        yield Malformed(f"{path}:{number + 1}", f"cannot be decompressed: {error}")


def _json(path: Path, data: bytes) -> Iterator[Unit | Malformed]:
    try:
        value = msgspec.json.decode(data.removeprefix(b"\xef\xbb\xbf"))
    except msgspec.DecodeError as error:
        if "trailing characters" in str(error):  # JSON lines in a .json file
            yield from _lines(path, io.BytesIO(data))
            return
        yield Malformed(str(path), f"not JSON ({error})")
        return
    except RecursionError:
        yield Malformed(str(path), "nests too deeply to be read")
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield Unit(item, f"{path}#{index + 1}")
    else:
        yield Unit(value, str(path))


def _yaml(path: Path, data: bytes) -> Unit | Malformed:
    module = yaml()
    loader: Any = getattr(module, "CSafeLoader", module.SafeLoader)  # a safe loader, C if built
    try:
        return Unit(module.load(data, Loader=loader), str(path))
    except module.YAMLError as error:
        return Malformed(str(path), f"not YAML ({' '.join(str(error).split())[:200]})")


def _parquet(path: Path) -> Iterator[Unit | Malformed]:
    parquet = pyarrow_parquet()
    try:
        source = parquet.ParquetFile(path)
    except Exception as error:  # pyarrow raises its own kinds: an unreadable file is bad input
        raise FixtureError(path, f"is not a readable Parquet file ({error})") from None
    row = 0
    for batch in source.iter_batches(batch_size=4096):
        for record in batch.to_pylist():
            row += 1
            yield Unit(record, f"{path}#{row}")


def reread_lines(path: Path, spans: Sequence[tuple[int, int]]) -> dict[int, bytes]:
    """The bytes of some lines again, by their offset (the judge asks for the pairs it must
    compare byte for byte): a plain file is read at each offset; a compressed one is decompressed
    once, up to the last line asked for, keeping the lines asked for on the way."""
    wanted = sorted(set(spans))
    found: dict[int, bytes] = {}
    with open_bytes(path) as stream:
        raw = getattr(stream, "raw", None)
        if isinstance(stream, io.BufferedReader) and isinstance(raw, io.FileIO):
            fd = raw.fileno()
            for offset, length in wanted:  # a plain file: each line where it is
                found[offset] = os.pread(fd, length, offset)
            return found
        at = 0
        for offset, length in wanted:  # a compressed stream: one pass, in order
            _skip(stream, offset - at)
            data = stream.read(length)
            found[offset] = data
            at = offset + len(data)
    return found


def _skip(stream: IO[bytes], count: int) -> None:
    while count > 0:
        chunk = stream.read(min(count, 1 << 20))
        if not chunk:
            return
        count -= len(chunk)
