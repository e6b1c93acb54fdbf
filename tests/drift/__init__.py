"""Tests of `harness.drift`: the drift report, its pointers, hints and renderings."""
