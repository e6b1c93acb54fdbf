"""System prompt assembly: the one owner of the model-side order of sections and tools.

Tools reach the model in the order `assemble()` returns them. Providers are collected in
registration order (which races), then `order_tools` normalises that to the authoritative order
before anything else can observe it: the configured `tool_order`, or plain UTF-16 code-unit order
when none is configured. Only then does the `system-prompt/assemble` waterfall run; its listeners
may still add, remove or reorder tools and own the determinism of what they do.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from harness.agent.context import Context
from harness.agent.tools import ToolSchema

TOOL_ORDER_REST = "<unlisted-tools>"
ASSEMBLE_EVENT = "system-prompt/assemble"

ToolProvider = Callable[
    [],
    "Iterable[ToolSchema | Mapping[str, Any]] | Awaitable[Iterable[ToolSchema | Mapping[str, Any]]]",
]


class ToolOrderError(ValueError):
    """Every tool-order failure: a malformed list, an unregistered or a reserved name."""


class PromptAssemblyError(ValueError):
    """The assembly is malformed: two complete sections, or the invariant listener rejected it."""


class PromptRenderError(ValueError):
    """A `{{variable}}` reference is unknown, malformed or has no value."""


class SystemPromptConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """SystemPrompt's configuration.

    `tool_order` left out stays UNSET and means plain code-unit order; an explicit empty list is
    a configured list without the rest entry, and is rejected. Decoding keeps the difference.
    """

    persona: str = ""
    tool_order: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    include_harness_identity: bool = True
    include_runtime_context: bool = True


class Section(msgspec.Struct, frozen=True):
    """A named piece of the system prompt. Lower `order` comes first; ties keep insertion order.

    A `complete` section is a whole system prompt supplied from outside (a prompt file, say): when
    one is present it is the only section the assembly starts from. Two are an error.
    """

    name: str
    text: str
    order: int = 0
    complete: bool = False


class PromptAssembly(msgspec.Struct):
    """What `assemble()` produces and the waterfall's listeners may edit."""

    sections: list[Section]
    tools: list[ToolSchema]
    variables: dict[str, str | None]


def _code_units(name: str) -> bytes:
    # JavaScript compares strings by UTF-16 code units; Python by code points. They disagree for
    # astral characters against U+E000..U+FFFF, and the order we port is the JavaScript one.
    return name.encode("utf-16-be", "surrogatepass")


def code_unit_sorted(tools: Iterable[ToolSchema]) -> list[ToolSchema]:
    """Stable sort by name in UTF-16 code-unit order (locale-independent)."""
    return sorted(tools, key=lambda tool: _code_units(tool.name))


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
    if tool_order is None or tool_order is msgspec.UNSET:
        return code_unit_sorted(tools)
    assert not isinstance(tool_order, msgspec.UnsetType)
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


_REFERENCE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def interpolate(text: str, variables: Mapping[str, str | None], where: str = "text") -> str:
    """Replace `{{name}}` references; unknown, malformed and valueless references are errors."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if not _NAME.fullmatch(name):
            raise PromptRenderError(f"{where}: malformed variable reference {match.group(0)!r}")
        if name not in variables:
            raise PromptRenderError(f"{where}: unknown variable {{{{{name}}}}}")
        value = variables[name]
        if value is None:
            raise PromptRenderError(f"{where}: variable {{{{{name}}}}} has no value")
        return value

    stray = _REFERENCE.sub(lambda m: " " * len(m.group(0)), text).find("{{")
    if stray >= 0:
        raise PromptRenderError(f"{where}: unclosed variable reference at offset {stray}")
    return _REFERENCE.sub(replace, text)


def render_prompt(assembly: PromptAssembly) -> str:
    """The system text: each section interpolated, non-empty ones joined by a blank line."""
    parts = [
        interpolate(section.text, assembly.variables, f'section "{section.name}"')
        for section in assembly.sections
    ]
    return "\n\n".join(part for part in parts if part.strip())


HARNESS_IDENTITY = (
    "You are an agent running in the harness reference runtime. Use the tools you are given; "
    "answer plainly when no tool is needed."
)
RUNTIME_CONTEXT = "Working directory: {{cwd}}\nPlatform: {{platform}}"


def check_assembly(assembly: PromptAssembly) -> None:
    """The invariant the first waterfall listener enforces on the final assembly."""
    names: set[str] = set()
    for section in assembly.sections:
        if not section.name:
            raise PromptAssemblyError("a system prompt section has an empty name")
        if section.name in names:
            raise PromptAssemblyError(f'two system prompt sections are named "{section.name}"')
        names.add(section.name)
    for tool in assembly.tools:
        if not isinstance(tool, ToolSchema) or not tool.name:
            raise PromptAssemblyError(f"the assembly holds a tool without a name: {tool!r}")


class SystemPrompt:
    """Owns sections, tool providers and variables, and assembles them in a fixed order."""

    def __init__(self, ctx: Context, config: SystemPromptConfig | None = None) -> None:
        self.ctx = ctx
        self.config = config or SystemPromptConfig()
        if not isinstance(self.config.tool_order, msgspec.UnsetType):
            validate_tool_order(self.config.tool_order)  # shape errors fail fast, here
        self._sections: list[Section] = []
        self._providers: list[ToolProvider] = []
        self.variables: dict[str, str | None] = {"cwd": None, "platform": None}
        if self.config.include_harness_identity:
            self.add_section(Section("identity", HARNESS_IDENTITY, order=0))
        if self.config.persona:
            self.add_section(Section("persona", self.config.persona, order=100))
        if self.config.include_runtime_context:
            self.add_section(Section("runtime-context", RUNTIME_CONTEXT, order=1000))
        ctx.on(ASSEMBLE_EVENT, self._invariant_listener, prepend=True)

    @staticmethod
    async def _invariant_listener(
        assembly: PromptAssembly, next_: Callable[[], Awaitable[PromptAssembly]]
    ) -> PromptAssembly:
        result = await next_()
        check_assembly(result)
        return result

    def add_section(self, section: Section) -> Callable[[], None]:
        self._sections.append(section)
        return lambda: self._sections.remove(section) if section in self._sections else None

    def add_tool_provider(self, provider: ToolProvider) -> Callable[[], None]:
        self._providers.append(provider)
        return lambda: self._providers.remove(provider) if provider in self._providers else None

    def set_variable(self, name: str, value: str | None) -> None:
        if not _NAME.fullmatch(name):
            raise PromptRenderError(f"invalid variable name {name!r}")
        self.variables[name] = value

    async def collect_tools(self) -> list[ToolSchema]:
        """Every provider's tools, providers in registration order, each copied to its fields."""
        collected: list[ToolSchema] = []
        for provider in list(self._providers):
            provided = provider()
            if inspect.isawaitable(provided):
                provided = await provided
            collected.extend(ToolSchema.copy_of(schema) for schema in provided)
        return collected

    async def assemble(self) -> PromptAssembly:
        complete = [s for s in self._sections if s.complete]
        if len(complete) > 1:
            names = ", ".join(f'"{s.name}"' for s in complete)
            raise PromptAssemblyError(f"more than one complete system prompt section: {names}")
        sections = complete or sorted(self._sections, key=lambda s: s.order)
        tools = order_tools(await self.collect_tools(), self.config.tool_order)
        assembly = PromptAssembly(list(sections), tools, dict(self.variables))
        result = await self.ctx.waterfall(ASSEMBLE_EVENT, assembly)
        check_assembly(result)  # also when a later listener was prepended around the invariant one
        return result
