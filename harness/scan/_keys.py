"""Dotted keys into a record, and times as the traces write them.

`--session-key`, `--request-id-key` and `--deploy-key` name a value in a record by a dotted path
(`headers.x-session-id`, `requestMetadata.session_id`, `metadata.spend_logs_metadata.deploy`,
`properties.deploy`). Trace formats put dots inside names too (`session.id` is one OpenTelemetry
attribute), so each step takes the longest run of segments that names a member: `a.b.c` finds
`{"a": {"b.c": 1}}` as well as `{"a": {"b": {"c": 1}}}`. A JSON string holding an object (LiteLLM
keeps `metadata` as text) is looked into as the object. A path that finds no value gives None;
a value that is not a string or a number is not an id, and gives None too.

`seconds(value)` reads a time: epoch seconds, milliseconds, microseconds or nanoseconds (told
apart by size, as OTLP's `startTimeUnixNano` and Langfuse's ISO strings need), or ISO 8601
with or without a zone (UTC when none).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["dig", "id_of", "seconds"]


def dig(record: Any, path: str) -> Any:
    """The value at dotted `path` in `record` (see the module doc), or None."""
    return _dig(record, path.split(".")) if path else None


def _dig(value: Any, parts: list[str]) -> Any:
    if not parts:
        return value
    if isinstance(value, str) and value[:1] in "{[":
        try:
            value = msgspec.json.decode(value)
        except msgspec.DecodeError:
            return None
    if isinstance(value, Mapping):
        for end in range(len(parts), 0, -1):
            key = ".".join(parts[:end])
            if key in value:
                found = _dig(value[key], parts[end:])
                if found is not None:
                    return found
        return None
    if isinstance(value, list) and parts[0].isdigit():
        index = int(parts[0])
        return _dig(value[index], parts[1:]) if index < len(value) else None
    return None


def id_of(value: Any) -> str | None:
    """An id as text: a non-empty string, or an integer; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, int):
        return str(value)
    return None


def seconds(value: Any) -> float | None:
    """Seconds since the epoch, from a number or an ISO 8601 string (see the module doc)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return seconds(float(text)) if text.replace(".", "", 1).isdigit() else _iso(text)
        except ValueError:
            return None
    if isinstance(value, int | float):
        number = float(value)
        for scale in (1e18, 1e15, 1e12):  # nano, micro, milli
            if abs(number) >= scale:
                return number / (scale / 1e9)
        return number
    return None


def _iso(text: str) -> float | None:
    text = text.replace(" ", "T", 1) if "T" not in text and " " in text else text
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
