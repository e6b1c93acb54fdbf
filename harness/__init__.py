"""harness: prove an LLM agent's request headers are byte-stable.

`harness.prove_stable(build, units, permutations=N, seed=...)` is the entry point for agents built
on the provider SDKs; `harness.agent` is the reference runtime; the pytest plugin lives in
`harness.pytest_plugin`. Names are imported on first use, so `import harness` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "prove_stable": "harness.prove._stable",
    "HeaderDrift": "harness.prove._stable",
    "CaptureSession": "harness.capture",
    "CaptureConfig": "harness.capture",
    "current_session": "harness.capture",
    "check_prefix_chain": "harness.capture._prefix",
    "prefix_chain": "harness.capture._prefix",
    "view_of_body": "harness.providers",
    "register_provider": "harness.providers",
    "compare": "harness.drift",
    "DriftReport": "harness.drift",
    "CacheView": "harness._views",
    "HarnessError": "harness._errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(import_module(module), name)
