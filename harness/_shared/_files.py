"""The file codec every harness file goes through: strict reads, stable writes, atomic renames.

- Reading is strict: a file is checked for size, UTF-8, `format` and `kind` before it is decoded
  into its Struct, and every failure is a `FixtureError` naming the file and the position.
- Writing is pretty JSON in wire order (never key-sorted: key order is part of the bytes a
  provider caches), ends with a newline, and is byte-identical when rewritten with the same
  content. A write goes through a temp file beside the target, fsynced, then `os.replace` and a
  folder fsync; unchanged bytes are not rewritten, and CI never writes.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any, ClassVar, Final, TypeVar

import msgspec

from harness._shared._ci import refuse_writes_under_ci
from harness._shared._errors import FixtureError, UsageError, WriteFailed
from harness._shared._paths import refuse_case_twin
from harness._shared._secrets import scan_secrets

FORMAT_VERSION = 1
MAX_FILE_BYTES = 64 * 1024 * 1024  # a file's size limit, unless its kind sets `MAX_BYTES`

T = TypeVar("T", bound="Versioned")


class Versioned(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind"):
    """Every file opens with its kind (a msgspec tag, so always written) and format version.

    A kind whose format moved on overrides `format` (the version it writes) and `READS` (every
    version it still reads as it is: a later format only adds optional fields).
    """

    READS: ClassVar[frozenset[int]] = frozenset({FORMAT_VERSION})
    # the largest file of this kind read (None: `MAX_FILE_BYTES`); a kind that grows with a
    # recording's length (a session log) sets its own, and its writer refuses what would exceed it
    MAX_BYTES: ClassVar[int | None] = None
    format: int = FORMAT_VERSION


def size_limit(kind: type[Versioned]) -> int:
    """The largest file of `kind` that is read."""
    return MAX_FILE_BYTES if kind.MAX_BYTES is None else kind.MAX_BYTES


class _Envelope(msgspec.Struct):
    """Just enough of any file to know whether it is ours and which version."""

    format: Any = msgspec.UNSET
    kind: Any = msgspec.UNSET


_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """Pretty JSON in wire order with a trailing newline: stable bytes for the same content."""
    return msgspec.json.format(_encoder.encode(value), indent=2) + b"\n"


def with_position(data: bytes, message: str) -> str:
    """msgspec's message with the line and column of the byte offset it names."""
    match = re.search(r"byte (\d+)", message)
    if match is None and "truncated" not in message:
        return message
    offset = int(match.group(1)) if match else len(data)
    if match is None:
        message = f"{message} at byte {offset}"
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"{message} (line {line}, column {column})"


@functools.cache
def _opening(tag: object, version: int) -> bytes:
    """The bytes every file of this kind opens with, as `encode` writes it."""
    kind = msgspec.json.encode(tag)
    return b'{\n  "kind": ' + kind + b',\n  "format": ' + str(version).encode() + b",\n"


@functools.cache
def _writes(kind: type[Versioned]) -> int:
    """The format version `kind` writes (its `format` field's default)."""
    return next(int(f.default) for f in msgspec.structs.fields(kind) if f.name == "format")


def decode(data: bytes, kind: type[T], path: Path | str) -> T:
    """Decode `data` strictly as `kind`; every failure is one FixtureError line naming `path`."""
    limit = size_limit(kind)
    if len(data) > limit:
        raise FixtureError(
            path, f"is {len(data):,} bytes, over the {limit:,}-byte limit", "not a fixture?"
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FixtureError(
            path, f"is not valid UTF-8 at byte {error.start}", "re-record it"
        ) from None
    expected_kind = kind.__struct_config__.tag
    version = _writes(kind)
    if data.startswith(_opening(expected_kind, version)):
        # What the harness writes opens with its kind and format: one typed decode is enough.
        # Anything else, or any failure, takes the path below, which names the problem.
        try:
            value = msgspec.json.decode(data, type=kind)
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if value.format == version:  # a repeated "format" key: the last one counts
                return value
    try:
        envelope = msgspec.json.decode(data, type=_Envelope)
    except msgspec.ValidationError as error:  # a subclass of DecodeError: it must come first
        raise FixtureError(path, f"is not a harness file: {error}") from None
    except msgspec.DecodeError as error:
        problem = (
            "is empty"
            if not data.strip()
            else f"is not valid JSON: {with_position(data, str(error))}"
        )
        raise FixtureError(
            path, problem, "truncated or corrupt; restore it from git or re-record"
        ) from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be a harness file") from None
    if envelope.kind is msgspec.UNSET or envelope.format is msgspec.UNSET:
        raise FixtureError(path, 'is not a harness file (no "format" and "kind" fields)')
    if envelope.kind != expected_kind:
        raise FixtureError(path, f"holds {envelope.kind!r}, expected {expected_kind!r}")
    known = type(envelope.format) is int and envelope.format in kind.READS
    if not known:
        *earlier, latest = (str(v) for v in sorted(kind.READS))
        reads = f"{', '.join(earlier)} and {latest}" if earlier else latest
        raise FixtureError(
            path,
            f"has format version {envelope.format!r}; this harness reads version {reads}",
            "re-record it with this version, or use the harness version that wrote it",
        )
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError as error:
        raise FixtureError(path, f"does not match the {expected_kind} format: {error}") from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be a harness file") from None


class SecretWarning(UserWarning):
    """A file the harness read holds something key-shaped (it was written before redaction?)."""


def warn_if_secret(path: Path | str, data: bytes) -> None:
    findings = scan_secrets(data)
    if findings:
        shown = "; ".join(f.describe() for f in findings[:3])
        warnings.warn(
            SecretWarning(
                f"{path} holds {len(findings)} secret-looking string(s) ({shown}); rotate the "
                "secret and re-record the file"
            ),
            stacklevel=3,
        )


_KINDS: Final = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
# Never wait on a FIFO or a terminal: a FIFO opened for reading with no writer would block forever.
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _not_regular(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def read_checked(
    path: Path, missing_hint: str = "record it first: harness record", limit: int | None = None
) -> bytes:
    """A regular file's bytes, at most `limit` (default `MAX_FILE_BYTES`); every failure is a
    FixtureError.

    Only regular files are read (a symlink is followed to one): a FIFO would block forever and a
    device such as `/dev/zero` never ends. The size limit is checked on the open file and again
    while reading, so a file that grows (or lies about its size) is refused, not read unbounded.
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise FixtureError(path, "does not exist", missing_hint) from None
    except IsADirectoryError:
        raise FixtureError(path, "is a folder, not a file") from None
    except OSError as error:
        raise FixtureError(path, f"cannot be read: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FixtureError(path, "is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FixtureError(
                path,
                f"is {_not_regular(info.st_mode)}, not a regular file",
                "the harness reads regular files only",
            )
        if info.st_size > limit:
            raise FixtureError(path, f"is {info.st_size:,} bytes, over the {limit:,}-byte limit")
        # One read of the stated size (and a byte more) is the usual case; keep reading only
        # while the file gives more, never past the limit.
        chunks = [os.read(fd, min(info.st_size, limit) + 1)]
        size = len(chunks[0])
        while chunks[-1] and size <= limit:
            chunks.append(os.read(fd, min(1 << 20, limit + 1 - size)))
            size += len(chunks[-1])
        if size > limit:
            raise FixtureError(path, f"grew over the {limit:,}-byte limit while it was read")
        return chunks[0] if len(chunks) <= 2 and not chunks[-1] else b"".join(chunks)
    except OSError as error:
        raise FixtureError(path, f"cannot be read: {error.strerror}") from None
    finally:
        os.close(fd)


def _holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file holding exactly `data` (never blocks on a FIFO)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(len(data) + 1) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def read(path: Path, kind: type[T]) -> T:
    data = read_checked(path, limit=size_limit(kind))
    value = decode(data, kind, path)
    warn_if_secret(path, data)
    return value


def write_atomic(path: Path, data: bytes) -> bool:
    """Write `data` to `path` through a temp file in the same folder and a rename.

    Returns False (and writes nothing) when the file already holds exactly `data`, so rewriting
    unchanged content leaves mtimes and git alone. Refuses under CI (WriteRefused, naming the
    variable), and beside a name that differs only in case (UnsafeName, see
    `paths.refuse_case_twin`). A write that fails (a read-only folder, a full disk) raises
    `WriteFailed` and leaves the old file as it was.
    """
    refuse_writes_under_ci(f"write {path}", "refresh fixtures locally and commit them")
    refuse_case_twin(path)
    if _holds(path, data):
        return False
    _replace(path, data)
    return True


def refuse_non_regular(path: Path, what: str = "an output file") -> None:
    """`UsageError` when `path` exists and is not a regular file (a FIFO, a device, a folder, or
    a link to one): writing there would hang on a pipe, or write into a device."""
    try:
        mode = os.stat(path).st_mode  # follows a link: what a write would reach
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(f"{path}: cannot be written ({error.strerror}); name {what}") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{path} is a folder, not a file: name {what} to write")
    if not stat.S_ISREG(mode):
        raise UsageError(
            f"{path} is {_not_regular(mode)}, not a regular file: nothing was written; name"
            f" {what} to write (a path that does not exist yet, or a regular file)"
        )


def write_output(path: Path, data: bytes) -> None:
    """Write a report the user asked for (`--html`, `--markdown`, `--sarif`): atomically, as a
    fixture is (a write cut short leaves the old report whole, and `WriteFailed` says so), but
    also under CI, where reports are made. A path that is not a regular file is refused before
    anything is written (`refuse_non_regular`); a link to a regular file is written through,
    so the link stays a link."""
    refuse_non_regular(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    _replace(target, data, make_folder=False)  # a misspelt folder is an error, not a new folder


def _replace(path: Path, data: bytes, *, make_folder: bool = True) -> None:
    """A temp file beside `path`, fsynced, renamed over it, the folder fsynced; a failure is
    `WriteFailed` and leaves the old file as it was."""
    temp: str | None = None
    try:
        if make_folder:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, mode)  # mkstemp makes 0600 files; a file keeps its (or the usual) mode
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
        temp = None
    except OSError as error:
        raise WriteFailed(path, error) from None
    finally:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (a power loss after it must not bring the old file back)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a folder; the rename is still atomic
    finally:
        os.close(fd)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write(path: Path, value: Any) -> bool:
    return write_atomic(path, encode(value))


FileContents = tuple[Path, bytes]


def write_files(files: list[FileContents]) -> list[Path]:
    """Write each file atomically; return those whose bytes changed."""
    return [path for path, data in files if write_atomic(path, data)]
