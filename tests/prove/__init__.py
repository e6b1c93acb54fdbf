"""Tests of `harness.prove`: `prove_stable`, its builds, hash-seed runs and perturbation."""
