"""Pytest on a generated project (pytester's folder): the one way the suite runs an inner pytest."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Mapping, Sequence

import pytest

# Installed pytest plugins no generated project uses: hypothesis' (the suite's property tests use
# hypothesis itself, not its plugin), and langsmith's, which langchain brings for the framework
# tests (the outer run disables it in `addopts` too).
UNUSED_PLUGINS = ("hypothesispytest", "langsmith_plugin")

# The installed pytest plugins (`pytest11` entry points) an in-process run loads, by entry-point
# name, in the order pytest's autoload finds them; loaded once, at the first import of this module
# (collection, before any pytester: a module pytester sees first imported is dropped after it).
# pytest's autoload reads every installed distribution's metadata on each run, three times over
# (the entry points, the plugins' files to rewrite, the header's versions): half of a small
# in-process run's CPU, for the same answer every time. Decision 0038.
INSTALLED_PLUGINS: tuple[tuple[str, object], ...] = tuple(
    (entry.name, entry.load())
    for entry in importlib.metadata.entry_points(group="pytest11")
    if entry.name not in UNUSED_PLUGINS
)


class _InstalledPlugins:
    """Registers `INSTALLED_PLUGINS` under their entry-point names when pytest registers it
    (before the command line is read), as pytest's autoload would, without reading the metadata
    again; a `-p no:NAME` of the run then unregisters NAME, as it does an autoloaded plugin. The
    run's plugins, hooks and `hasplugin(NAME)` are the same (`tests/test_inner_runs.py`); only
    the header's `plugins:` line, made from the metadata, is not printed."""

    def pytest_addhooks(self, pluginmanager: pytest.PytestPluginManager) -> None:
        for name, plugin in INSTALLED_PLUGINS:
            if pluginmanager.get_plugin(name) is None and not pluginmanager.is_blocked(name):
                pluginmanager.register(plugin, name)


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
    every installed plugin, as the user's would, found by pytest's own autoload; the other
    in-process runs get the same plugins from `INSTALLED_PLUGINS`, registered once found.
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
    if user_plugins:
        return pytester.runpytest_inprocess(*args)
    return pytester.runpytest_inprocess(
        "--disable-plugin-autoload", *args, plugins=[_InstalledPlugins()]
    )


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
