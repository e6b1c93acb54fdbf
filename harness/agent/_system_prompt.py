"""System prompt assembly: the one owner of the model-side order of sections and tools.

Tools reach the model in the order `assemble()` returns them. Providers are collected in
registration order (which races), then `order_tools` normalises that to the authoritative order
before anything else can observe it: the configured `tool_order`, or plain UTF-16 code-unit order
when none is configured. Only then does the `system-prompt/assemble` waterfall run; its listeners
may still add, remove or reorder tools and own the determinism of what they do.
"""

from __future__ import annotations

import inspect
import operator
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, cast

import msgspec

from harness.agent._context import Context
from harness.agent._frozen import FrozenList, items_of
from harness.agent._reuse import AssemblyMemory
from harness.agent._tool_order import (
    order_tools,
    validate_tool_order,
)
from harness.agent._tools import ToolSchema

ASSEMBLE_EVENT = "system-prompt/assemble"
_name = operator.attrgetter("name")

ProvidedTools = Iterable[ToolSchema | Mapping[str, Any]]
ToolProvider = Callable[[], ProvidedTools | Awaitable[ProvidedTools]]


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
    """The system text: each section interpolated, non-empty ones joined by a blank line.

    A pure function of the sections' names and texts and the variables, so a successful render
    is remembered: every step renders the same (often large) prompt, and returning the same
    string object lets later comparisons of the system text stop at identity. A read-only
    assembly's sections (a `FrozenList` of frozen sections) are recognised by identity.
    """
    global _last_read_only
    sections, variables = assembly.sections, assembly.variables
    read_only = type(sections) is FrozenList and type(variables) is dict
    if read_only and _last_read_only[0] is items_of(sections) and _last_read_only[1] == variables:
        return _last_read_only[2]
    try:
        key: Any = (
            tuple((section.name, section.text) for section in assembly.sections),
            tuple(assembly.variables.items()),
        )
        rendered = _rendered.get(key)
    except (TypeError, AttributeError):  # unhashable or odd parts: render (and fail) as before
        key, rendered = None, None
    if rendered is None:
        rendered = _render(assembly)
        if key is not None:
            if len(_rendered) >= _RENDERED_SLOTS:
                _rendered.clear()
            _rendered[key] = rendered
    if read_only:
        _last_read_only = (items_of(sections), dict(variables), rendered)
    return rendered


def _render(assembly: PromptAssembly) -> str:
    parts = [
        interpolate(section.text, assembly.variables, f'section "{section.name}"')
        for section in assembly.sections
    ]
    return "\n\n".join(part for part in parts if part.strip())


_RENDERED_SLOTS = 64
_rendered: dict[Any, str] = {}
# the sections tuple and the variables of the last read-only assembly rendered, and its text
_last_read_only: tuple[Any, dict[str, str | None], str] = ((), {}, "")


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
    tools = assembly.tools
    if set(map(type, tools)) <= {ToolSchema} and all(map(_name, tools)):
        return  # the common case, checked without a Python-level loop
    for tool in tools:
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
        self._memory = AssemblyMemory()  # what the last assembly's parts were (reuse.py)

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
        return await self._collect(ToolSchema.copy_of)

    async def _collect(
        self, copy: Callable[[ToolSchema | Mapping[str, Any]], ToolSchema]
    ) -> list[ToolSchema]:
        """Every provider's tools, in registration order, copied by `copy`."""
        collected: list[ToolSchema] = []
        for provider in list(self._providers):
            provided = provider()
            if type(provided) not in _PLAIN and inspect.isawaitable(provided):
                provided = await provided
            collected.extend(copy(schema) for schema in cast("ProvidedTools", provided))
        return collected

    def _in_order(self, tools: list[ToolSchema]) -> tuple[ToolSchema, ...]:
        """`order_tools(tools, tool_order)`, the permutation remembered by the names it sorts."""
        return self._memory.in_order(tools, self.config.tool_order, order_tools)

    def _arranged(self) -> tuple[Section, ...]:
        """The sections an assembly starts from, in their order (see `assemble`)."""
        return self._memory.sections(self._sections, _arrange)

    async def assemble(self, *, read_only: bool = False) -> PromptAssembly:
        """Sections and tools in their authoritative order, then the assemble waterfall.

        `read_only=True` is for a caller that only reads the result (the loop, the harness's
        rebuild). When the only listener is the invariant one, nothing but that caller ever sees
        the tools, so they are shared deep-frozen copies (`ToolSchema.frozen_copy_of`) instead
        of fresh mutable ones: the same values, without copying every schema at every step; the
        sections and tools lists are read-only too (`FrozenList`). With any other listener the
        tools are fresh copies that listeners may edit, as always.

        When the invariant listener is the whole chain, it is called as the waterfall would
        (it only checks the assembly it is handed), without the waterfall's machinery, and a
        check that passed for the very same sections and tools is not repeated.
        """
        sections = self._arranged()
        chain = self.ctx.listeners(ASSEMBLE_EVENT)
        unobserved = bool(chain) and chain.count(SystemPrompt._invariant_listener) == len(chain)
        if not (read_only and unobserved):
            tools = self._in_order(await self._collect(ToolSchema.copy_of))
            assembly = PromptAssembly(list(sections), list(tools), dict(self.variables))
            if not unobserved:
                result = await self.ctx.waterfall(ASSEMBLE_EVENT, assembly)
                check_assembly(result)  # also when a later listener was prepended around it
                return result
        else:
            tools = await self._shared_in_order()
            memory = self._memory
            assembly = PromptAssembly(
                memory.frozen_list(sections), memory.frozen_list(tools), dict(self.variables)
            )
        if not self._memory.checked(sections, tools):
            check_assembly(assembly)  # what the invariant listener, the whole chain, does
            self._memory.passed(sections, tools)
        return assembly

    async def _shared_in_order(self) -> tuple[ToolSchema, ...]:
        """Every provider's tools as shared frozen copies (`ToolSchema.frozen_copy_of`), in
        their order; last time's tuple itself while every provider hands back the same.

        Providers are called in registration order, each awaited before the next is called.
        While every one returns a tuple (immutable), the very tuples it returned last time, of
        schemas that were deep-frozen then, nothing can have changed: one identity check.
        """
        memory = self._memory
        tool_order = self.config.tool_order
        providers = list(self._providers)
        results: list[Any] = []
        for provider in providers:
            result = provider()
            results.append(result)
            if type(result) is not tuple:
                break
        else:
            ordered = memory.collected(providers, results, tool_order)
            if ordered is not None:
                return ordered
        seen = memory.provided
        parts = []
        for index, provider in enumerate(providers):
            provided = results[index] if index < len(results) else provider()
            if type(provided) not in _PLAIN and inspect.isawaitable(provided):
                provided = await provided
            last = seen.get(id(provider))
            if (
                last is not None
                and last.sources is provided
                and last.frozen
                and last.provider is provider
            ):
                parts.append(last.copies)  # shared_copies' first case, inline
            else:
                parts.append(memory.shared_copies(provider, cast("ProvidedTools", provided)))
        ordered = memory.ordered_parts(parts, tool_order, order_tools)
        memory.remember_collection(providers, results, tool_order, ordered)
        return ordered


def _arrange(sections: list[Section]) -> list[Section]:
    """The one complete section if there is one, else all of them by `order` (stable)."""
    complete = [s for s in sections if s.complete]
    if len(complete) > 1:
        names = ", ".join(f'"{s.name}"' for s in complete)
        raise PromptAssemblyError(f"more than one complete system prompt section: {names}")
    return complete or sorted(sections, key=lambda s: s.order)


_PLAIN = (list, tuple)  # what a provider usually returns: never awaitable
