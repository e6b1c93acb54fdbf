"""The test suite: one folder per wing of `harness/`, the flat bottom, the whole project, and
the promise suite (`reliability/`); `support/` holds what they share."""
