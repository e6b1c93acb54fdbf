"""The session log: typed events, the request header, and what the log folds to.

The log is the source of truth a request can be rebuilt from: its messages are derived from the
message events, and its model, system text and tools from the latest `request/header`. A header is
logged only when it is owed (the first of the log, the first of a resumed loop, or a change), so
two equal headers in a row never appear.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from harness.agent.context import Context
from harness.agent.frozen import (
    WeakIdentitySet,
    deep_freeze,
    extend_frozen,
    is_deep_frozen,
    is_known_frozen,
)
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


class Header(
    msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True, weakref=True
):
    """The request prefix a provider caches: settings, system text, tools (empty ones absent)."""

    config: LlmConfig
    system: str | msgspec.UnsetType = msgspec.UNSET
    tools: tuple[ToolSchema, ...] | msgspec.UnsetType = msgspec.UNSET


def canonical_header(config: LlmConfig, system: str, tools: Iterable[ToolSchema]) -> Header:
    """The header in canonical form: deep-frozen, empty system and empty tools dropped.

    Every step builds the header it would send, and usually it is the one of the step before.
    When the config encodes the same, the system text is equal and the tools are the very same
    (already frozen) objects in the same order, that earlier header is returned: the value is the
    same, and equality checks downstream become identity checks.
    """
    tool_tuple = tuple(tools)
    found = _headers.find(config, system, tool_tuple)
    if found is not None:
        return found
    header = deep_freeze(
        Header(
            config=config,
            system=system if system else msgspec.UNSET,
            tools=tool_tuple if tool_tuple else msgspec.UNSET,
        )
    )
    _headers.admit(header)
    return header


class _Headers:
    """Canonical headers already built, so equal ones are not built and compared again.

    `recent` are the last few, matched by identity of their parts (see canonical_header).
    `checked` are those known to be deep-frozen and to encode (held weakly, by identity): two of
    them compare part by part without raising, as their encodings exist.
    """

    RECENT = 8

    def __init__(self) -> None:
        self.recent: list[Header] = []
        self.checked = WeakIdentitySet()

    def find(self, config: LlmConfig, system: str, tools: tuple[ToolSchema, ...]) -> Header | None:
        if type(system) is not str or type(config) is not LlmConfig:
            return None
        config_bytes: bytes | None = None
        for header in self.recent:
            if isinstance(header.system, str):
                if header.system is not system and header.system != system:
                    continue
            elif system:
                continue
            if not _same_objects(header.tools, tools):
                continue
            if header.config is not config:
                if config_bytes is None:
                    config_bytes = _encode(config)
                if _encode(header.config) != config_bytes:
                    continue
            return header
        return None

    def admit(self, header: Header) -> None:
        # Only headers whose tools are known frozen (shared copies): checking others would walk
        # every schema again, and they rarely repeat; they compare by whole encodings instead.
        if not _plain_parts(header):
            return
        if isinstance(header.tools, tuple) and not all(map(is_known_frozen, header.tools)):
            return
        if not is_deep_frozen(header):
            return
        try:
            _encode(header)
        except Exception:  # not encodable: comparisons must keep raising as they did
            return
        self.checked.add(header)
        self.recent.insert(0, header)
        del self.recent[self.RECENT :]

    def is_checked(self, header: Header) -> bool:
        return header in self.checked


def _same_objects(held: tuple[Any, ...] | msgspec.UnsetType, tools: tuple[Any, ...]) -> bool:
    if isinstance(held, msgspec.UnsetType):
        return not tools
    return held is tools or (len(held) == len(tools) and all(map(operator.is_, held, tools)))


def _plain_parts(header: Header) -> bool:
    """The shapes the part-wise comparison handles (anything else compares whole encodings)."""
    return (
        type(header) is Header
        and type(header.config) is LlmConfig
        and (type(header.system) is str or header.system is msgspec.UNSET)
        and (type(header.tools) is tuple or header.tools is msgspec.UNSET)
    )


_headers = _Headers()
_encode = msgspec.json.Encoder().encode


def header_bytes(header: Header) -> bytes:
    return msgspec.json.encode(header)


def header_equals(a: Header | None, b: Header | None) -> bool:
    """Config fields, system text, and tools in order, with key order significant: byte equality.

    Two headers checked by canonical_header compare part by part, so the parts they share (the
    same system string, the same frozen tool objects) cost nothing. A header encodes as the
    concatenation of its parts' encodings, so this is exactly `header_bytes(a) == header_bytes(b)`.
    """
    if a is None or b is None:
        return a is b
    if a is b:
        return True
    if not (_headers.is_checked(a) and _headers.is_checked(b)):
        return header_bytes(a) == header_bytes(b)
    if a.config is not b.config and _encode(a.config) != _encode(b.config):
        return False
    if isinstance(a.system, str) != isinstance(b.system, str) or a.system != b.system:
        return False
    if isinstance(a.tools, tuple) and isinstance(b.tools, tuple):
        pairs = zip(a.tools, b.tools, strict=False)
        return a.tools is b.tools or (
            len(a.tools) == len(b.tools)
            and all(x is y or _encode(x) == _encode(y) for x, y in pairs)
        )
    return a.tools is b.tools  # both UNSET; one UNSET and one tuple encode differently


# -- events -------------------------------------------------------------------------------------


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    time: str = ""


class TurnStart(Event, frozen=True, tag="turn/start"):
    turn: int


class UserMessage(Event, frozen=True, tag="user/message"):
    text: str


class StepStart(Event, frozen=True, tag="step/start"):
    step: int


HeaderReason = Literal["initial", "resume", "change"]


class RequestHeader(Event, frozen=True, tag="request/header"):
    header: Header
    reason: HeaderReason


class AssistantMessage(Event, frozen=True, tag="assistant/message"):
    content: tuple[Block, ...]
    stop_reason: str


class ToolCall(Event, frozen=True, tag="tool/call"):
    id: str
    name: str
    input: dict[str, Any]


class ToolResult(Event, frozen=True, tag="tool/result"):
    tool_use_id: str
    name: str
    content: str
    is_error: bool = False


class StepEnd(Event, frozen=True, tag="step/end"):
    step: int
    reason: str


TurnEndReason = Literal["completed", "aborted", "blocked", "error", "max-tokens"]


class TurnEnd(Event, frozen=True, tag="turn/end"):
    reason: TurnEndReason
    message: str | msgspec.UnsetType = msgspec.UNSET


class AgentError(Event, frozen=True, tag="agent/error"):
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


class EventLog(list[LogEvent]):
    """A session's log: a list that notes every change other than growth at its end.

    The session folds its log incrementally (messages, latest header, event counts); that is only
    valid while what was folded has not changed. Appending and extending leave `revision` alone;
    every other change (replacing, inserting, deleting, sorting...) bumps it and the fold starts
    over. A plain list assigned to `Session.log` is refolded from scratch on every read.
    """

    __slots__ = ("revision",)

    def __init__(self, events: Iterable[LogEvent] = ()) -> None:
        super().__init__(events)
        self.revision = getattr(self, "revision", -1) + 1  # re-initialising is a change too

    def _changed(name: str) -> Any:  # type: ignore[misc]
        method = getattr(list, name)

        def change(self: EventLog, *args: Any, **kwargs: Any) -> Any:
            self.revision += 1
            return method(self, *args, **kwargs)

        change.__name__ = name
        return change

    __setitem__ = _changed("__setitem__")
    __delitem__ = _changed("__delitem__")
    __imul__ = _changed("__imul__")
    insert = _changed("insert")
    pop = _changed("pop")
    remove = _changed("remove")
    reverse = _changed("reverse")
    sort = _changed("sort")
    clear = _changed("clear")
    del _changed

    def __reduce__(self) -> Any:
        return (EventLog, (list(self),))


class LogFold:
    """What a log folds to, kept up to date as events are appended.

    The same results as the reference functions below (`derive_messages`, `fold_header`, counting
    events by type) for the events fed so far, at a cost proportional to the new events: a
    property test checks they agree on random logs. The conversation only grows at its end, so
    each messages tuple extends the previous one (checked deep-frozen once per new message)
    rather than being rebuilt. The last message may be the pending user message of tool results,
    which later results can still change before the next message commits it.
    """

    def __init__(self) -> None:
        self.size = 0  # events folded
        self.header: Header | None = None
        self._counts: dict[type[Any], int] = {}
        self._base: tuple[Message, ...] = ()  # the last messages tuple built
        self._base_pending: Message | None = None  # its last message, if that was pending
        self._fresh: list[Message] = []  # committed since _base was built
        self._results: list[Block] = []  # tool results not yet in a committed message
        self._pending: Message | None = None  # the message of _results, once built
        self._messages: tuple[Message, ...] | None = ()

    def feed(self, events: Iterable[LogEvent]) -> None:
        for event in events:
            self.size += 1
            kind = type(event)
            self._counts[kind] = self._counts.get(kind, 0) + 1
            if isinstance(event, UserMessage):
                self._commit_results()
                self._fresh.append(Message("user", (TextBlock(event.text),)))
                self._messages = None
            elif isinstance(event, AssistantMessage):
                self._commit_results()
                self._fresh.append(Message("assistant", event.content))
                self._messages = None
            elif isinstance(event, ToolResult):
                block = ToolResultBlock(event.tool_use_id, event.content, event.is_error)
                self._results.append(block)
                self._pending = None
                self._messages = None
            elif isinstance(event, RequestHeader):
                self.header = event.header

    def _pending_message(self) -> Message | None:
        if self._results and self._pending is None:
            self._pending = Message("user", tuple(self._results))
        return self._pending

    def _commit_results(self) -> None:
        if self._results:
            message = self._pending_message()
            assert message is not None
            self._fresh.append(message)
            self._results.clear()
            self._pending = None

    def messages(self) -> tuple[Message, ...]:
        """`derive_messages` of the events fed so far; the same object until a message changes."""
        if self._messages is None:
            base, fresh, pending = self._base, self._fresh, self._pending_message()
            if self._base_pending is not None:
                if fresh and fresh[0] is self._base_pending:
                    fresh = fresh[1:]  # the pending message was committed as it was: kept
                elif not fresh and pending is self._base_pending:
                    pending = None  # still pending and unchanged: kept
                else:  # more results joined it before it was committed: drop it
                    base = base[:-1]
            self._base = extend_frozen(base, [*fresh, pending] if pending else fresh)
            self._base_pending = pending
            self._fresh = []
            self._messages = self._base
        return self._messages

    def parts(self) -> tuple[tuple[Message, ...], int]:
        """`messages()` and how many of its first messages are committed (the rest, at most one,
        is the pending message of tool results).

        Within one fold a committed message never changes: a consumer that digests messages
        incrementally (the harness's recorder) digests each committed message once.
        """
        messages = self.messages()
        return messages, len(messages) - (self._base_pending is not None)

    def count(self, kind: type[Any]) -> int:
        """How many events fed so far are instances of `kind`."""
        return sum(n for t, n in self._counts.items() if issubclass(t, kind))


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
        self.log: list[LogEvent] = EventLog(log)
        self.clock = clock
        self.live = True
        self._fold = LogFold()
        self._folded_log: list[LogEvent] | None = None  # the log object _fold was fed from
        self._folded_revision = 0

    def append(self, event: LogEvent) -> LogEvent:
        if not self.live:
            raise RuntimeError(f"session {self.id} is closed")
        stamped = deep_freeze(msgspec.structs.replace(event, time=self.clock()))
        self.log.append(stamped)
        self.ctx.emit(SESSION_EVENT, stamped, self)
        return stamped

    def close(self) -> None:
        self.live = False

    def fold(self) -> LogFold:
        """The log folded: incrementally while the log only grew at its end, else from scratch."""
        log = self.log
        fold = self._fold
        if not isinstance(log, EventLog):
            fold = LogFold()  # a plain list may have changed anywhere: fold it all, every time
            fold.feed(log)
            return fold
        if self._folded_log is not log or self._folded_revision != log.revision:
            fold = self._fold = LogFold()
            self._folded_log, self._folded_revision = log, log.revision
        elif fold.size > len(log):  # pragma: no cover - shrinking bumps the revision
            fold = self._fold = LogFold()
        if fold.size < len(log):
            fold.feed(log[fold.size :])
        return fold

    def messages(self) -> tuple[Message, ...]:
        """`derive_messages(self.log)`, without rereading the whole log."""
        return self.fold().messages()

    def header(self) -> Header | None:
        """`fold_header(self.log)`, without rereading the whole log."""
        return self.fold().header

    def count(self, kind: type[Any]) -> int:
        """How many events of the log are instances of `kind`."""
        return self.fold().count(kind)


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
