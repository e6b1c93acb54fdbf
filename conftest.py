"""Root conftest: the suite in parallel by default, pytester for plugin tests, the async backend
for anyio-marked tests, and an environment without CI variables.

The suite runs under CI (`.ci/run` sets `CI=true`), and the harness refuses every write when a CI
variable is set. A test's outcome must not depend on where it runs, so the session starts with the
CI variables removed (session scope, so module-scoped fixtures see it too); the tests of the CI gate
set them themselves with `monkeypatch.setenv`. Subprocesses and pytester runs inherit this.

`pytest` runs on pytest-xdist's workers (`-n auto --dist worksteal`) unless the command line says
how many (`-n 0` for one process, or `-p no:xdist`). It is set here rather than in `addopts`, where
`-n` would break `pytest -p no:xdist`; and only for runs of this repository: a generated project
(pytester) has its own rootdir and never loads this file, and xdist's workers skip the hook.
"""

from __future__ import annotations

from collections.abc import Iterator

# pytester's in-process runs drop from `sys.modules` every module first imported during the run.
# pydantic imports `pydantic.root_model` lazily, on the first `pydantic.RootModel`, and keeps the
# class: when an inner run (the harness pricing a cassette through genai-prices) was the first,
# a later test that builds `RootModel[...]` at module level (pydantic-ai, litellm importing
# theirs) fails with KeyError 'pydantic.root_model'. Imported here, it predates every inner run.
import pydantic.root_model  # noqa: F401  (genai-prices, a base dependency, brings it)
import pytest

from harness._shared._ci import CI_VARIABLES

pytest_plugins = ["pytester"]

# Read by the plugin's CI gate besides the variables that forbid writing.
CI_OUTPUTS = ("GITHUB_STEP_SUMMARY",)

# How xdist hands out tests when it runs by default. The durations run from a millisecond to half
# a minute (a pytest subprocess starting its own workers, a wheel build): `worksteal` moves queued
# tests from a busy worker to an idle one, where `load` can leave one worker alone on a long tail.
# No test needs a group of its own (`loadgroup`): none shares a file, a port or a process-wide
# state with another.
DIST = "worksteal"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`-n auto --dist worksteal` when pytest-xdist is loaded and no `-n` was given (before xdist
    reads the options). A worker never starts workers of its own."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if config.option.numprocesses is None:
        config.option.numprocesses = "auto"
    if config.option.dist == "no":
        config.option.dist = DIST


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_ci() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in (*CI_VARIABLES, *CI_OUTPUTS):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, with pytest-asyncio's loop scope settled for its projects (they have no ini of
    ours, and pytest-asyncio warns in every run without one). Set after pytester cleared
    PYTEST_ADDOPTS, so in-process and subprocess runs both see it."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")
    return pytester


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
