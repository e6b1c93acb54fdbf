"""Tests of `harness.capture`: capture sessions, cassettes, interception, prefix chains."""
