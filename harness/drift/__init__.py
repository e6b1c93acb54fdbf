"""The drift report: what moved between two request headers, and what it costs in prompt cache.

- `harness.drift._compare`: the comparator (`compare` for cache views, `compare_values` for any
  two JSON-able values);
- `harness.drift._locate`: the first differing byte, the JSON pointer that agrees with it, and an
  excerpt around it;
- `harness.drift._tools`: the tool-list diff (reorder, content, added, removed, provenance);
- `harness.drift._hints`: volatile content that breaks a cache on every run;
- `harness.drift._report` and `harness.drift._render`: the report struct and its text, Markdown
  and JSON forms.

Comparisons take cache views (`harness.CacheView`, `harness.view_of_header`, ...), exported by
`harness` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness._shared._lazy import LazyExports

if TYPE_CHECKING:
    from harness._shared._printer import MARKER
    from harness.drift._compare import compare, compare_values
    from harness.drift._locate import first_byte_difference, first_difference
    from harness.drift._parts import Reproduce
    from harness.drift._printed import volatile_hints
    from harness.drift._report import DriftReport

# Each public name and the module it lives in: imported when first asked for, so a module that
# needs one part (the cache model's words, `_wording`) does not import the comparator and the
# hints' patterns (`harness cost` compares nothing).
_EXPORTS = {
    "MARKER": "harness._shared._printer",
    "DriftReport": "harness.drift._report",
    "Reproduce": "harness.drift._parts",
    "compare": "harness.drift._compare",
    "compare_values": "harness.drift._compare",
    "first_byte_difference": "harness.drift._locate",
    "first_difference": "harness.drift._locate",
    "volatile_hints": "harness.drift._printed",
}

__all__ = [
    "MARKER",
    "DriftReport",
    "Reproduce",
    "compare",
    "compare_values",
    "first_byte_difference",
    "first_difference",
    "volatile_hints",
]


_LAZY = LazyExports("harness.drift", _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    return _LAZY.get(name)


def __dir__() -> list[str]:
    return _LAZY.dir()
