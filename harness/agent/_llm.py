"""The LLM runtime: frozen requests, the adapter protocol, and a scripted adapter.

A request is built once, deep-frozen, and never edited: whoever must change one (an `llm/request`
waterfall listener adding a cache hint, say) builds a new frozen copy with `Request.replace`. The
runtime announces the exact request it dispatches (`llm/dispatch`) and the reply it got
(`llm/reply`); that is all an observer, the harness included, needs to see.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Protocol

import msgspec

from harness.agent._context import Context
from harness.agent._frozen import (
    FrozenError,
    deep_freeze,
    is_deep_frozen,
    is_known_frozen,
    remember_frozen,
)
from harness.agent._header import (
    Block,
    Conversation,
    Header,
    LlmConfig,
    Message,
    TextBlock,
    ToolUseBlock,
    canonical_header,
)
from harness.agent._tools import ToolSchema

REQUEST_EVENT = "llm/request"
DISPATCH_EVENT = "llm/dispatch"
REPLY_EVENT = "llm/reply"

StopReason = Literal["end_turn", "tool_use", "max_tokens"]


class RequestFields(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The fields every form of a request shares (the dispatched one, and the harness's recorded
    one), in wire order; each form adds its tools, messages and session id after them."""

    provider: str
    model: str
    max_tokens: int = 1024
    temperature: float | msgspec.UnsetType = msgspec.UNSET
    system: str | msgspec.UnsetType = msgspec.UNSET


class Request(RequestFields, frozen=True, kw_only=True, omit_defaults=True, weakref=True):
    """One model request, deep-frozen: mutating it at any depth raises.

    Its messages are a tuple, or (when the session shares its conversation with its requests,
    `boot_agent(share_conversation=True)`) a `Conversation`: an immutable view of the session's
    messages that msgspec does not encode by itself (encode `tuple(request.messages)`).
    """

    tools: tuple[ToolSchema, ...] | msgspec.UnsetType = msgspec.UNSET
    messages: Sequence[Message] = ()  # a tuple, or a Conversation the session shares
    session_id: str

    @classmethod
    def build(cls, header: Header, messages: Sequence[Message], session_id: str) -> Request:
        config = header.config
        if type(messages) is not tuple and not isinstance(messages, Conversation):
            messages = tuple(messages)
        request = cls(
            provider=config.provider,
            model=config.model,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            system=header.system,
            tools=header.tools,
            messages=messages,
            session_id=session_id,
        )
        # Built from a canonical header and the session's messages, it usually is deep-frozen
        # already: then it is its own frozen copy, and checking it now remembers it as checked.
        # A header known deep-frozen has deep-frozen fields, so only the rest needs a look.
        if (
            is_known_frozen(header)
            and type(session_id) is str
            and (is_known_frozen(messages) or is_deep_frozen(messages))
        ):
            remember_frozen(request)
            return request
        return request if is_deep_frozen(request) else deep_freeze(request)

    @property
    def config(self) -> LlmConfig:
        return LlmConfig(self.provider, self.model, self.max_tokens, self.temperature)

    def header(self) -> Header:
        tools = () if isinstance(self.tools, msgspec.UnsetType) else self.tools
        system = "" if isinstance(self.system, msgspec.UnsetType) else self.system
        return canonical_header(self.config, system, tools)

    def replace(self, **changes: Any) -> Request:
        """A new frozen request with `changes` applied; this one is left as it was."""
        return deep_freeze(msgspec.structs.replace(self, **changes))


# -- streaming ----------------------------------------------------------------------------------


class TextDelta(msgspec.Struct, frozen=True, tag="text-delta", tag_field="type"):
    text: str


class ToolCallDelta(msgspec.Struct, frozen=True, tag="tool-call", tag_field="type"):
    id: str
    name: str
    input: dict[str, Any]


class StreamEnd(msgspec.Struct, frozen=True, tag="end", tag_field="type"):
    stop_reason: StopReason


StreamEvent = TextDelta | ToolCallDelta | StreamEnd


class AdapterError(RuntimeError):
    """The model call failed (a provider error, or a script with no reply left)."""


class Adapter(Protocol):
    """Streams a model's answer to one request."""

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]: ...


class Reply(msgspec.Struct, frozen=True, gc=False):
    content: tuple[Block, ...]
    stop_reason: StopReason

    @property
    def tool_calls(self) -> tuple[ToolUseBlock, ...]:
        return tuple(block for block in self.content if isinstance(block, ToolUseBlock))


class LlmRuntime:
    """Dispatches frozen requests to an adapter and folds its stream into a reply."""

    def __init__(self, ctx: Context, adapter: Adapter, config: LlmConfig) -> None:
        self.ctx = ctx
        self.adapter = adapter
        self.config = config

    async def prepare(self, request: Request) -> Request:
        """Run the `llm/request` waterfall; listeners may return a new frozen copy."""
        prepared = await self.ctx.waterfall(REQUEST_EVENT, request)
        if not isinstance(prepared, Request) or not is_deep_frozen(prepared):
            raise FrozenError("an llm/request listener returned a request that is not deep-frozen")
        return prepared

    async def dispatch(self, request: Request) -> Reply:
        self.ctx.emit(DISPATCH_EVENT, request)
        text: list[str] = []
        content: list[Block] = []
        stop: StopReason | None = None
        async for event in self.adapter.stream(request):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ToolCallDelta):
                if text:
                    content.append(TextBlock("".join(text)))
                    text.clear()
                content.append(ToolUseBlock(event.id, event.name, event.input))
            else:
                stop = event.stop_reason
        if text:
            content.append(TextBlock("".join(text)))
        if stop is None:
            raise AdapterError("the model's stream ended without a stop reason")
        reply = deep_freeze(Reply(tuple(content), stop))
        self.ctx.emit(REPLY_EVENT, reply, request)
        return reply


# -- the scripted adapter -----------------------------------------------------------------------


class ScriptedToolCall(msgspec.Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    id: str
    name: str
    input: dict[str, Any] = {}


class ScriptedReply(
    msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True, gc=False
):
    """One recorded answer: text, tool calls, or a provider error."""

    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    error: str | msgspec.UnsetType = msgspec.UNSET
    stop_reason: StopReason | msgspec.UnsetType = msgspec.UNSET

    def resolved_stop_reason(self) -> StopReason:
        if not isinstance(self.stop_reason, msgspec.UnsetType):
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


class ScriptedAdapter:
    """Answers from a list of recorded replies, in order, and keeps every request it received.

    `keep_requests=False` keeps only their number (`calls`): each request holds the whole
    conversation so far, so keeping all of a long session's requests takes memory quadratic in
    its length.
    """

    def __init__(self, replies: Sequence[ScriptedReply], *, keep_requests: bool = True) -> None:
        self.replies = list(replies)
        self.requests: list[Request] = []
        self.keep_requests = keep_requests
        self.calls = 0

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        if self.keep_requests:
            self.requests.append(request)
        index = self.calls
        self.calls += 1
        if index >= len(self.replies):
            raise AdapterError(
                f"the script has {len(self.replies)} replies; request {index + 1} has none left"
            )
        reply = self.replies[index]
        if not isinstance(reply.error, msgspec.UnsetType):
            raise AdapterError(reply.error)
        for chunk in _chunks(reply.text):
            yield TextDelta(chunk)
        for call in reply.tool_calls:
            yield ToolCallDelta(call.id, call.name, call.input)
        yield StreamEnd(reply.resolved_stop_reason())


def _chunks(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
