"""What `harness diff` compares: two requests files, two tool pins, or two request bodies.

Both files are read strictly. Two `harness/requests` files are compared request by request (the
first that differs, as a cache view: placeholders and message digests compare as they are); two
tool pins as the tools of their first header; anything else, such as two provider request bodies,
as plain JSON values. Big files stay cheap: each is read once, and two bodies over
`harness.drift.far.FAR` bytes are compared member by member rather than encoded whole (two 50 MB
bodies: about a second, and the memory of the two values).
"""

from __future__ import annotations

import gc
from pathlib import Path

import msgspec

from harness.agent.session import Header, LlmConfig
from harness.drift import DriftReport, compare, compare_values
from harness.errors import FixtureError
from harness.files import decode, read_checked, with_position
from harness.fixture import RequestsFile, ToolSchemasPin
from harness.views import view_of_header, view_of_request

__all__ = ["diff_files"]


_HARNESS_KINDS = ("harness/requests", "harness/tool-schemas")


def _load_json(path: Path) -> tuple[object, bytes | None, int]:
    """The file decoded as JSON, and its bytes when it is a harness file (decoded again, strictly,
    as its kind); other files' bytes are let go at once (two 50 MB bodies are big enough)."""
    data = read_checked(path, missing_hint="check the path")
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise FixtureError(path, f"is not valid JSON: {with_position(data, str(error))}") from None
    except RecursionError:
        raise FixtureError(path, "nests too deeply to be read") from None
    kind = value.get("kind") if isinstance(value, dict) else None
    return value, data if kind in _HARNESS_KINDS else None, len(data)


def diff_files(a: Path, b: Path) -> DriftReport:
    """The drift report from file `a` to file `b`."""
    collecting = gc.isenabled()
    gc.disable()  # two big decoded values make every full collection walk millions of objects
    try:
        return _diff(a, b)
    finally:
        if collecting:
            gc.enable()


def _diff(a: Path, b: Path) -> DriftReport:
    (raw_a, data_a, size_a), (raw_b, data_b, size_b) = _load_json(a), _load_json(b)
    kinds = {x.get("kind") if isinstance(x, dict) else None for x in (raw_a, raw_b)}
    if kinds == {"harness/requests"} and data_a is not None and data_b is not None:
        ra = decode(data_a, RequestsFile, a).requests
        rb = decode(data_b, RequestsFile, b).requests
        for x, y in zip(ra, rb, strict=False):
            if msgspec.json.encode(x) != msgspec.json.encode(y):
                return compare(
                    view_of_request(x), view_of_request(y), label_a=str(a), label_b=str(b)
                )
        return compare_values(len(ra), len(rb), label_a=str(a), label_b=str(b))
    if kinds == {"harness/tool-schemas"} and data_a is not None and data_b is not None:
        pa = decode(data_a, ToolSchemasPin, a)
        pb = decode(data_b, ToolSchemasPin, b)
        config = LlmConfig("pinned", "pinned")
        return compare(
            view_of_header(Header(config=config, tools=pa.initial)),
            view_of_header(Header(config=config, tools=pb.initial)),
            label_a=str(a),
            label_b=str(b),
        )
    return compare_values(
        raw_a, raw_b, label_a=str(a), label_b=str(b), decoded=True, size=max(size_a, size_b)
    )
