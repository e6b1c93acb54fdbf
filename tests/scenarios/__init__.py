"""Tests of `harness.scenarios`: running, recording, replaying and pinning scenarios."""
