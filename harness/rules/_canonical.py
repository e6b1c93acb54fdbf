"""`canonical_tools`: one byte-stable form of a tool list, whatever order it was gathered in.

A provider caches the tool list byte for byte; tools gathered from plugins and MCP servers that
load concurrently arrive in completion order, and a schema built from a dict or a set can
serialise its keys in another order from run to run. `canonical_tools(tools, order=None)`
returns the tools in the reference runtime's order (`harness.agent`'s `tool_order`: listed names
at their places, the rest at the `<unlisted-tools>` entry in UTF-16 code-unit order; with no
order, all of them in code-unit order), each one's keys sorted recursively, so the same set of
tools gives the same bytes.

Inside a schema, object keys carry no meaning and are sorted; arrays keep their order, which
carries meaning (`enum`, `prefixItems`, `anyOf`, `oneOf`, `allOf`, `examples`...), except the
set-like ones: `required`, and `type` given as a list, which are sorted. It reads every shape the
harness knows: Anthropic (`name`), OpenAI Chat Completions (`function.name`), Responses and Bedrock
(`toolSpec.name`), and Gemini's groups (every group that holds only `functionDeclarations` is
merged into one, its declarations ordered). A tool without a name (a Responses built-in, a
Gemini `googleSearch` group) goes at the rest entry after the named ones. A cache marker moves
with the canonical form: Anthropic's `cache_control` on a tool goes to the last tool, a Bedrock
`cachePoint` block to the end of the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from harness._shared._errors import UsageError
from harness._shared._views import encode_json, plain
from harness.agent._tool_order import (
    TOOL_ORDER_REST,
    ToolOrderError,
    code_unit_sorted,
    validate_tool_order,
)

__all__ = ["canonical_tools"]

SET_LIKE: Final = frozenset({"required"})
_GROUPS: Final = ("functionDeclarations", "function_declarations")


class _Named(NamedTuple):
    name: str
    tool: Any
    encoded: bytes


def canonical_tools(tools: Iterable[Any], order: Sequence[str] | None = None) -> list[Any]:
    """`tools` in one canonical order and form (see the module doc); `order` lists names with
    one `<unlisted-tools>` entry for the rest. The input is not changed."""
    items = [plain(tool) for tool in tools]
    if order is not None:
        try:
            validate_tool_order(list(order))
        except ToolOrderError as error:
            raise UsageError(f"canonical_tools: {error}") from None
    marker = _cache_control(items)
    points = [item for item in items if _is_cache_point(item)]
    items = [_strip_control(item) for item in items if not _is_cache_point(item)]
    items, grouped = _merge_groups(items, order)
    if grouped:  # Gemini: the order is the declarations', inside their group
        order = None
    named: list[_Named] = []
    unnamed: list[Any] = []
    for item in items:
        canonical = _sorted(item)
        name = _name(canonical)
        if name is None:
            unnamed.append(canonical)
        else:
            named.append(_Named(name, canonical, encode_json(canonical)))
    unnamed.sort(key=encode_json)
    ordered = _ordered(named, order) + unnamed
    if marker is not None and ordered:
        last = ordered[-1]
        if isinstance(last, dict):
            ordered[-1] = {**last, "cache_control": _sorted(marker)}
            ordered[-1] = dict(sorted(ordered[-1].items()))
    if points:
        ordered.append(_sorted(points[-1]))
    return ordered


def _ordered(named: list[_Named], order: Sequence[str] | None) -> list[Any]:
    by_encoding = sorted(named, key=lambda item: item.encoded)  # same names: by their bytes
    if order is None:
        return [item.tool for item in code_unit_sorted(by_encoding)]
    known = {item.name for item in named}
    missing = [name for name in order if name != TOOL_ORDER_REST and name not in known]
    if missing:
        listing = (
            ", ".join(item.name for item in code_unit_sorted(_unique(by_encoding))) or "(none)"
        )
        noun = "tool" if len(missing) == 1 else "tools"
        quoted = ", ".join(f'"{name}"' for name in missing)
        raise UsageError(f"canonical_tools: order lists unknown {noun} {quoted}; tools: {listing}")
    listed = set(order)
    result: list[Any] = []
    for name in order:
        if name == TOOL_ORDER_REST:
            rest = [item for item in by_encoding if item.name not in listed]
            result += [item.tool for item in code_unit_sorted(rest)]
        else:
            result += [item.tool for item in by_encoding if item.name == name]
    return result


def _unique(items: list[_Named]) -> list[_Named]:
    seen: dict[str, _Named] = {}
    for item in items:
        seen.setdefault(item.name, item)
    return list(seen.values())


def _name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    if isinstance(tool.get("name"), str):
        return str(tool["name"])
    for wrapper in ("function", "toolSpec"):
        inner = tool.get(wrapper)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return str(inner["name"])
    for key in _GROUPS:  # a Gemini group of declarations sorts as its first declaration
        declarations = tool.get(key)
        if isinstance(declarations, list) and declarations:
            return _name(declarations[0])
    return None


def _sorted(value: Any, key: str | None = None) -> Any:
    """Object keys sorted, recursively; `required` and a list `type` sorted; other arrays kept."""
    if isinstance(value, dict):
        return {k: _sorted(value[k], k) for k in sorted(value)}
    if isinstance(value, list):
        items = [_sorted(item) for item in value]
        if key in SET_LIKE or (key == "type" and all(isinstance(i, str) for i in items)):
            return sorted(items, key=encode_json)
        return items
    return value


def _merge_groups(items: list[Any], order: Sequence[str] | None) -> tuple[list[Any], bool]:
    """Gemini: the groups that hold only function declarations, as one group whose declarations
    are in the canonical order; and whether there was one."""
    merged: dict[str, list[Any]] = {}
    rest: list[Any] = []
    for item in items:
        if isinstance(item, dict) and len(item) == 1 and next(iter(item)) in _GROUPS:
            key = next(iter(item))
            declarations = item[key]
            if isinstance(declarations, list):
                merged.setdefault(key, []).extend(declarations)
                continue
        rest.append(item)
    for key, declarations in merged.items():
        canonical = _ordered(
            [
                _Named(name, _sorted(d), encode_json(_sorted(d)))
                for d in declarations
                if (name := _name(d)) is not None
            ],
            order,
        )
        canonical += sorted((_sorted(d) for d in declarations if _name(d) is None), key=encode_json)
        rest.append({key: canonical})
    return rest, bool(merged)


def _cache_control(items: list[Any]) -> Any:
    """The last `cache_control` marker on a tool (Anthropic), if any."""
    found = None
    for item in items:
        if isinstance(item, Mapping) and "cache_control" in item:
            found = item["cache_control"]
    return found


def _strip_control(item: Any) -> Any:
    if isinstance(item, dict) and "cache_control" in item:
        return {k: v for k, v in item.items() if k != "cache_control"}
    return item


def _is_cache_point(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {"cachePoint"}
