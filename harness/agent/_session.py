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

from harness.agent._context import Context
from harness.agent._frozen import deep_freeze, is_deep_frozen, remember_frozen
from harness.agent._header import Block, Conversation, Header, Message, TextBlock, ToolResultBlock

SESSION_EVENT = "session/event"

# -- events -------------------------------------------------------------------------------------


class Event(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    tag_field="type",
    gc=False,
    forbid_unknown_fields=True,
):
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
    property test checks they agree on random logs. The conversation only grows at its end: each
    committed message is checked deep-frozen once and appended to a store that never changes
    otherwise, which every `messages()` tuple is made from and every `conversation()` shares.
    The last message may be the pending user message of tool results, which later results can
    still change before the next message commits it.
    """

    def __init__(self) -> None:
        self.size = 0  # events folded
        self.header: Header | None = None
        self._counts: dict[type[Any], int] = {}
        # kind -> the fed types when last asked, and those of them that are `kind`
        self._matching: dict[type[Any], tuple[tuple[type[Any], ...], list[type[Any]]]] = {}
        self._committed: list[Message] = []  # append-only: Conversations share it
        self._thawed = False  # a committed message is not deep-frozen (it holds a set, say)
        self._results: list[Block] = []  # tool results not yet in a committed message
        self._pending: Message | None = None  # the message of _results, once built
        self._pending_frozen = True  # whether _pending is deep-frozen
        self._messages: tuple[Message, ...] | None = ()
        self._conversation: Conversation | None = None

    def feed(self, events: Iterable[LogEvent]) -> None:
        for event in events:
            self.size += 1
            kind = type(event)
            self._counts[kind] = self._counts.get(kind, 0) + 1
            if isinstance(event, UserMessage):
                self._commit_results()
                self._commit(Message("user", (TextBlock(event.text),)))
            elif isinstance(event, AssistantMessage):
                self._commit_results()
                self._commit(Message("assistant", event.content))
            elif isinstance(event, ToolResult):
                block = ToolResultBlock(event.tool_use_id, event.content, event.is_error)
                self._results.append(block)
                self._pending = None
                self._messages = self._conversation = None
            elif isinstance(event, RequestHeader):
                self.header = event.header

    def _commit(self, message: Message, frozen: bool | None = None) -> None:
        if frozen is None:
            message, frozen = _frozen_copy(message)
        self._thawed = self._thawed or not frozen
        self._committed.append(message)
        self._messages = self._conversation = None

    def _pending_message(self) -> Message | None:
        if self._results and self._pending is None:
            self._pending, self._pending_frozen = _frozen_copy(
                Message("user", tuple(self._results))
            )
        return self._pending

    def _commit_results(self) -> None:
        if self._results:
            message = self._pending_message()
            assert message is not None
            self._results.clear()
            self._pending = None
            self._commit(message, self._pending_frozen)  # the very message a request may hold

    def _frozen(self, pending: Message | None) -> bool:
        return not self._thawed and (pending is None or self._pending_frozen)

    def messages(self) -> tuple[Message, ...]:
        """`derive_messages` of the events fed so far; the same object until a message changes."""
        if self._messages is None:
            pending = self._pending_message()
            messages = (*self._committed, pending) if pending else tuple(self._committed)
            if self._frozen(pending):  # every message checked: no need to walk them again
                remember_frozen(messages)
            self._messages = messages
        return self._messages

    def conversation(self) -> Conversation:
        """`messages()` as a Conversation sharing this fold's store: made in constant time, the
        same object until a message changes."""
        if self._conversation is None:
            pending = self._pending_message()
            self._conversation = Conversation(
                self._committed, len(self._committed), pending, self._frozen(pending)
            )
        return self._conversation

    def parts(self) -> tuple[tuple[Message, ...], int]:
        """`messages()` and how many of its first messages are committed (the rest, at most one,
        is the pending message of tool results).

        Within one fold a committed message never changes: a consumer that digests messages
        incrementally (the harness's recorder) digests each committed message once.
        """
        return self.messages(), len(self._committed)

    def committed(self) -> tuple[list[Message], Message | None]:
        """The store of committed messages (append-only: read it, never change it) and the
        pending message: what `messages()` and `conversation()` are made of."""
        return self._committed, self._pending_message()

    def count(self, kind: type[Any]) -> int:
        """How many events fed so far are instances of `kind`."""
        matching = self._matching.get(kind)
        if matching is None or len(matching[0]) != len(self._counts):
            # The event types fed so far that are `kind` (subclasses included), remembered
            # until a new type is fed.
            types = tuple(self._counts)
            matching = self._matching[kind] = (types, [t for t in types if issubclass(t, kind)])
        counts = self._counts
        return sum([counts[t] for t in matching[1]])


class Session:
    """A live session: its id and its append-only log. Appends are announced on the context."""

    def __init__(
        self,
        ctx: Context,
        *,
        session_id: str | None = None,
        log: Sequence[LogEvent] = (),
        clock: Callable[[], str] = utc_now,
        share_conversation: bool = False,
    ) -> None:
        self.ctx = ctx
        self.share_conversation = share_conversation
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

    def conversation(self) -> Conversation:
        """`messages()` as a Conversation (see `header.Conversation`), in constant time."""
        return self.fold().conversation()

    def request_messages(self) -> Sequence[Message]:
        """What a request built now holds: `conversation()` when this session shares its
        conversation with its requests, else `messages()`."""
        return self.conversation() if self.share_conversation else self.messages()

    def header(self) -> Header | None:
        """`fold_header(self.log)`, without rereading the whole log."""
        return self.fold().header

    def count(self, kind: type[Any]) -> int:
        """How many events of the log are instances of `kind`."""
        return self.fold().count(kind)


def _frozen_copy(message: Message) -> tuple[Message, bool]:
    """`deep_freeze(message)` and whether that is deep-frozen, walking it once when it is
    (a deep-frozen value is its own frozen copy)."""
    if is_deep_frozen(message):
        return message, True
    message = deep_freeze(message)
    return message, is_deep_frozen(message)


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
