"""Production traces judged by the cache model: `harness scan`.

Layout (data flows down):
- `_readers/`: one registered module per trace format (OTel GenAI, OpenInference, Langfuse,
  LiteLLM, Helicone, Bedrock, proxy JSONL, the harness's cassettes, vcrpy and pydantic-ai
  cassettes), each turning a record into a `TraceRecord` (`_record.py`);
- `_sources.py` (paths, decompression, units of a file), `_keys.py` (dotted keys, times),
  `_read.py` (a file to rows), `_digest.py` (the digest tier's keys), `_markers.py` (cache
  markers set aside from JSON text), `_conversation.py` (a conversation's running digests, and
  the memory that extends them turn by turn), `_table.py` (the scan table's columns);
- `_engines.py`: DuckDB (embedded, the default) and Dask (beyond one machine), which only read,
  partition and call the judge;
- `_tier.py` (the digest tier, vectorised), `_bytes.py` (a pair's bytes read again) and
  `_judge.py`, the one judge and the scan's only door to the cache model;
- `_result.py` (the result, ordered), `_render.py`, `_sarif.py`, `_html.py` (the outputs),
  `_run.py` (one scan), `_progress.py`, `_extras.py` (the optional libraries).
docs/scan.md says what each format gives, how sure each finding is, and the limits.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Imported on first use: `harness scan --help` and the readers need neither numpy nor pyarrow,
# and a missing extra is one line when a scan starts (harness.scan._extras).
_EXPORTS = {
    "BadRecord": "harness.scan._readers",
    "Counters": "harness.scan._record",
    "Finding": "harness.scan._result",
    "Reader": "harness.scan._readers",
    "TraceRecord": "harness.scan._record",
    "Unit": "harness.scan._readers",
    "reader_named": "harness.scan._readers",
    "readers": "harness.scan._readers",
    "register_reader": "harness.scan._readers",
    "unregister_reader": "harness.scan._readers",
    "Options": "harness.scan._read",
    "ScanResult": "harness.scan._result",
    "Settings": "harness.scan._run",
    "markdown": "harness.scan._render",
    "render_html": "harness.scan._html",
    "sarif": "harness.scan._sarif",
    "scan": "harness.scan._run",
    "text": "harness.scan._render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.scan' has no attribute {name!r}")
    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
