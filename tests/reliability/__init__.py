"""Reliability and security suite (issue 7): bad input, atomic writes, names, secrets, fuzzing."""
