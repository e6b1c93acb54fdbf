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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import msgspec

from harness.agent.context import Context
from harness.agent.frozen import is_known_frozen
from harness.agent.tools import ToolSchema

TOOL_ORDER_REST = "<unlisted-tools>"
ASSEMBLE_EVENT = "system-prompt/assemble"

ProvidedTools = Iterable[ToolSchema | Mapping[str, Any]]
ToolProvider = Callable[[], ProvidedTools | Awaitable[ProvidedTools]]


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


_name = operator.attrgetter("name")


def _code_units(name: str) -> bytes:
    # JavaScript compares strings by UTF-16 code units; Python by code points. They disagree for
    # astral characters against U+E000..U+FFFF, and the order we port is the JavaScript one.
    return name.encode("utf-16-be", "surrogatepass")


def code_unit_sorted(tools: Iterable[ToolSchema]) -> list[ToolSchema]:
    """Stable sort by name in UTF-16 code-unit order (locale-independent)."""
    tools = list(tools)
    names = list(map(_name, tools))
    if all(type(name) is str for name in names) and not _ASTRAL.search("".join(names)):
        # Without astral characters every character is one UTF-16 code unit of its own value,
        # so code-point order (Python's) is code-unit order: no need to encode every name.
        return sorted(tools, key=_name)
    return sorted(tools, key=lambda tool: _code_units(tool.name))


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# (names in collection order, tool order) -> the positions order_tools puts them in. It depends
# on nothing else, and every step (and every boot of the same agent) collects the same names.
_orders: dict[Any, tuple[int, ...]] = {}


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
    string object lets later comparisons of the system text stop at identity.
    """
    try:
        key: Any = (
            tuple((section.name, section.text) for section in assembly.sections),
            tuple(assembly.variables.items()),
        )
        rendered = _rendered.get(key)
    except (TypeError, AttributeError):  # unhashable or odd parts: render (and fail) as before
        key, rendered = None, None
    if rendered is not None:
        return rendered
    parts = [
        interpolate(section.text, assembly.variables, f'section "{section.name}"')
        for section in assembly.sections
    ]
    rendered = "\n\n".join(part for part in parts if part.strip())
    if key is not None:
        if len(_rendered) >= _RENDERED_SLOTS:
            _rendered.clear()
        _rendered[key] = rendered
    return rendered


_RENDERED_SLOTS = 64
_rendered: dict[Any, str] = {}


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
        # provider id -> what it provided last and the shared copies made of it (_shared_copies)
        self._provided: dict[int, _Provided] = {}
        # the tool order, the tools last put in that order, and their order (_in_order)
        self._last_order: tuple[Any, tuple[ToolSchema, ...], list[ToolSchema]] = (None, (), [])

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
        self, copy: Callable[[ToolSchema | Mapping[str, Any]], ToolSchema] | None
    ) -> list[ToolSchema]:
        """Every provider's tools copied by `copy`, or shared frozen copies when it is None."""
        collected: list[ToolSchema] = []
        for provider in list(self._providers):
            provided = provider()
            if inspect.isawaitable(provided):
                provided = await provided
            if copy is None:
                collected.extend(self._shared_copies(provider, provided))
            else:
                collected.extend(copy(schema) for schema in provided)
        return collected

    def _shared_copies(
        self, provider: ToolProvider, provided: Iterable[ToolSchema | Mapping[str, Any]]
    ) -> list[ToolSchema]:
        """`ToolSchema.frozen_copy_of` of each provided schema, in one pass when nothing moved.

        A frozen copy is a function of the schema's name, description and parameters' JSON.
        When the provider hands back the very same ToolSchema objects as last time (frozen
        Structs: their names and descriptions cannot have been reassigned) and their parameters
        encode to the same bytes, the copies are last time's: one encode of all the parameters
        instead of a copy per schema.
        """
        sources = tuple(provided)
        last = self._provided.get(id(provider))
        if (
            last is not None
            and last.provider is provider
            and len(last.sources) == len(sources)
            and all(map(operator.is_, last.sources, sources))
        ):
            if last.frozen:  # deep-frozen sources cannot have changed
                return last.copies
            # The very same objects, so the same types: last time's check holds.
            blob = _parameters_json(sources, checked=last.parameters is not None)
            if blob is not None and blob == last.parameters:
                return last.copies
        copies = [ToolSchema.frozen_copy_of(schema) for schema in sources]
        if len(self._provided) >= 256:
            self._provided.clear()
        frozen = all(type(s) is ToolSchema and is_known_frozen(s) for s in sources)
        self._provided[id(provider)] = _Provided(
            provider, sources, None if frozen else _parameters_json(sources), frozen, copies
        )
        return copies

    def _in_order(self, tools: list[ToolSchema]) -> list[ToolSchema]:
        """`order_tools(tools, tool_order)`, the permutation remembered by the names it sorts."""
        tool_order = self.config.tool_order
        last_order, collected, ordered = self._last_order
        if (
            last_order is tool_order
            and len(collected) == len(tools)
            and all(map(operator.is_, collected, tools))
        ):
            return list(ordered)  # the same tools as last time: the same order (same names)
        try:
            key: Any = (tuple(map(_name, tools)), tool_order)
            positions = _orders.get(key)
        except TypeError:  # an unhashable name: nothing to remember it by
            return order_tools(tools, tool_order)
        if positions is None:
            # order_tools reads names only; slots carry each tool's position through it.
            slots = [_Slot(tool.name, position) for position, tool in enumerate(tools)]
            ordered = order_tools(cast("list[ToolSchema]", slots), tool_order)
            positions = tuple(cast("_Slot", slot).position for slot in ordered)
            if len(_orders) >= 256:
                _orders.clear()
            _orders[key] = positions
        result = [tools[index] for index in positions]
        self._last_order = (tool_order, tuple(tools), result[:])
        return result

    async def assemble(self, *, read_only: bool = False) -> PromptAssembly:
        """Sections and tools in their authoritative order, then the assemble waterfall.

        `read_only=True` is for a caller that only reads the result (the loop, the harness's
        rebuild). When the only listener is the invariant one, nothing but that caller ever sees
        the tools, so they are shared deep-frozen copies (`ToolSchema.frozen_copy_of`) instead
        of fresh mutable ones: the same values, without copying every schema at every step.
        With any other listener the tools are fresh copies that listeners may edit, as always.
        """
        complete = [s for s in self._sections if s.complete]
        if len(complete) > 1:
            names = ", ".join(f'"{s.name}"' for s in complete)
            raise PromptAssemblyError(f"more than one complete system prompt section: {names}")
        sections = complete or sorted(self._sections, key=lambda s: s.order)
        chain = self.ctx.listeners(ASSEMBLE_EVENT)
        unobserved = bool(chain) and all(
            listener is SystemPrompt._invariant_listener for listener in chain
        )
        copy = None if read_only and unobserved else ToolSchema.copy_of
        tools = self._in_order(await self._collect(copy))
        assembly = PromptAssembly(list(sections), tools, dict(self.variables))
        result = await self.ctx.waterfall(ASSEMBLE_EVENT, assembly)
        if not unobserved:  # else the invariant listener, the whole chain, just checked it
            check_assembly(result)  # also when a later listener was prepended around it
        return result


def _parameters_json(sources: tuple[Any, ...], *, checked: bool = False) -> bytes | None:
    """The JSON of every source's parameters, when every source is a ToolSchema (else None)."""
    if not checked and not set(map(type, sources)) <= {ToolSchema}:
        return None
    try:
        return _encode(list(map(_parameters, sources)))
    except Exception:  # unencodable now: copying one by one raises what copy_of raises
        return None


_encode = msgspec.json.Encoder().encode
_parameters = operator.attrgetter("parameters")


class _Provided(NamedTuple):
    """What a provider returned last, and the shared frozen copies made of it."""

    provider: ToolProvider
    sources: tuple[Any, ...]
    parameters: bytes | None  # the sources' parameters as JSON, when all are ToolSchemas
    frozen: bool  # every source a ToolSchema known deep-frozen: identity is enough
    copies: list[ToolSchema]


class _Slot(NamedTuple):
    """A tool reduced to what order_tools looks at (its name) and where it was collected."""

    name: str
    position: int
