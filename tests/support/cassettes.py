"""Cassettes as a test reads them: whole requests, whatever the file's format.

Format 3 stores a request that extends an earlier one as its edits; a test that reads (or edits
by hand) what a request held decodes the file as the harness does, whole, and may write it back
so: a format 3 file may hold any request whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from harness.capture import CaptureFile


def whole_document(cassette: Path | bytes) -> dict[str, Any]:
    """The cassette as a JSON object, every request whole (`json` or `text`, never edits)."""
    data = cassette if isinstance(cassette, bytes) else cassette.read_bytes()
    document: dict[str, Any] = json.loads(
        msgspec.json.encode(msgspec.json.decode(data, type=CaptureFile))
    )
    return document
