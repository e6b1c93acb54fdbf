"""The drift report: what moved between two request headers, and what it costs in prompt cache.

- `harness.drift.compare`: the comparator (`compare` for cache views, `compare_values` for any
  two JSON-able values);
- `harness.drift.locate`: the first differing byte, the JSON pointer that agrees with it, and an
  excerpt around it;
- `harness.drift.tools`: the tool-list diff (reorder, content, added, removed, provenance);
- `harness.drift.hints`: volatile content that breaks a cache on every run;
- `harness.drift.report` and `harness.drift.render`: the report struct and its text, Markdown
  and JSON forms.

The cache view itself (`CacheView`, `canonical_bytes`, `view_of_header`, `view_of_request`) lives
in `harness.views` and is re-exported here, as before.
"""

from harness.drift.compare import compare, compare_values
from harness.drift.hints import volatile_hints
from harness.drift.locate import MARKER, first_byte_difference, first_difference
from harness.drift.report import DriftReport, Reproduce
from harness.views import CacheView, canonical_bytes, view_of_header, view_of_request

__all__ = [
    "MARKER",
    "CacheView",
    "DriftReport",
    "Reproduce",
    "canonical_bytes",
    "compare",
    "compare_values",
    "first_byte_difference",
    "first_difference",
    "view_of_header",
    "view_of_request",
    "volatile_hints",
]
