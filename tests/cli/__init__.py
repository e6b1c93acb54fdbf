"""Tests of `harness.cli`: the commands, `harness init`, and which scenarios each one reads."""
