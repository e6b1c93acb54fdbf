"""The session log: typed events, the request header, and what the log folds to.

The log is the source of truth a request can be rebuilt from: its messages are derived from the
message events, and its model, system text and tools from the latest `request/header`. A header is
logged only when it is owed (the first of the log, the first of a resumed loop, or a change), so
two equal headers in a row never appear.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from harness.agent.context import Context
from harness.agent.frozen import deep_freeze
from harness.agent.tools import ToolSchema

SESSION_EVENT = "session/event"

# -- messages -----------------------------------------------------------------------------------


class TextBlock(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ToolUseBlock(msgspec.Struct, frozen=True, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(msgspec.Struct, frozen=True, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: str
    is_error: bool = False


Block = TextBlock | ToolUseBlock | ToolResultBlock


class Message(msgspec.Struct, frozen=True):
    role: Literal["user", "assistant"]
    content: tuple[Block, ...]


# -- header -------------------------------------------------------------------------------------


class LlmConfig(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The request settings that belong to the header: a change here moves the cache key."""

    provider: str
    model: str
    max_tokens: int = 1024
    temperature: float | msgspec.UnsetType = msgspec.UNSET


class Header(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The request prefix a provider caches: settings, system text, tools. Empty parts are absent."""

    config: LlmConfig
    system: str | msgspec.UnsetType = msgspec.UNSET
    tools: tuple[ToolSchema, ...] | msgspec.UnsetType = msgspec.UNSET


def canonical_header(config: LlmConfig, system: str, tools: Iterable[ToolSchema]) -> Header:
    """The header in canonical form: deep-frozen, empty system and empty tools dropped."""
    tool_tuple = tuple(tools)
    return deep_freeze(
        Header(
            config=config,
            system=system if system else msgspec.UNSET,
            tools=tool_tuple if tool_tuple else msgspec.UNSET,
        )
    )


def header_bytes(header: Header) -> bytes:
    return msgspec.json.encode(header)


def header_equals(a: Header | None, b: Header | None) -> bool:
    """Config fields, system text, and tools in order, with key order significant: byte equality."""
    if a is None or b is None:
        return a is b
    return a is b or header_bytes(a) == header_bytes(b)


# -- events -------------------------------------------------------------------------------------


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    time: str = ""


class TurnStart(Event, tag="turn/start"):
    turn: int


class UserMessage(Event, tag="user/message"):
    text: str


class StepStart(Event, tag="step/start"):
    step: int


HeaderReason = Literal["initial", "resume", "change"]


class RequestHeader(Event, tag="request/header"):
    header: Header
    reason: HeaderReason


class AssistantMessage(Event, tag="assistant/message"):
    content: tuple[Block, ...]
    stop_reason: str


class ToolCall(Event, tag="tool/call"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResult(Event, tag="tool/result"):
    tool_use_id: str
    name: str
    content: str
    is_error: bool = False


class StepEnd(Event, tag="step/end"):
    step: int
    reason: str


TurnEndReason = Literal["completed", "aborted", "blocked", "error", "max-tokens"]


class TurnEnd(Event, tag="turn/end"):
    reason: TurnEndReason
    message: str | msgspec.UnsetType = msgspec.UNSET


class AgentError(Event, tag="agent/error"):
    message: str


LogEvent = (
    TurnStart
    | UserMessage
    | StepStart
    | RequestHeader
    | AssistantMessage
    | ToolCall
    | ToolResult
    | StepEnd
    | TurnEnd
    | AgentError
)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Session:
    """A live session: its id and its append-only log. Appends are announced on the context."""

    def __init__(
        self,
        ctx: Context,
        *,
        session_id: str | None = None,
        log: Sequence[LogEvent] = (),
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self.ctx = ctx
        self.id = session_id or str(uuid.uuid4())
        self.log: list[LogEvent] = list(log)
        self.clock = clock
        self.live = True

    def append(self, event: LogEvent) -> LogEvent:
        if not self.live:
            raise RuntimeError(f"session {self.id} is closed")
        stamped = deep_freeze(msgspec.structs.replace(event, time=self.clock()))
        self.log.append(stamped)
        self.ctx.emit(SESSION_EVENT, stamped, self)
        return stamped

    def close(self) -> None:
        self.live = False


def fold_header(log: Iterable[LogEvent]) -> Header | None:
    """The header in force after the log: the latest `request/header`."""
    latest: Header | None = None
    for event in log:
        if isinstance(event, RequestHeader):
            latest = event.header
    return latest


def has_header(log: Iterable[LogEvent]) -> bool:
    return any(isinstance(event, RequestHeader) for event in log)


def derive_messages(log: Iterable[LogEvent]) -> tuple[Message, ...]:
    """The conversation as the model sees it, rebuilt from the log alone.

    Tool results are sent back in one user message following the assistant message that asked for
    them, in the order the calls were made.
    """
    messages: list[Message] = []
    results: list[Block] = []

    def flush_results() -> None:
        if results:
            messages.append(Message("user", tuple(results)))
            results.clear()

    for event in log:
        if isinstance(event, UserMessage):
            flush_results()
            messages.append(Message("user", (TextBlock(event.text),)))
        elif isinstance(event, AssistantMessage):
            flush_results()
            messages.append(Message("assistant", event.content))
        elif isinstance(event, ToolResult):
            results.append(ToolResultBlock(event.tool_use_id, event.content, event.is_error))
    flush_results()
    return deep_freeze(tuple(messages))
