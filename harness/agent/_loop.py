"""The agent loop: turns and steps, headers when owed, frozen requests, the rebuild invariant.

A turn: `turn/start`, then steps until the model stops asking for tools, then `turn/end` and idle.
A step: `assemble()`, `step/start`, the user's message (first step only), render, `request/header`
when owed, build and freeze the request, check it can be rebuilt from the log, dispatch,
`assistant/message`, each tool call and its result in the model's order, `step/end`.

Every failure ends the turn in balance: a step that was opened is closed, `agent/error` and
`turn/end {reason: error}` carry the message, and the loop is idle again. An `assemble()` that
rejects (a bad `tool_order`) fails before `step/start`, so that turn logs no step and no header and
makes no adapter call, and every later turn fails the same way until the config is fixed.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from harness.agent._context import Context
from harness.agent._frozen import is_deep_frozen
from harness.agent._header import (
    Conversation,
    Header,
    ToolUseBlock,
    canonical_header,
    header_equals,
    messages_json,
)
from harness.agent._llm import LlmRuntime, Request
from harness.agent._session import (
    AgentError,
    AssistantMessage,
    HeaderReason,
    RequestHeader,
    Session,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnEndReason,
    TurnStart,
    UserMessage,
)
from harness.agent._system_prompt import SystemPrompt, render_prompt
from harness.agent._tools import ToolRuntime

TOOL_BEFORE_EVENT = "tool/before"  # bail: a listener returning a reason blocks the call


class InvariantError(RuntimeError):
    """A dispatched request cannot be rebuilt from the session log."""


def check_rebuild_invariant(request: Request, session: Session) -> None:
    """The request must be exactly what the log folds to, and be immutable.

    The log is read through the session's incremental fold (equal to `fold_header` and
    `derive_messages` of the log, see `LogFold`). A request built from that fold holds the very
    messages tuple (or Conversation) the fold returns, and an object is equal to itself: only a
    request whose messages came from elsewhere has its messages compared byte by byte.
    """
    if not is_deep_frozen(request):
        raise InvariantError("rebuild invariant: the request is not deep-frozen")
    if not session.live or request.session_id != session.id:
        raise InvariantError(f"rebuild invariant: session {request.session_id!r} is not live")
    if not session.count(StepStart):
        raise InvariantError("rebuild invariant: the log holds no step/start")
    folded = session.header()
    if folded is None:
        raise InvariantError("rebuild invariant: the log holds no request/header")
    shared = isinstance(request.messages, Conversation)
    derived = session.conversation() if shared else session.messages()
    if request.messages is not derived and messages_json(request.messages) != messages_json(
        derived
    ):
        raise InvariantError("rebuild invariant: the request's messages differ from the log's")
    rebuilt = request.header()
    if not header_equals(rebuilt, folded):
        part = _first_differing_part(rebuilt, folded)
        raise InvariantError(
            f"rebuild invariant: the request's {part} differ from the logged header"
        )


def _first_differing_part(a: Header, b: Header) -> str:
    for part in ("config", "system", "tools"):
        if msgspec.json.encode(getattr(a, part)) != msgspec.json.encode(getattr(b, part)):
            return {"config": "model settings", "system": "system text", "tools": "tools"}[part]
    return "header bytes"  # pragma: no cover - equal parts make equal bytes


class AgentLoop:
    """Runs turns over one session. A new loop over a log with headers resumes it."""

    def __init__(self, ctx: Context, *, max_steps: int = 16) -> None:
        self.ctx = ctx
        self.session = ctx.get(Session)
        self.prompt = ctx.get(SystemPrompt)
        self.llm = ctx.get(LlmRuntime)
        self.tools = ctx.get(ToolRuntime)
        self.max_steps = max_steps
        self.state: Literal["idle", "running"] = "idle"
        self._logged_header = False
        self._abort = False

    def abort(self) -> None:
        """Ask the running turn to stop at the next step boundary."""
        self._abort = True

    async def run_turn(self, text: str) -> TurnEnd:
        if self.state != "idle":
            raise RuntimeError("a turn is already running")
        self.state = "running"
        self._abort = False
        open_step: int | None = None
        try:
            self.session.append(TurnStart(turn=self.session.count(TurnStart) + 1))
            reason: TurnEndReason = "completed"
            pending_user: str | None = text
            for _ in range(self.max_steps):
                if self._abort:
                    reason = "aborted"
                    break
                # read_only: the loop only reads the assembly, so when no listener sees it either
                # its tools may be shared frozen copies rather than fresh mutable ones.
                assembly = await self.prompt.assemble(read_only=True)
                open_step = self.session.count(StepStart) + 1
                self.session.append(StepStart(step=open_step))
                if pending_user is not None:
                    self.session.append(UserMessage(text=pending_user))
                    pending_user = None
                header = canonical_header(self.llm.config, render_prompt(assembly), assembly.tools)
                self._log_header_if_owed(header)
                request = Request.build(header, self.session.request_messages(), self.session.id)
                request = await self.llm.prepare(request)
                check_rebuild_invariant(request, self.session)
                reply = await self.llm.dispatch(request)
                self.session.append(
                    AssistantMessage(content=reply.content, stop_reason=reply.stop_reason)
                )
                calls = reply.tool_calls
                blocked = await self._run_tools(calls)
                self.session.append(StepEnd(step=open_step, reason=reply.stop_reason))
                open_step = None
                if blocked:
                    reason = "blocked"
                    break
                if reply.stop_reason == "max_tokens":
                    reason = "max-tokens"
                    break
                if not calls:
                    break
            else:
                raise RuntimeError(f"the turn did not finish within {self.max_steps} steps")
            return self._end(TurnEnd(reason=reason))
        except Exception as error:  # every failure ends the turn in balance
            message = str(error) or type(error).__name__
            try:
                if open_step is not None:
                    self.session.append(StepEnd(step=open_step, reason="error"))
                self.session.append(AgentError(message=message))
                return self._end(TurnEnd(reason="error", message=message))
            finally:
                self.state = "idle"  # even when the log itself refuses the failure events

    def _end(self, event: TurnEnd) -> TurnEnd:
        self.state = "idle"
        stamped = self.session.append(event)
        assert isinstance(stamped, TurnEnd)
        return stamped

    def _log_header_if_owed(self, header: Header) -> None:
        reason: HeaderReason | None
        if not self._logged_header:
            reason = "resume" if self.session.count(RequestHeader) else "initial"
        elif not header_equals(header, self.session.header()):
            reason = "change"
        else:
            reason = None
        if reason is not None:
            self.session.append(RequestHeader(header=header, reason=reason))
            self._logged_header = True

    async def _run_tools(self, calls: tuple[ToolUseBlock, ...]) -> bool:
        """Run the reply's tool calls in model order; True when a listener blocked one."""
        blocked = False
        for call in calls:
            self.session.append(ToolCall(id=call.id, name=call.name, input=call.input))
            veto = None if blocked else self.ctx.bail(TOOL_BEFORE_EVENT, call)
            if blocked or veto is not None:
                # Every tool_use still gets its result, so the next request stays valid.
                content = (
                    f"blocked: {veto}" if not blocked else "not run: an earlier call was blocked"
                )
                self.session.append(
                    ToolResult(tool_use_id=call.id, name=call.name, content=content, is_error=True)
                )
                blocked = True
                continue
            try:
                result = await self.tools.call(call.name, dict(call.input))
                content = (
                    result if isinstance(result, str) else msgspec.json.encode(result).decode()
                )
                is_error = False
            except Exception as error:  # a failing tool is the model's problem, not the turn's
                content, is_error = f"{type(error).__name__}: {error}", True
            self.session.append(
                ToolResult(tool_use_id=call.id, name=call.name, content=content, is_error=is_error)
            )
        return blocked
