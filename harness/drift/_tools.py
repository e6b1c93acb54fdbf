"""The tool-list diff: reorder, content change, additions and removals, and who registered what.

Tools are matched by name (Anthropic's and the harness's `name`, OpenAI Chat's `function.name`,
Bedrock's `toolSpec.name`, and each of Gemini's `functionDeclarations`); names shared by several
tools are compared as multisets, so a reorder of same-named tools is still a reorder, not an add
and a remove. Cache markers in a tool list (Bedrock's `cachePoint` blocks) are not tools.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from harness._shared._views import WINDOW_REACH, encode_json
from harness.drift._parts import Quote, Sentence
from harness.drift._wording import ABSENT, names, plural, quoted, show_pointer


class ToolDiff(NamedTuple):
    names_a: tuple[str, ...]
    names_b: tuple[str, ...]
    kind: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    mismatch: int | None  # first index where the name lists differ
    changed: tuple[str, ...]  # names on both sides whose content differs
    places_b: tuple[str, ...] = ()  # the JSON pointer of each of b's tools, when not /tools/N


def tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        name = tool.get("name")
        if isinstance(name, str):
            return name
        for wrapper in ("function", "toolSpec"):  # OpenAI Chat Completions, Bedrock Converse
            inner = tool.get(wrapper)
            if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                return str(inner["name"])
    if isinstance(tool, str):
        return tool
    # The tool's JSON, raw: the printer shows its first 40 characters, once redacted.
    encoded = encode_json(tool).decode("utf-8", "replace")
    return f"<unnamed {encoded[: 40 + WINDOW_REACH]}>"


def diff_tools(a: Any, b: Any) -> ToolDiff:
    """How the tool list `a` became `b` (either may be ABSENT or not a list at all)."""
    placed_a, placed_b = _tool_list(a), _tool_list(b)
    list_a = None if placed_a is None else [tool for _, tool in placed_a]
    list_b = None if placed_b is None else [tool for _, tool in placed_b]
    names_a = tuple(tool_name(tool) for tool in list_a or ())
    names_b = tuple(tool_name(tool) for tool in list_b or ())
    places_b = tuple(place for place, _ in placed_b or ())
    if all(place == f"/tools/{i}" for i, place in enumerate(places_b)):
        places_b = ()
    mismatch = next(
        (index for index, (x, y) in enumerate(zip(names_a, names_b, strict=False)) if x != y),
        None if len(names_a) == len(names_b) else min(len(names_a), len(names_b)),
    )
    if list_a is None or list_b is None:  # not a list of tools on one side: no names to compare
        return ToolDiff(names_a, names_b, "tools-shape", (), (), mismatch, (), places_b)
    counts_a, counts_b = Counter(names_a), Counter(names_b)
    added = _multiset_minus(names_b, counts_a)
    removed = _multiset_minus(names_a, counts_b)
    contents_a, contents_b = _contents(list_a), _contents(list_b)
    changed = tuple(
        name
        for name in dict.fromkeys(names_b)
        if name in contents_a and contents_a[name] != contents_b[name]
    )
    if added or removed:
        kind = "added-and-removed" if added and removed else "added" if added else "removed"
    elif names_a == names_b:
        kind = "content"
    else:
        kind = "reorder-and-content" if changed else "reorder"
    return ToolDiff(names_a, names_b, kind, added, removed, mismatch, changed, places_b)


def tool_at(path: Sequence[str], tools_a: Any, tools_b: Any) -> str | None:
    """The tool at a /tools/N/... pointer: tool N on side b, falling back to side a."""
    if len(path) < 2 or path[0] != "tools" or not path[1].isdigit():
        return None
    index = int(path[1])
    grouped = len(path) >= 4 and path[2] in _GROUPS and path[3].isdigit()
    for tools in (tools_b, tools_a):
        if isinstance(tools, list) and index < len(tools):
            group = (
                tools[index].get(path[2]) if grouped and isinstance(tools[index], dict) else None
            )
            if grouped and isinstance(group, list) and int(path[3]) < len(group):
                return tool_name(group[int(path[3])])
            return tool_name(tools[index])
    return None


def provenance_of(owners: Mapping[str, str | None] | None, name: str | None) -> str | None:
    if owners is None or name is None:
        return None
    owner = owners.get(name)
    return f'plugin "{owner}"' if owner else None


def tools_by_name(doc: Any) -> Any:
    """Tools keyed by name plus their order, so a structured diff shows a reorder as one change."""
    if not isinstance(doc, dict):
        return doc
    tools = doc.get("tools")
    if not isinstance(tools, list):
        return doc
    found = [t.get("name") if isinstance(t, dict) else None for t in tools]
    if None in found or len(set(found)) != len(found):
        return doc  # unnamed or shared names: positions are the only identity
    keyed = {k: v for k, v in doc.items() if k != "tools"}
    keyed["tool_order"] = found
    keyed["tools"] = dict(zip(found, tools, strict=True))
    return keyed


def tools_sentence(
    kind: str,
    tool: str | None,
    focus: str | None,
    owner: str | None,
    tools: ToolDiff,
    at: str,
) -> Sentence:
    """What happened to the tools, in one clause of a report's summary."""
    by = f" (registered by {owner})" if owner else ""
    if kind in ("reorder", "reorder-and-content") and tools.mismatch is not None:
        where = f"/tools/{tools.mismatch}"
        if tools.mismatch < len(tools.places_b):
            where = tools.places_b[tools.mismatch]
        out_of_place = ('first out of place: "', *_named(focus), f'"{by} at {where}')
        if kind == "reorder":
            return ("tools reordered; ", *out_of_place)
        changed: list[str | Quote] = []
        for index, changed_name in enumerate(tools.changed[:3]):
            changed += [", " if index else "", '"', changed_name, '"']
        sentence: Sentence = (
            "tools reordered and content changed (",
            *changed,
            "); ",
            *out_of_place,
        )
        if at and not at.startswith(where):
            sentence += (f"; first difference at {at}",)
        return sentence
    if kind == "content" and tools.names_a == tools.names_b:
        named = ('tool "', *_named(tool), f'"{by} changed') if tool else ("tools changed",)
        return (*named, f" (same names, same order) at {show_pointer(at)}")
    return (*tool_changes(tools), f"{by} at {show_pointer(at)}")


def _named(text: str | None) -> Sentence:
    return (quoted(text),) if text is not None else ("None",)


def tool_changes(tools: ToolDiff) -> Sentence:
    parts: list[Sentence] = []
    if tools.added:
        parts.append((f"{plural(len(tools.added), 'tool')} added: ", *names(tools.added)))
    if tools.removed:
        parts.append((f"{plural(len(tools.removed), 'tool')} removed: ", *names(tools.removed)))
    if not parts:
        return ("tools changed",)
    joined: Sentence = parts[0]
    for part in parts[1:]:
        joined += ("; ", *part)
    return joined


_GROUPS = ("functionDeclarations", "function_declarations")  # Gemini: a tool holds functions
_GROUP = _GROUPS[0]


def _tool_list(value: Any) -> list[tuple[str, Any]] | None:
    """The tools with their JSON pointers; Gemini's declaration groups opened, markers left out."""
    if value is ABSENT:
        return []
    if not isinstance(value, list):
        return None
    found: list[tuple[str, Any]] = []
    for index, tool in enumerate(value):
        key = _group_key(tool)
        group = tool.get(key) if key is not None else None
        if isinstance(group, list):
            found += [(f"/tools/{index}/{key}/{i}", item) for i, item in enumerate(group)]
        elif not (isinstance(tool, dict) and set(tool) == {"cachePoint"}):
            found.append((f"/tools/{index}", tool))
    return found


def _group_key(tool: Any) -> str | None:
    """The key of a Gemini tool's function list, camelCase or snake_case (litellm's), if any."""
    if isinstance(tool, dict):
        return next((key for key in _GROUPS if isinstance(tool.get(key), list)), None)
    return None


def _multiset_minus(items: Sequence[str], other: Counter[str]) -> tuple[str, ...]:
    left = Counter(other)
    extra: list[str] = []
    for name in items:
        if left[name] > 0:
            left[name] -= 1
        else:
            extra.append(name)
    return tuple(extra)


def _contents(tools: Sequence[Any]) -> dict[str, list[bytes]]:
    contents: dict[str, list[bytes]] = {}
    for tool in tools:
        contents.setdefault(tool_name(tool), []).append(encode_json(tool))
    return {name: sorted(encoded) for name, encoded in contents.items()}
