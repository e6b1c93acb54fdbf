"""Root conftest: pytester for plugin tests, and the async backend for anyio-marked tests."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
