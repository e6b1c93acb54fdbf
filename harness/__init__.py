"""harness: prove an LLM agent's request headers are byte-stable, and keep them so in CI.

General layout (each wing one pipeline; `_`-prefixed modules are private):
  agent/          the reference agent runtime (SPEC part A); imports nothing else from harness
  scenarios/      its pipeline: run, record, formats, validation, replay, pins, shuffle, check, demo
  prove/          prove_stable on unmodified code; perturb/ holds the sources of order it moves
  capture/        SDK traffic: interception, cassettes, matching, the prefix-chain gate
  providers/      one registered module per provider: which requests, cache order, hit signal
  drift/          the comparator and the drift report (raw values; redaction at the printer)
  rules/          the providers' cache rules on requests: the rule engine, harness lint
  pytest_plugin/  hooks, fixtures, markers, the run state, the summary; cli/: `harness`
  _views _reasons _errors _files _paths _secrets _printer _ci ...   the shared bottom
Data flows one way: runtime events -> recorder -> fixture -> replay -> drift report, and
client -> capture -> cassette -> providers -> prefix chain -> drift report.

The public names live in six faces, each name in one: `harness` (below: the proof, the record
mode, the cache view, `canonical_tools`, the errors), `harness.capture`, `harness.providers`,
`harness.drift`, `harness.rules` and `harness.agent`. Names are imported on first use, so
`import harness` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    # the proof
    "prove_stable": "harness.prove._stable",
    "StabilityResult": "harness.prove._stable",
    "PerturbationWarning": "harness.prove._stable",
    "HeaderDrift": "harness.prove._run_diff",
    # what a run may write
    "RecordMode": "harness._shared._record_mode",
    # the cache view, and a canonical tool list
    "CacheView": "harness._shared._views",
    "canonical_tools": "harness.rules._canonical",
    "RequestSplit": "harness._shared._views",
    "canonical_bytes": "harness._shared._views",
    "view_of_header": "harness._shared._views",
    "view_of_request": "harness._shared._views",
    # errors and warnings a user can meet
    "HarnessError": "harness._shared._errors",
    "UsageError": "harness._shared._errors",
    "FixtureError": "harness._shared._errors",
    "InvalidScenario": "harness._shared._errors",
    "WriteRefused": "harness._shared._errors",
    "WriteFailed": "harness._shared._errors",
    "UnsafeName": "harness._shared._errors",
    "SecretLeak": "harness._shared._errors",
    "HashSeedError": "harness._shared._errors",
    "CannotPerturb": "harness._shared._errors",
    "Drift": "harness._shared._errors",
    "SecretWarning": "harness._shared._files",
}

__all__ = sorted(_EXPORTS)


# (not `harness._shared._lazy`: importing `harness.agent` runs this file, and the agent imports
# nothing else from harness)
def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
