"""The prove wing: `prove_stable` on a user's unmodified build, and what it perturbs.

`_stable` is the proof (runs, orders, the verdict); `_builds` runs a build once and observes the
header it produced; `_run_diff` pairs two runs' requests and raises `HeaderDrift`; `_hashseed`
re-runs a build in child processes under other `PYTHONHASHSEED`s; `perturb/` applies each run's
order to asyncio, thread pools, folder listings and entry points and names the cause. The public
names (`prove_stable`, `HeaderDrift`) are exported by `harness`.
"""
