"""One typed decode for what the harness wrote (`harness._shared._files.decode`): the fast path for
a file
that opens as the harness writes it gives what the strict decode gives, errors included.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from harness._shared import _files as files
from harness._shared._errors import FixtureError
from harness.scenarios._formats import LogFile

# -- loading: one typed decode for what the harness wrote ----------------------------------------


def _decoded_or_error(data: bytes) -> Any:
    try:
        return files.decode(data, LogFile, "log.json")
    except FixtureError as error:
        return f"FixtureError: {error}"


_WRITTEN = files.encode(LogFile(scenario="s", registration_order=("a",)))


@pytest.mark.parametrize(
    "data",
    [
        _WRITTEN,
        _WRITTEN.replace(b'"scenario": "s"', b'"scenario": "s",\n  "format": 2'),  # last counts
        _WRITTEN.replace(b'"scenario": "s"', b'"scenario": "s",\n  "kind": "harness/answers"'),
        _WRITTEN.replace(b'"scenario": "s"', b'"scenario": "s",\n  "extra": 1'),
        _WRITTEN.replace(b'"scenario": "s"', b'"scenario": 3'),
        _WRITTEN[:-8],  # truncated
        _WRITTEN.replace(b'"format": 1', b'"format": 2'),  # another version: the slow path
        _WRITTEN.replace(b'"harness/log"', b'"harness/answers"'),  # another kind
        _WRITTEN.replace(b'"scenario": "s"', b'"scenario": "\xff"'),  # not UTF-8
        msgspec.json.format(_WRITTEN, indent=0),  # written by hand: the slow path
    ],
    ids=[
        "written",
        "repeated format",
        "repeated kind",
        "unknown field",
        "wrong type",
        "truncated",
        "other version",
        "other kind",
        "not utf-8",
        "compact",
    ],
)
def test_decoding_what_the_harness_wrote_is_the_strict_decode(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _decoded_or_error(data)
    monkeypatch.setattr(
        files, "_opening", lambda tag, version: b"\0"
    )  # no file opens so: the slow path
    assert fast == _decoded_or_error(data)


def test_a_repeated_format_key_is_refused_on_the_fast_path_too() -> None:
    """The bug the format check exists for: the typed decode alone takes the last "format"."""
    data = _WRITTEN.replace(b'"scenario": "s"', b'"scenario": "s",\n  "format": 2')
    assert data.startswith(files._opening("harness/log", 1))
    assert msgspec.json.decode(data, type=LogFile).format == 2  # what a bare decode accepts
    with pytest.raises(FixtureError, match="has format version 2"):
        files.decode(data, LogFile, "log.json")
