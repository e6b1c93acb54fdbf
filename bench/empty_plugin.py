"""An empty pytest plugin: what `bench.startup` loads in the runs without the harness, so
that both runs pay pytest's own cost of loading a plugin named with `-p`."""
