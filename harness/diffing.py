"""What `harness diff` compares: two requests files, two tool pins, or two request bodies.

Both files are read strictly. Two `harness/requests` files are compared request by request (the
first that differs, as a cache view: placeholders and message digests compare as they are); two
tool pins as the tools of their first header; anything else, such as two provider request bodies,
as plain JSON values.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from harness.agent.session import Header, LlmConfig
from harness.drift import DriftReport, compare, compare_values
from harness.errors import FixtureError
from harness.files import decode, read_checked, with_position
from harness.fixture import RequestsFile, ToolSchemasPin
from harness.views import view_of_header, view_of_request

__all__ = ["diff_files"]


def _load_json(path: Path) -> object:
    data = read_checked(path, missing_hint="check the path")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise FixtureError(path, f"is not valid JSON: {with_position(data, str(error))}") from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be read") from None


def diff_files(a: Path, b: Path) -> DriftReport:
    """The drift report from file `a` to file `b`."""
    raw_a, raw_b = _load_json(a), _load_json(b)
    kinds = {x.get("kind") if isinstance(x, dict) else None for x in (raw_a, raw_b)}
    if kinds == {"harness/requests"}:
        ra = decode(a.read_bytes(), RequestsFile, a).requests
        rb = decode(b.read_bytes(), RequestsFile, b).requests
        for x, y in zip(ra, rb, strict=False):
            if msgspec.json.encode(x) != msgspec.json.encode(y):
                return compare(
                    view_of_request(x), view_of_request(y), label_a=str(a), label_b=str(b)
                )
        return compare_values(len(ra), len(rb), label_a=str(a), label_b=str(b))
    if kinds == {"harness/tool-schemas"}:
        pa = decode(a.read_bytes(), ToolSchemasPin, a)
        pb = decode(b.read_bytes(), ToolSchemasPin, b)
        config = LlmConfig("pinned", "pinned")
        return compare(
            view_of_header(Header(config=config, tools=pa.initial)),
            view_of_header(Header(config=config, tools=pb.initial)),
            label_a=str(a),
            label_b=str(b),
        )
    return compare_values(raw_a, raw_b, label_a=str(a), label_b=str(b))
