"""Tool schemas and the tool runtime: a membership store in registration order.

`ToolRuntime` never sorts. Registration order is whatever the concurrent loader produced, and it is
prompt composition's job (`system_prompt.order_tools`) to turn that into the model-side order; the
registry is consumed by more than prompt assembly, so it keeps the plain facts.

The registry keeps deep-frozen copies of what is registered (`ToolSchema.frozen_copy_of`): a
registered schema cannot be edited in place (that raises `FrozenError`); to change a tool, dispose
of it and register the new schema. So a schema the registry handed out once is the same value
forever, and assembly proves "nothing changed" by identity instead of re-encoding every schema at
every step (decision 0012).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from harness.agent._context import Context
from harness.agent._frozen import FrozenDict, deep_freeze, is_deep_frozen

ToolHandler = Callable[[dict[str, Any]], Any | Awaitable[Any]]


class ToolSchema(msgspec.Struct, frozen=True, forbid_unknown_fields=True, weakref=True):
    """What the model sees of a tool: exactly these three fields, in this order."""

    name: str
    description: str
    parameters: dict[str, Any]

    @classmethod
    def copy_of(cls, schema: ToolSchema | Mapping[str, Any]) -> ToolSchema:
        """Copy a provider's schema to exactly its three fields (extra fields are dropped)."""
        name, description, parameters = _fields(schema)
        # A deep copy: a listener editing a nested schema in place must not edit the registry.
        return cls(name, description, _decode(_encode(parameters)))

    @classmethod
    def frozen_copy_of(cls, schema: ToolSchema | Mapping[str, Any]) -> ToolSchema:
        """`deep_freeze(ToolSchema.copy_of(schema))`, shared between equal copies.

        The copy is a function of the name, the description and the parameters' JSON bytes
        alone (it is decoded from them), so equal inputs give one frozen object, made once.
        A prompt assembly nobody edits needs no fresh copies; sharing them makes the headers of
        consecutive steps hold the same tool objects, which then compare by identity.
        """
        if type(schema) is ToolSchema and schema in _shared:
            return _shared[schema]
        name, description, parameters = _fields(schema)
        encoded = _encode(parameters)
        if type(name) is not str or type(description) is not str:
            return deep_freeze(cls(name, description, _decode(encoded)))
        key = (name, description, encoded)
        found = _interned.get(key)
        if found is None:
            found = deep_freeze(cls(name, description, _decode(encoded)))
            is_deep_frozen(found)  # JSON-decoded, so it is: this remembers it as checked
            if len(_interned) >= _INTERNED_SLOTS:
                _interned.clear()  # forgetting only costs a copy
            _interned[key] = found
        if type(schema) is ToolSchema and type(parameters) is FrozenDict and is_deep_frozen(schema):
            _shared.add(schema, found)  # a deep-frozen source can never encode differently
        return found


def _fields(schema: ToolSchema | Mapping[str, Any]) -> tuple[Any, Any, Any]:
    if isinstance(schema, ToolSchema):
        return schema.name, schema.description, schema.parameters
    parameters = schema.get("parameters") or {"type": "object", "properties": {}}
    return schema["name"], schema.get("description", ""), parameters


class _SharedCopies:
    """Frozen copies of deep-frozen source schemas, by identity of the source (held strongly,
    so its id is not reused while the entry exists)."""

    SLOTS = 1 << 12

    def __init__(self) -> None:
        self.copies: dict[int, tuple[ToolSchema, ToolSchema]] = {}

    def __contains__(self, source: ToolSchema) -> bool:
        entry = self.copies.get(id(source))
        return entry is not None and entry[0] is source

    def __getitem__(self, source: ToolSchema) -> ToolSchema:
        return self.copies[id(source)][1]

    def add(self, source: ToolSchema, copy: ToolSchema) -> None:
        if len(self.copies) >= self.SLOTS:
            self.copies.clear()
        self.copies[id(source)] = (source, copy)


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_INTERNED_SLOTS = 1 << 12
_interned: dict[tuple[str, str, bytes], ToolSchema] = {}
_shared = _SharedCopies()


class ToolError(RuntimeError):
    """A tool call named no registered tool, or its handler failed."""


@dataclass(frozen=True)
class RegisteredTool:
    schema: ToolSchema
    handler: ToolHandler | None
    owner: str | None  # the plugin that registered it, for provenance in drift reports


class ToolRuntime:
    """Registered tools in registration order, deep-frozen. Names may repeat across providers."""

    def __init__(self) -> None:
        self._tools: list[RegisteredTool] = []
        self._handlers: dict[str, ToolHandler] = {}
        # name -> handler of the first registered tool with that name and a handler; rebuilt
        # after any (un)registration, so a call does not scan every registered tool.
        self._callable: dict[str, ToolHandler] | None = None
        self._schemas: tuple[ToolSchema, ...] | None = None  # schemas(), until (un)registration

    def register(
        self,
        schema: ToolSchema | Mapping[str, Any],
        handler: ToolHandler | None = None,
        *,
        owner: str | None = None,
    ) -> Callable[[], None]:
        entry = RegisteredTool(ToolSchema.frozen_copy_of(schema), handler, owner)
        self._tools.append(entry)
        self._changed()

        def dispose() -> None:
            if entry in self._tools:
                self._tools.remove(entry)
                self._changed()

        return dispose

    def register_handler(self, name: str, handler: ToolHandler) -> Callable[[], None]:
        """Make a tool callable whose schema reaches the prompt another way (its own provider)."""
        self._handlers[name] = handler

        def dispose() -> None:
            self._handlers.pop(name, None)

        return dispose

    def _changed(self) -> None:
        self._callable = None
        self._schemas = None

    def schemas(self) -> list[ToolSchema]:
        return list(self.frozen_schemas())

    def frozen_schemas(self) -> tuple[ToolSchema, ...]:
        """`schemas()` as a tuple: the very same tuple until a tool is registered or disposed
        of, so a consumer that saw it before knows by identity that nothing changed."""
        if self._schemas is None:
            self._schemas = tuple(tool.schema for tool in self._tools)
        return self._schemas

    def entries(self) -> tuple[RegisteredTool, ...]:
        return tuple(self._tools)

    def _first_handler(self, name: str) -> ToolHandler | None:
        """The handler of the first registered tool named `name` that has one."""
        if self._callable is None and all(type(t.schema.name) is str for t in self._tools):
            found: dict[str, ToolHandler] = {}
            for tool in self._tools:
                if tool.handler is not None:
                    found.setdefault(tool.schema.name, tool.handler)
            self._callable = found
        if self._callable is not None and isinstance(name, str):
            return self._callable.get(name)
        return next(  # names that are not strings: compare as they are
            (t.handler for t in self._tools if t.schema.name == name and t.handler is not None),
            None,
        )

    def owners(self) -> dict[str, str | None]:
        """Tool name -> the plugin that registered it first."""
        owners: dict[str, str | None] = {}
        for tool in self._tools:
            owners.setdefault(tool.schema.name, tool.owner)
        return owners

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        handler = self._first_handler(name)
        if handler is None:
            handler = self._handlers.get(name)
        if handler is None:
            raise ToolError(f"no registered tool named {name!r} can be called")
        result = handler(arguments)
        return await result if inspect.isawaitable(result) else result


def register_tool(
    ctx: Context, schema: ToolSchema | Mapping[str, Any], handler: ToolHandler | None = None
) -> Callable[[], None]:
    """Register a tool from a plugin's context, recording the plugin as its owner."""
    return ctx.get(ToolRuntime).register(schema, handler, owner=ctx.owner)
