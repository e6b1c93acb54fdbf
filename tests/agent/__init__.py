"""Tests of `harness.agent`, the reference agent runtime (the system under test)."""
