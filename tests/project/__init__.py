"""Whole-project tests: the wheel, dependencies, examples, frameworks, bench and CI hooks."""
