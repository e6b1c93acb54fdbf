"""A scenario that decodes but cannot run is bad input: one line naming the file and the field.

msgspec checks a scenario file's shape (`harness.scenarios._formats.Scenario`). What it cannot check
is whether the runtime can boot the scenario at all: its `config` against its app preset (strict, so
an unknown key such as `temperature` or a value of the wrong type is refused), the shape of
`tool_order` (no name twice, exactly one `<unlisted-tools>` rest entry), and plugin names (none
empty, none twice). Without this check such a scenario fails deep inside a run, as a traceback
(`harness record`) or as a drift finding (`harness check`, exit 1); with it, every reader refuses it
as it refuses a corrupt file (`InvalidScenario`, exit 2 in the CLI, a collection error in pytest). A
scenario whose turn fails on purpose (a tool order naming an unregistered tool, the shipped
`bad-tool-order`) boots, and stays valid.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

from harness._shared._errors import InvalidScenario
from harness.agent._apps import APP_CONFIGS, app_config
from harness.agent._tool_order import ToolOrderError, validate_tool_order


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class Bootable(Protocol):
    """What this check reads of a scenario (`harness.scenarios._formats.Scenario`, which calls
    it while it reads a scenario folder: the format is above its validation, never named here)."""

    @property
    def app(self) -> str: ...

    @property
    def config(self) -> Any: ...

    @property
    def plugins(self) -> Sequence[_Named]: ...


__all__ = ["check_scenario_input"]

_AT = re.compile(r" - at `\$")


def check_scenario_input(scenario: Bootable, path: Path | str) -> None:
    """`InvalidScenario` naming `path` and the field when the runtime could not boot `scenario`."""
    _check_config(scenario, path)
    seen: dict[str, int] = {}
    for index, plugin in enumerate(scenario.plugins):
        if not plugin.name:
            raise InvalidScenario(path, f"plugin {index} has an empty name at `$.plugins[{index}]`")
        if plugin.name in seen:
            raise InvalidScenario(
                path,
                f"two plugins are named {plugin.name!r}, at `$.plugins[{seen[plugin.name]}]` and"
                f" `$.plugins[{index}]`",
                "give each plugin its own name",
            )
        seen[plugin.name] = index


def _check_config(scenario: Bootable, path: Path | str) -> None:
    kind = APP_CONFIGS[scenario.app]
    try:
        config = app_config(scenario.app, scenario.config)
    except msgspec.ValidationError as error:
        message = str(error)
        message = (
            _AT.sub(" - at `$.config", message, count=1)
            if _AT.search(message)
            else message + " - at `$.config`"
        )
        keys = ", ".join(kind.__struct_fields__)
        raise InvalidScenario(
            path,
            f"the config does not fit the {scenario.app!r} app preset: {message}",
            f"the {scenario.app} preset takes {keys}",
        ) from None
    if isinstance(config.tool_order, tuple):
        try:
            validate_tool_order(config.tool_order)
        except ToolOrderError as error:
            raise InvalidScenario(path, f"{error} - at `$.config.tool_order`") from None
