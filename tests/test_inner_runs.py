"""An in-process inner run (`tests.support.inner.inner_pytest`) has the plugins pytest's autoload
would give it: the installed ones, by their entry-point names, less `UNUSED_PLUGINS` and those
its arguments block (`-p no:NAME`). It gets them from a list found once (`INSTALLED_PLUGINS`),
not by reading every distribution's metadata again, so the two are compared here."""

from __future__ import annotations

import importlib.metadata

import pytest

from tests.support.inner import UNUSED_PLUGINS, inner_pytest

ENTRY_POINTS = {entry.name for entry in importlib.metadata.entry_points(group="pytest11")}

PRINT_PLUGINS = """
def test_plugins(request):
    names = [name for name, plugin in request.config.pluginmanager.list_name_plugin()
             if plugin is not None]
    print("PLUGINS", sorted(set(names) & set(ENTRY_POINTS)))
    print("RANDOMLY", request.config.pluginmanager.hasplugin("randomly"))
"""


def plugins_of(result: pytest.RunResult) -> tuple[str, str]:
    result.assert_outcomes(passed=1)
    found = [
        line[line.index(word) :]
        for line in result.stdout.lines
        for word in ("PLUGINS [", "RANDOMLY ")
        if word in line
    ]
    assert len(found) == 2, result.stdout.str()
    return found[0], found[1]


@pytest.mark.parametrize(
    "blocked", [(), ("-p", "no:randomly"), ("-pno:randomly", "-p", "no:syrupy")]
)
def test_an_in_process_run_has_the_plugins_autoload_gives_it(
    pytester: pytest.Pytester, blocked: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_plugins=f"ENTRY_POINTS = {sorted(ENTRY_POINTS)!r}\n" + PRINT_PLUGINS)
    unused = [part for name in UNUSED_PLUGINS for part in ("-p", f"no:{name}")]
    autoloaded = inner_pytest(pytester, "-s", *unused, *blocked, user_plugins=True)
    listed = inner_pytest(pytester, "-s", *blocked)
    assert plugins_of(listed) == plugins_of(autoloaded)
    assert ("'randomly'" in plugins_of(listed)[0]) == (not blocked)
