"""The authoritative model-side order of tools: the configured `tool_order`, else UTF-16 code units.

`order_tools` takes the tools in collection order (which races) and returns them in the one order
the system prompt sends: listed names at their list positions (a name shared by several tools
expands to all of them, in collection order), unlisted tools at the `<unlisted-tools>` rest entry
in code-unit order; with no list, the whole set in code-unit order. JavaScript compares strings
by UTF-16 code units and Python by code points; the order we port is the JavaScript one.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

import msgspec

from harness.agent._tools import ToolSchema

__all__ = [
    "TOOL_ORDER_REST",
    "ToolOrderError",
    "code_unit_sorted",
    "order_tools",
    "reject_reserved_names",
    "validate_tool_order",
]

TOOL_ORDER_REST = "<unlisted-tools>"


class ToolOrderError(ValueError):
    """Every tool-order failure: a malformed list, an unregistered or a reserved name."""


_name = operator.attrgetter("name")


def _code_units(name: str) -> bytes:
    # JavaScript compares strings by UTF-16 code units; Python by code points. They disagree for
    # astral characters against U+E000..U+FFFF, and the order we port is the JavaScript one.
    return name.encode("utf-16-be", "surrogatepass")


class Named(Protocol):
    """Anything with a name: a `ToolSchema`, or another shape's tool (`harness.canonical_tools`)."""

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


def code_unit_sorted(tools: Iterable[N]) -> list[N]:
    """Stable sort by name in UTF-16 code-unit order (locale-independent)."""
    tools = list(tools)
    names = list(map(_name, tools))
    if all(type(name) is str for name in names) and not _ASTRAL.search("".join(names)):
        # Without astral characters every character is one UTF-16 code unit of its own value,
        # so code-point order (Python's) is code-unit order: no need to encode every name.
        return sorted(tools, key=_name)
    return sorted(tools, key=lambda tool: _code_units(tool.name))


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def validate_tool_order(order: Sequence[str]) -> tuple[str, ...]:
    """Check a tool order's shape: no duplicates and exactly one rest entry."""
    seen: set[str] = set()
    for name in order:
        if name in seen:
            raise ToolOrderError(f'toolOrder lists "{name}" more than once')
        seen.add(name)
    if TOOL_ORDER_REST not in seen:
        raise ToolOrderError(
            f'toolOrder must contain the "{TOOL_ORDER_REST}" rest entry '
            "(where unlisted tools are inserted)"
        )
    return tuple(order)


def reject_reserved_names(tools: Iterable[ToolSchema]) -> None:
    for tool in tools:
        if tool.name == TOOL_ORDER_REST:
            raise ToolOrderError(
                f'tool provider returned reserved tool name "{TOOL_ORDER_REST}" '
                "(reserved for toolOrder's rest entry)"
            )


def order_tools(
    tools: Sequence[ToolSchema],
    tool_order: Sequence[str] | msgspec.UnsetType | None,
    known_names: Iterable[str] | None = None,
) -> list[ToolSchema]:
    """The authoritative model-side order of `tools` (given in collection order).

    Listed names take their list positions (a name shared by several tools expands to all of them,
    in collection order); unlisted tools go where the rest entry is, in code-unit order. With no
    list, the whole set is in code-unit order. `known_names` are the names that count as registered
    when checking the list (default: the names of `tools`).
    """
    reject_reserved_names(tools)
    if tool_order is None or isinstance(tool_order, msgspec.UnsetType):
        return code_unit_sorted(tools)
    order = validate_tool_order(tool_order)
    known = {tool.name for tool in tools} if known_names is None else set(known_names)
    unregistered = [name for name in order if name != TOOL_ORDER_REST and name not in known]
    if unregistered:
        listing = ", ".join(sorted(known, key=_code_units)) or "(none)"
        quoted = ", ".join(f'"{name}"' for name in unregistered)
        noun = "tool" if len(unregistered) == 1 else "tools"
        raise ToolOrderError(
            f"toolOrder lists unregistered {noun} {quoted}; known tools: {listing}"
        )
    by_name: dict[str, list[ToolSchema]] = {}
    for tool in tools:
        by_name.setdefault(tool.name, []).append(tool)
    listed = set(order)
    ordered: list[ToolSchema] = []
    for name in order:
        if name == TOOL_ORDER_REST:
            ordered.extend(code_unit_sorted(t for t in tools if t.name not in listed))
        else:
            ordered.extend(by_name.get(name, ()))
    return ordered
