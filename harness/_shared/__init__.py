"""The shared bottom every wing may use, and which imports no wing.

- `_views`: the cache view (`CacheView`, `RequestSplit`, `canonical_bytes`) and every conversion
  of the harness's own values to it.
- `_reasons`: the cache-miss vocabulary, the word a report uses for what cost the cache.
- `_errors`: `HarnessError` and every error a user can cause, with its exit code.
- `_files`: the codec every harness file goes through: strict reads, stable writes, atomic renames.
- `_paths`: every path rule (scenarios, pins, cassettes, names that become file names).
- `_secrets`, `_secret_shapes`, `_body_text`: redaction, the key shapes and one-pass scan, and
  what a body says once decoded.
- `_printer`: everything printed passes here (redacted, cut, safe on GitHub Actions).
- `_record_mode`, `_ci`, `_distribution`: what a run may write, CI detection, the distribution's
  name and extras.

Nothing here is public: the names users reach are re-exported by `harness` and its wings.
"""
