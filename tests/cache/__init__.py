"""Tests of the cache model (`harness/cache/`): the one replay, the gate's verdict, the layout."""
