"""Tests of `harness.providers`: request splits, cache settings and the provider registry."""
