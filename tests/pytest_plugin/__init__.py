"""Tests of `harness.pytest_plugin`, driven through pytester as a user's project uses it."""
