"""`header_snapshot`: a syrupy extension that stores a header's exact bytes.

One binary file per snapshot, holding exactly the bytes the header encodes to (no key sorting,
no pretty-printing: key order and whitespace are part of what a provider caches). Because it is a
syrupy extension, `--snapshot-update` and syrupy's unused-snapshot report apply as usual. Where
syrupy would show a line diff, it shows the drift report instead. Under CI it neither writes nor
deletes: `--snapshot-update` would otherwise let syrupy remove `.header.json` files it finds
unused, so a deletion under CI is refused and listed (`refused_deletions`); the plugin reports
it and fails the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
from syrupy.data import SnapshotCollection
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from harness._shared._ci import detect_ci, refuse_writes_under_ci
from harness._shared._views import CacheView, canonical_bytes
from harness.agent._header import Header
from harness.agent._llm import Request
from harness.drift._compare import compare, compare_values
from harness.prove._builds import view_of_value


def header_bytes_of(data: Any) -> bytes:
    """The exact bytes of a header in any of the forms the harness accepts."""
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, CacheView):
        return canonical_bytes(data)
    if isinstance(data, Header | Request | dict | list | tuple):
        return msgspec.json.encode(data)
    raise TypeError(
        f"header_snapshot takes a Header, Request, CacheView, request body or bytes, "
        f"not {type(data).__name__}"
    )


class HeaderSnapshotExtension(SingleFileSnapshotExtension):
    file_extension = "header.json"
    _write_mode = WriteMode.BINARY

    def serialize(self, data: Any, **_: Any) -> bytes:
        return header_bytes_of(data)

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        try:
            report = compare(
                view_of_value(bytes(snapshot_data)),
                view_of_value(bytes(serialized_data)),
                label_a="snapshot",
                label_b="received",
            )
        except (msgspec.DecodeError, TypeError, ValueError):
            report = compare_values(
                bytes(snapshot_data).decode("utf-8", "replace"),
                bytes(serialized_data).decode("utf-8", "replace"),
                label_a="snapshot",
                label_b="received",
            )
        yield from report.to_text().splitlines()

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        refuse_writes_under_ci(
            f"write header snapshot {snapshot_collection.location}",
            "run pytest --snapshot-update locally and commit the file",
        )
        super().write_snapshot_collection(
            snapshot_collection=snapshot_collection, name_order=name_order
        )

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        found = detect_ci()
        if found is not None:  # syrupy would delete it: CI never deletes either
            refused_deletions.append((snapshot_location, found.describe()))
            return
        super().delete_snapshots(snapshot_location=snapshot_location, snapshot_names=snapshot_names)


# Header snapshots syrupy asked to delete under CI, and the CI variable found; the plugin reports
# them at the end of the run and fails it.
refused_deletions: list[tuple[str, str]] = []
