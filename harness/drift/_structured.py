"""The structured diff of a drift report: deepdiff, on a bounded part of the two values.

deepdiff on two 50 MB values takes a minute and gigabytes. Here it runs on the smallest part of
the two values, along the path of their first difference, that fits `DEEPDIFF_INPUT` bytes a side
(the whole values when they fit, with tools keyed by name so a reorder reads as one change); its
paths still start at the whole value. When even the first differing value is too big, the diff
is that value's change alone (the region around its first difference), and a note says so. The
result is raw: its keys and strings are redacted and bounded when the report is printed
(`harness.drift._printed`).

A caller that never shows the structured diff turns it off for what it runs
(`without_structured_diff()`): `harness scan` judges thousands of breaks and prints their
verdict, place and cost, never a deepdiff, which is most of a break's cost (about 50 ms each).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import msgspec

from harness._shared._views import WINDOW_REACH, common_prefix, encode_json
from harness.drift._locate import resolve
from harness.drift._tools import tools_by_name
from harness.drift._wording import ABSENT

__all__ = ["DEEPDIFF_INPUT", "structured_diff", "without_structured_diff"]

DEEPDIFF_INPUT: Final = 256 * 1024  # bytes a side the structured diff is run on, at most
_WANTED: ContextVar[bool] = ContextVar("structured_diff_wanted", default=True)
_SKIPPED: Final = {"note": "structured diff not made (its caller shows none)"}


@contextmanager
def without_structured_diff() -> Iterator[None]:
    """Reports made inside carry no structured diff (a note says so)."""
    token = _WANTED.set(False)
    try:
        yield
    finally:
        _WANTED.reset(token)


def structured_diff(a: Any, b: Any, path: Sequence[str], size: int) -> dict[str, Any]:
    """The structured diff of the smallest part along `path` (the first difference) that fits
    DEEPDIFF_INPUT bytes a side; the whole values when they fit."""
    if not _WANTED.get():
        return dict(_SKIPPED)
    at: list[str] = []
    if size > DEEPDIFF_INPUT:
        for token in path:
            next_a, next_b = resolve(a, [token]), resolve(b, [token])
            if next_a is ABSENT or next_b is ABSENT:
                break  # a member one side lacks: its parent is the smallest part that differs
            at.append(f"[{token}]" if isinstance(a, list) else f"[{token!r}]")
            a, b = next_a, next_b
            size = max(_encoded_size(a), _encoded_size(b))
            if size <= DEEPDIFF_INPUT:
                break
    where = "root" + "".join(at)
    if size > DEEPDIFF_INPUT:  # even the first differing value is too big to diff structurally
        return {
            "values_changed": {where: _changed(a, b)},
            "note": (
                f"deepdiff skipped: the first differing value is {size:,} bytes, over the"
                f" {DEEPDIFF_INPUT:,}-byte limit; shown around its first difference"
            ),
        }
    from deepdiff import DeepDiff  # imported on first drift: it is slow to import

    try:
        diff = DeepDiff(
            tools_by_name(a) if not at else a, tools_by_name(b) if not at else b, verbose_level=2
        )
        decoded = msgspec.json.decode(diff.to_json())
    except Exception as error:  # a diff that cannot be made must not hide the report
        return {"error": f"deepdiff failed: {error!r}"}
    found: dict[str, Any] = decoded if isinstance(decoded, dict) else {"result": decoded}
    return _rooted(found, where) if at else found


def _encoded_size(value: Any) -> int:
    """The size of `value`'s encoding (a long string: a lower bound, without encoding it)."""
    if value is ABSENT:
        return 0
    if isinstance(value, str) and len(value) > DEEPDIFF_INPUT:
        return len(value) + 2
    return len(encode_json(value))


def _rooted(diff: dict[str, Any], where: str) -> dict[str, Any]:
    """deepdiff's paths, which start at the part it compared, as paths from the whole value."""

    def path(key: Any) -> Any:
        return where + key[4:] if isinstance(key, str) and key.startswith("root") else key

    return {
        change: {path(k): v for k, v in entries.items()}
        if isinstance(entries, dict)
        else [path(k) for k in entries]
        if isinstance(entries, list)
        else entries
        for change, entries in diff.items()
    }


def _changed(a: Any, b: Any) -> dict[str, Any]:
    """A values_changed entry for two values too big to show whole: the region around their
    first difference (strings, raw: the printer cuts them), or their size."""
    if isinstance(a, str) and isinstance(b, str):
        start = max(common_prefix(a, b) - WINDOW_REACH, 0)
        return {
            "old_value": a[start : start + 2 * WINDOW_REACH],
            "new_value": b[start : start + 2 * WINDOW_REACH],
        }
    return {
        "old_value": f"({_encoded_size(a):,} bytes)",
        "new_value": f"({_encoded_size(b):,} bytes)",
    }
