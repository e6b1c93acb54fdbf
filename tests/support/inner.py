"""Pytest on a generated project (pytester's folder): the one way the suite runs an inner pytest."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence

import pytest

# Installed pytest plugins no generated project uses: hypothesis' (the suite's property tests use
# hypothesis itself, not its plugin), and langsmith's, which langchain brings for the framework
# tests (the outer run disables it in `addopts` too).
UNUSED_PLUGINS = ("hypothesispytest", "langsmith_plugin")


def starts_workers(args: Sequence[str]) -> bool:
    """Whether `args` ask pytest-xdist for workers: `-n N`, `-nN`, `--numprocesses[=]N`, N not 0."""
    for index, arg in enumerate(args):
        if arg in ("-n", "--numprocesses"):
            value = args[index + 1] if index + 1 < len(args) else ""
        elif arg.startswith("--numprocesses="):
            value = arg.partition("=")[2]
        elif arg.startswith("-n") and not arg.startswith("--") and len(arg) > 2:
            value = arg[2:]
        else:
            continue
        if value != "0":
            return True
    return False


def inner_pytest(
    pytester: pytest.Pytester,
    *args: str,
    subprocess: bool | None = None,
    user_plugins: bool = False,
    timeout: float | None = None,
) -> pytest.RunResult:
    """Run pytest with `args` on pytester's project.

    In process by default: no interpreter to start and pytest already imported, so a run costs a
    fraction of a second (pytester restores `sys.modules` and `sys.path` after it). In a subprocess
    with `subprocess=True` (a fresh interpreter: the environment's PYTHONHASHSEED applies and
    nothing is imported before, as a user runs it), and always when `args` ask pytest-xdist for
    workers, which only a process of its own starts. `timeout` (seconds) bounds a subprocess run;
    an in-process run cannot be bounded, so a timeout needs a subprocess.

    The pytest plugins of `UNUSED_PLUGINS` are disabled unless `user_plugins=True`: no generated
    project uses them, and each costs a second or more in every process, and in process on every
    run (pytester restores `sys.modules` after each, so what the run imported is imported and
    assertion-rewritten again by the next). The runs that stand for a user's own `pytest` keep
    every installed plugin, as the user's would.
    """
    workers = starts_workers(args)
    if subprocess is None:
        subprocess = workers
    elif workers and not subprocess:
        raise ValueError(f"xdist workers need a subprocess: {' '.join(args)}")
    if timeout is not None and not subprocess:
        raise ValueError("a timeout needs a subprocess run")
    if not user_plugins:
        blocked = [part for name in UNUSED_PLUGINS for part in ("-p", f"no:{name}")]
        args = (*blocked, *args)
    if subprocess:
        return pytester.runpytest_subprocess(*args, timeout=timeout)
    return pytester.runpytest_inprocess(*args)


def imported_first(*modules: str, environ: Mapping[str, str] | None = None) -> Callable[[], None]:
    """A module-scoped fixture importing `modules` (an SDK, a framework) in the test process, for
    the tests whose in-process runs import them: `sdk = imported_first("litellm")` in the test
    module, and `@pytest.mark.usefixtures("sdk")` on the test.

    pytester drops from `sys.modules` every module first imported while its fixture lives (the
    test, and the inner runs in it), so a module the project's tests import would be imported
    again by every run (seconds for litellm or dspy), and the objects it left behind (cached
    clients, pydantic's types) would no longer match the classes of the next import. A fixture
    of module scope is set up before the test's pytester, so what it imports stays: imported once
    per test process, and every run reuses it, as the tests of one user's session share one
    import. Only the modules that are installed: the tests skip the others themselves.

    `environ`: variables set while importing (litellm fetches its price list at import unless
    `LITELLM_LOCAL_MODEL_COST_MAP` says not to: the suite has no network).
    """

    @pytest.fixture(scope="module")
    def fixture() -> None:
        with pytest.MonkeyPatch.context() as patch:
            for key, value in (environ or {}).items():
                patch.setenv(key, value)
            for name in modules:
                try:
                    importlib.import_module(name)
                except ImportError:
                    continue

    return fixture
