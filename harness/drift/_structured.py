"""The structured diff of a drift report: deepdiff, bounded and redacted.

deepdiff on two 50 MB values takes a minute and gigabytes. Here it runs on the smallest part of
the two values, along the path of their first difference, that fits `DEEPDIFF_INPUT` bytes a side
(the whole values when they fit, with tools keyed by name so a reorder reads as one change); its
paths still start at the whole value. When even the first differing value is too big, the diff
is that value's change alone, shown around its first difference, and a note says so. Every key
and string of the result is redacted and bounded; two changed strings keep the region around
their first difference rather than both their first characters, and deepdiff's unified diff of
two texts is remade from the redacted texts.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from harness._secrets import redact_text
from harness._views import encode_json
from harness.drift._locate import around, resolve
from harness.drift._tools import tools_by_name
from harness.drift._wording import ABSENT, bounded

__all__ = ["DEEPDIFF_INPUT", "VALUE_REACH", "structured_diff"]

DEEPDIFF_INPUT: Final = 256 * 1024  # bytes a side the structured diff is run on, at most
VALUE_REACH: Final = 240  # characters of a long changed string a report keeps


def structured_diff(a: Any, b: Any, path: Sequence[str], size: int) -> dict[str, Any]:
    """The structured diff of the smallest part along `path` (the first difference) that fits
    DEEPDIFF_INPUT bytes a side; the whole values when they fit. Redacted and bounded."""
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
        return _bounded_dict(
            {
                "values_changed": {where: _changed(a, b)},
                "note": (
                    f"deepdiff skipped: the first differing value is {size:,} bytes, over the"
                    f" {DEEPDIFF_INPUT:,}-byte limit; shown around its first difference"
                ),
            }
        )
    from deepdiff import DeepDiff  # imported on first drift: it is slow to import

    try:
        diff = DeepDiff(
            tools_by_name(a) if not at else a, tools_by_name(b) if not at else b, verbose_level=2
        )
        decoded = msgspec.json.decode(diff.to_json())
    except Exception as error:  # a diff that cannot be made must not hide the report
        return {"error": f"deepdiff failed: {error!r}"}
    if not isinstance(decoded, dict):
        decoded = {"result": decoded}
    if at:
        decoded = _rooted(decoded, where)
    return _bounded_dict(decoded)


def _bounded_dict(value: dict[str, Any]) -> dict[str, Any]:
    bounded_value = _tree(value)
    assert isinstance(bounded_value, dict)
    return bounded_value


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
    first difference (strings), or their size."""
    if isinstance(a, str) and isinstance(b, str):
        old, new = around(a, b, VALUE_REACH)
        return {"old_value": old, "new_value": new}
    return {
        "old_value": f"({_encoded_size(a):,} bytes)",
        "new_value": f"({_encoded_size(b):,} bytes)",
    }


def _unified(a: str, b: str) -> str:
    """A unified diff of two texts, as deepdiff writes it for a changed multi-line string."""
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm=""))


def _tree(value: Any, depth: int = 0) -> Any:
    """A structured diff with every key and string redacted and bounded (two changed strings
    keep the region around their first difference)."""
    if isinstance(value, dict):
        if depth > 32:
            return "…"
        old, new = value.get("old_value"), value.get("new_value")
        if isinstance(old, str) and isinstance(new, str) and "diff" in value:
            # deepdiff's unified diff of two texts, remade from the redacted texts: its context
            # lines could show the body of a private key whose first line they leave out.
            value = {**value, "diff": _unified(redact_text(old), redact_text(new))}
        if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > VALUE_REACH:
            old, new = around(old, new, VALUE_REACH)
            value = {**value, "old_value": old, "new_value": new}
        return {bounded(str(k), 300): _tree(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_tree(item, depth + 1) for item in value[:100]] + (
            [f"… {len(value) - 100} more"] if len(value) > 100 else []
        )
    if isinstance(value, str):
        return bounded(value, VALUE_REACH)
    return value
