"""What every test under `tests/` shares: the support package's helpers, and the fixtures.

The helpers live in `tests/support/` as modules, since test modules import them at collection
(parametrize ids, module constants) and the PYTHONHASHSEED children of `prove_stable` import
test modules by name, never this conftest: `support.paths` (the repository's folders and a copy of
the shipped project), `support.stand_ins` (the stand-in provider APIs), `support.sdk` (what the
capture tests send through the real SDKs), `support.inner` (`inner_pytest`, the one runner of an
inner pytest on a generated project) and `support.pointer_oracle`. Their `assert`s are rewritten
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

from tests.support.paths import copy_project  # noqa: E402

# Every module of the harness packages an inner pytest run of a generated project may import when
# it proves, captures, prices and reports (deepdiff, under the drift report, brings numpy, pandas
# and pyarrow: over a second), imported once per test process here. pytester drops from
# `sys.modules` every module first imported during a run: each in-process run imported them all
# again, and worse, a msgspec type of a dropped module (`harness.cost._registry`'s price rows,
# imported lazily) could no longer resolve its annotations in the next run (`NameError: name
# 'datetime' is not defined`, by test order). Whole packages, submodules included: the packages
# import their parts lazily.
INNER_RUN_IMPORTS = (
    "_shared",
    "agent",
    "cache",
    "capture",
    "cost",
    "drift",
    "prove",
    "providers",
    "pytest_plugin",
    "rules",
    "scenarios",
)
for _package in INNER_RUN_IMPORTS:
    _found = importlib.import_module(f"harness.{_package}")
    for _module in pkgutil.walk_packages(_found.__path__, f"{_found.__name__}."):
        importlib.import_module(_module.name)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the shipped fixtures and pins as the working folder, so a test may edit and
    rewrite them."""
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
