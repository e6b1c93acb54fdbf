"""What every test under `tests/` shares: the support package's helpers, and the fixtures.

The helpers live in `tests/support/` as modules, since test modules import them at collection
(parametrize ids, module constants) and the PYTHONHASHSEED children of `prove_stable` import
test modules by name, never this conftest: `support.paths` (the repository's folders and a copy of
the shipped project), `support.stand_ins` (the stand-in provider APIs), `support.sdk` (what the
capture tests send through the real SDKs), `support.inner` (`inner_pytest`, the one runner of an
inner pytest on a generated project), `support.properties` (how many examples a property draws:
fewer in the fast loop) and `support.pointer_oracle`. Their `assert`s are rewritten
like a test's. The root `conftest.py` keeps the session free of CI variables and sets pytester up.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# Before the first import of the support package, so its asserts are rewritten too.
pytest.register_assert_rewrite("tests.support")

from tests.support import properties  # noqa: E402
from tests.support.paths import copy_project  # noqa: E402

# The harness packages an inner pytest run of a generated project imports when it proves, captures
# and reports (deepdiff, under the drift report, brings numpy, pandas and pyarrow: over a second),
# imported once per test process here. pytester drops from `sys.modules` every module first
# imported during a run, so each in-process run imported them all again; and a msgspec type of a
# dropped module could no longer resolve its annotations in the next run: the cost package's
# price rows (`harness.cost._registry`, imported lazily) failed with `NameError: name 'datetime'
# is not defined`, by test order. So the cost package is imported whole, submodules included.
# (The Dask engine's tests failing by test order with `KeyError: 'distributed'`, once blamed on
# importing every package here, came from a test entering `dask.config.set` before distributed
# was imported: `tests/scan/test_engines.py` says how.)
INNER_RUN_IMPORTS = ("agent", "cache", "capture", "cost", "drift", "prove", "providers", "rules")
for _package in INNER_RUN_IMPORTS:
    importlib.import_module(f"harness.{_package}")
_cost = importlib.import_module("harness.cost")
for _module in pkgutil.walk_packages(_cost.__path__, "harness.cost."):
    importlib.import_module(_module.name)


def pytest_configure(config: pytest.Config) -> None:
    """The fast loop (`-m "not slow"`) draws a quarter of each property's examples
    (`tests.support.properties`); set before collection imports the test modules. A property
    with no count of its own draws a quarter of hypothesis' default too."""
    properties.FAST = properties.is_fast_loop(config.getoption("markexpr", "") or "")
    if properties.FAST:
        from hypothesis import settings

        settings.register_profile("fast-loop", max_examples=properties.examples(100))
        settings.load_profile("fast-loop")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the shipped fixtures and pins as the working folder, so a test may edit and
    rewrite them."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
