"""Tests of the shared bottom of `harness/` (`harness/_shared/`: `_ci`, `_files`, `_secrets`,
...)."""
