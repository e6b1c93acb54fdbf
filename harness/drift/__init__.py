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

from harness._shared._printer import MARKER
from harness.drift._compare import compare, compare_values
from harness.drift._locate import first_byte_difference, first_difference
from harness.drift._parts import Reproduce
from harness.drift._printed import volatile_hints
from harness.drift._report import DriftReport

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
