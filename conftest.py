"""Root conftest: pytester for plugin tests, the async backend for anyio-marked tests, and an
environment without CI variables.

The suite runs under CI (`.ci/run` sets `CI=true`), and the harness refuses every write when a CI
variable is set. A test's outcome must not depend on where it runs, so the session starts with the
CI variables removed (session scope, so module-scoped fixtures see it too); the tests of the CI gate
set them themselves with `monkeypatch.setenv`. Subprocesses and pytester runs inherit this.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness._ci import CI_VARIABLES

pytest_plugins = ["pytester"]

# Read by the plugin's CI gate besides the variables that forbid writing.
CI_OUTPUTS = ("GITHUB_STEP_SUMMARY",)


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
