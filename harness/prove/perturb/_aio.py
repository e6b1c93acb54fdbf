"""asyncio scheduling: an event loop of ours holds back task wake-ups and releases them in the
run's order (`_order` decides which go next). `_loops` makes every loop the build runs ours, by
mixing `Perturbing` into its class; a loop that outlives the run it was made in follows the run
in force.

**What is held.** A task's wake-up (`Task.__step`, `Task.__wakeup`: its first step, a sleep
ending, a future it awaited being set, an answer read from a pipe or a socket) is held when it
is scheduled; a pass of ours, scheduled in the same iteration, runs the ones `_order` releases,
in its order. Callbacks that are not task steps keep asyncio's FIFO order: transports and
protocols rely on it.

**Timers stay real.** Sleeps and `call_later` callbacks fire when they are due: a held task waits
for the sibling before it for as long as that sibling's latency really is, so time never runs
short. The timers that stand for deadlines (`asyncio.timeout`, `wait_for`, anyio's cancel scopes,
a scheduled `cancel()`, any callback named for a timeout) are noted as such, so nothing is held
past the middle of their window (`_run`).

**What keeps a task busy** is noted as it happens: a latency timer it set, a thread job it
submitted (`run_in_executor`, so `to_thread`), and the channels it opened: a helper process
(`subprocess_exec`, so `create_subprocess_exec` and anyio's `open_process`), a connection
(`create_connection`, so `open_connection`, httpx, aiohttp), a pipe, a socket used through
`sock_*` (`_channels`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from harness.prove.perturb._channels import HELPER_PROCESS, PIPE, SOCKET
from harness.prove.perturb._order import Scheduler
from harness.prove.perturb._run import current_run

__all__ = ["Perturbing"]

RECHECK_S: Final = 0.05  # while work is held, look again at least this often
# Rounds of release a pass may run while no callback is scheduled in between: a task that only
# yields (`await asyncio.sleep(0)`) goes on in the same loop iteration instead of one per step.
ROUNDS: Final = 8


def _deadline(callback: Callable[..., Any]) -> bool:
    """Whether a timer callback stands for a deadline (kept in real time) rather than a latency."""
    target = callback.func if isinstance(callback, functools.partial) else callback
    name = getattr(target, "__name__", "")
    if "timeout" in name or name == "_release_waiter":
        return True  # asyncio.timeout, wait_for, wait, as_completed, anyio, SSL handshakes
    return name == "cancel" and isinstance(getattr(target, "__self__", None), asyncio.Future)


@dataclass
class _State:
    """A loop's bookkeeping: the scheduler of the run in force, and the pass in flight."""

    scheduler: Scheduler
    pass_pending: bool = False
    recheck: Any = None  # the pending recheck timer
    recheck_at: float = 0.0
    raw: bool = False  # scheduling a timer of our own (uvloop's call_at calls call_later)
    in_timer: bool = False  # running a latency timer's callback
    callbacks: int = 0  # callbacks (not task steps) scheduled so far
    in_pass: bool = False
    flush: Callable[[], None] | None = None  # thread jobs to start when the pass ends


class Perturbing:
    """Mixed into the class of every loop a run makes or runs (see the module doc). It has no
    `__slots__`: a class swap needs the same layout, and every loop class has a `__dict__`."""

    def _harness(self) -> _State:
        state: _State | None = self.__dict__.get("_harness_state")
        run = current_run()
        if state is None:
            state = _State(Scheduler(run))
            state.scheduler.poke = functools.partial(self._harness_poke, state)
            self._harness_state = state
        elif state.scheduler.run is not run:
            leftovers = state.scheduler.drain()  # held in an earlier run: released at once
            for entry in leftovers:
                entry.first, entry.mark = True, -1
            state.scheduler = Scheduler(run)
            state.scheduler.poke = functools.partial(self._harness_poke, state)
            state.scheduler.held.extend(leftovers)
            if leftovers:
                self._harness_soon(state)
        return state

    # -- task wake-ups --------------------------------------------------------------------------

    def call_soon(
        self, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        task = getattr(callback, "__self__", None)
        if isinstance(task, asyncio.Task):
            state = self._harness()
            scheduler = state.scheduler
            if scheduler.holds:
                if self.is_closed():  # type: ignore[attr-defined]
                    raise RuntimeError("Event loop is closed")
                handle = asyncio.Handle(callback, args, self, context)  # type: ignore[arg-type]
                scheduler.hold(task, handle, state.callbacks, state.in_timer)
                self._harness_soon(state)
                return handle
            if scheduler.run is not None:
                scheduler.info_of(task)  # the natural run only records what finished
        else:
            self._harness().callbacks += 1
        return super().call_soon(callback, *args, context=context)  # type: ignore[misc, no-any-return]

    def _harness_soon(self, state: _State) -> None:
        """Schedule a pass behind every callback scheduled so far (one at a time: a wake-up held
        after a later callback waits for the next pass, see `Scheduler.take`)."""
        if not state.pass_pending:
            state.pass_pending = True
            super().call_soon(self._harness_pass, state, state.callbacks)  # type: ignore[misc]

    def _harness_poke(self, state: _State) -> None:
        if state.scheduler.holding():
            self._harness_soon(state)

    def _harness_pass(self, state: _State, mark: int) -> None:
        state.pass_pending = False
        state.in_pass = True
        try:
            self._harness_rounds(state, mark)
        finally:
            state.in_pass = False
            flush, state.flush = state.flush, None
            if flush is not None:
                flush()

    def _harness_rounds(self, state: _State, mark: int) -> None:
        scheduler = self._harness().scheduler
        for _ in range(ROUNDS):
            batch, recheck_at, soon = scheduler.take(mark)
            for done, entry in enumerate(batch):
                if entry.handle.cancelled():
                    continue
                scheduler.ran(entry)
                try:
                    entry.handle._run()
                except BaseException:  # KeyboardInterrupt, SystemExit: the rest still runs later
                    scheduler.held[:0] = batch[done + 1 :]
                    self._harness_soon(state)
                    raise
            if not batch or soon or state.callbacks != mark:
                break  # a callback came first: the next pass goes behind it
        if not scheduler.holding():
            return
        if soon or batch:
            self._harness_soon(state)
        else:
            self._harness_recheck(state, min(recheck_at, time.monotonic() + RECHECK_S))

    def _harness_recheck(self, state: _State, at: float) -> None:
        """Look again at `at` (monotonic time), unless a look is already due sooner."""
        if state.recheck is not None and not state.recheck.cancelled():
            if state.recheck_at <= at:
                return
            state.recheck.cancel()
        delay = max(0.0, at - time.monotonic())
        state.recheck_at = at
        when = self.time() + delay  # type: ignore[attr-defined]
        state.recheck = self._harness_raw_at(when, self._harness_recheck_due, (state,), None)

    def _harness_recheck_due(self, state: _State) -> None:
        state.recheck = None
        self._harness_soon(state)

    # -- timers ---------------------------------------------------------------------------------

    def _harness_raw_at(
        self, when: float, callback: Callable[..., Any], args: tuple[Any, ...], context: Any
    ) -> asyncio.TimerHandle:
        state = self._harness()
        state.raw = True
        try:
            return super().call_at(when, callback, *args, context=context)  # type: ignore[misc, no-any-return]
        finally:
            state.raw = False

    def call_later(
        self, delay: float, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        state = self._harness()
        if state.raw or not state.scheduler.holds:
            return super().call_later(delay, callback, *args, context=context)  # type: ignore[misc, no-any-return]
        return self.call_at(self.time() + delay, callback, *args, context=context)  # type: ignore[attr-defined]

    def call_at(
        self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> asyncio.TimerHandle:
        state = self._harness()
        scheduler = state.scheduler
        if state.raw:
            return super().call_at(when, callback, *args, context=context)  # type: ignore[misc, no-any-return]
        if scheduler.run is None or not scheduler.holds:
            return self._harness_raw_at(when, callback, args, context)
        if _deadline(callback):
            handle = self._harness_raw_at(when, callback, args, context)
            now = time.monotonic()
            due = now + (when - self.time())  # type: ignore[attr-defined]
            scheduler.run.pressure.add(now, due, lambda: not handle.cancelled())
            self._harness_poke(state)  # a hold may have to end sooner
            return handle
        timer = scheduler.timer()
        timer.handle = self._harness_raw_at(
            when, self._harness_fire, (state, timer, callback, args), context
        )
        return timer.handle  # type: ignore[no-any-return]

    def _harness_fire(
        self, state: _State, timer: Any, callback: Callable[..., Any], args: tuple[Any, ...]
    ) -> None:
        timer.fired = True
        state.in_timer = True
        try:
            callback(*args)
        finally:
            state.in_timer = False

    # -- what a task waits on -------------------------------------------------------------------

    def _harness_tracking(self) -> Scheduler | None:
        scheduler = self._harness().scheduler
        return scheduler if scheduler.run is not None else None

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> Any:
        future = super().run_in_executor(executor, func, *args)  # type: ignore[misc]
        scheduler = self._harness_tracking()
        if scheduler is not None and scheduler.run is not None:
            if scheduler.holds:
                scheduler.executor_job(future)
            self._harness_flush_soon(scheduler.run.flush_threads)
        return future

    def _harness_flush_soon(self, flush: Callable[[], None] | None) -> None:
        """Start the thread jobs submitted so far once the tasks running now have submitted
        theirs (they are one burst): at the end of our pass, else after this callback."""
        state = self._harness()
        if flush is None or state.flush is flush:
            return
        if state.in_pass:
            state.flush = flush
        else:
            super().call_soon(flush)  # type: ignore[misc]

    async def subprocess_exec(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._harness_open(
            super().subprocess_exec,  # type: ignore[misc]
            protocol_factory,
            HELPER_PROCESS,
            *args,
            **kwargs,
        )

    async def subprocess_shell(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._harness_open(
            super().subprocess_shell,  # type: ignore[misc]
            protocol_factory,
            HELPER_PROCESS,
            *args,
            **kwargs,
        )

    async def create_connection(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._harness_open(
            super().create_connection,  # type: ignore[misc]
            protocol_factory,
            SOCKET,
            *args,
            **kwargs,
        )

    async def create_unix_connection(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._harness_open(
            super().create_unix_connection,  # type: ignore[misc]
            protocol_factory,
            SOCKET,
            *args,
            **kwargs,
        )

    async def connect_read_pipe(self, protocol_factory: Any, pipe: Any) -> Any:
        return await self._harness_open(
            super().connect_read_pipe,  # type: ignore[misc]
            protocol_factory,
            PIPE,
            pipe,
        )

    async def _harness_open(
        self, opener: Any, protocol_factory: Any, kind: str, *args: Any, **kwargs: Any
    ) -> Any:
        scheduler = self._harness_tracking()
        if scheduler is not None:
            protocol_factory = scheduler.channels.factory(protocol_factory, kind)
        return await opener(protocol_factory, *args, **kwargs)

    async def sock_connect(self, sock: Any, address: Any) -> Any:
        scheduler = self._harness_tracking()
        if scheduler is not None:
            scheduler.channels.of_socket(sock).expecting = True
        return await super().sock_connect(sock, address)  # type: ignore[misc]

    async def sock_sendall(self, sock: Any, data: Any) -> Any:
        scheduler = self._harness_tracking()
        if scheduler is not None:
            scheduler.channels.wrote(scheduler.channels.of_socket(sock))
        return await super().sock_sendall(sock, data)  # type: ignore[misc]

    async def sock_recv(self, sock: Any, nbytes: int) -> Any:
        data = await super().sock_recv(sock, nbytes)  # type: ignore[misc]
        self._harness_read(sock, bool(data))
        return data

    async def sock_recv_into(self, sock: Any, buffer: Any) -> Any:
        size = await super().sock_recv_into(sock, buffer)  # type: ignore[misc]
        self._harness_read(sock, bool(size))
        return size

    def _harness_read(self, sock: Any, got: bool) -> None:
        scheduler = self._harness_tracking()
        if scheduler is not None:
            channel = scheduler.channels.of_socket(sock)
            scheduler.channels.arrived(channel) if got else scheduler.channels.closed(channel)
