"""Tool schemas and the tool runtime: a membership store in registration order.

`ToolRuntime` never sorts. Registration order is whatever the concurrent loader produced, and it is
prompt composition's job (`system_prompt.order_tools`) to turn that into the model-side order; the
registry is consumed by more than prompt assembly, so it keeps the plain facts.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from harness.agent.context import Context

ToolHandler = Callable[[dict[str, Any]], Any | Awaitable[Any]]


class ToolSchema(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the model sees of a tool: exactly these three fields, in this order."""

    name: str
    description: str
    parameters: dict[str, Any]

    @classmethod
    def copy_of(cls, schema: ToolSchema | Mapping[str, Any]) -> ToolSchema:
        """Copy a provider's schema to exactly its three fields (extra fields are dropped)."""
        if isinstance(schema, ToolSchema):
            name, description, parameters = schema.name, schema.description, schema.parameters
        else:
            name, description = schema["name"], schema.get("description", "")
            parameters = schema.get("parameters") or {"type": "object", "properties": {}}
        # A deep copy: a listener editing a nested schema in place must not edit the registry.
        return cls(name, description, msgspec.json.decode(msgspec.json.encode(parameters)))


class ToolError(RuntimeError):
    """A tool call named no registered tool, or its handler failed."""


@dataclass(frozen=True)
class RegisteredTool:
    schema: ToolSchema
    handler: ToolHandler | None
    owner: str | None  # the plugin that registered it, for provenance in drift reports


class ToolRuntime:
    """Registered tools in registration order. Names may repeat across providers."""

    def __init__(self) -> None:
        self._tools: list[RegisteredTool] = []
        self._handlers: dict[str, ToolHandler] = {}

    def register(
        self,
        schema: ToolSchema | Mapping[str, Any],
        handler: ToolHandler | None = None,
        *,
        owner: str | None = None,
    ) -> Callable[[], None]:
        entry = RegisteredTool(ToolSchema.copy_of(schema), handler, owner)
        self._tools.append(entry)

        def dispose() -> None:
            if entry in self._tools:
                self._tools.remove(entry)

        return dispose

    def register_handler(self, name: str, handler: ToolHandler) -> Callable[[], None]:
        """Make a tool callable whose schema reaches the prompt another way (its own provider)."""
        self._handlers[name] = handler

        def dispose() -> None:
            self._handlers.pop(name, None)

        return dispose

    def schemas(self) -> list[ToolSchema]:
        return [tool.schema for tool in self._tools]

    def entries(self) -> tuple[RegisteredTool, ...]:
        return tuple(self._tools)

    def owners(self) -> dict[str, str | None]:
        """Tool name -> the plugin that registered it first."""
        owners: dict[str, str | None] = {}
        for tool in self._tools:
            owners.setdefault(tool.schema.name, tool.owner)
        return owners

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        handler = next(
            (t.handler for t in self._tools if t.schema.name == name and t.handler is not None),
            self._handlers.get(name),
        )
        if handler is None:
            raise ToolError(f"no registered tool named {name!r} can be called")
        result = handler(arguments)
        return await result if inspect.isawaitable(result) else result


def register_tool(
    ctx: Context, schema: ToolSchema | Mapping[str, Any], handler: ToolHandler | None = None
) -> Callable[[], None]:
    """Register a tool from a plugin's context, recording the plugin as its owner."""
    return ctx.get(ToolRuntime).register(schema, handler, owner=ctx.owner)
