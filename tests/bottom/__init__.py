"""Tests of the flat private bottom of `harness/` (`_ci`, `_files`, `_secrets`, ...)."""
