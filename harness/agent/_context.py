"""A small Cordis-like core: services, the five event verbs, and a concurrent plugin loader.

The loader is where the race the harness exists to catch comes from: sibling plugins start
together, each awaits its own import step, and each registers its tools when that step finishes.
Registration order is therefore completion order, which depends on the host. `LoadSchedule` makes
the race explicit and reproducible: it fixes the order in which plugin tasks start and how many
scheduling points each import step takes, so a test can produce any completion order on purpose.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, TypeVar, cast, runtime_checkable

import msgspec

T = TypeVar("T")
Listener = Callable[..., Any]
Disposer = Callable[[], None]


class ContextError(RuntimeError):
    """A service is missing or provided twice."""


@dataclass
class _Hub:
    """State shared by a context and all its forks."""

    listeners: dict[str, list[Listener]] = field(default_factory=dict)
    services: dict[type[Any], object] = field(default_factory=dict)


async def _settle(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _raise_collected(errors: list[BaseException], event: str) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup(f"{len(errors)} listeners of {event!r} failed", errors)  # type: ignore[type-var]


class Context:
    """Services and events shared by the runtime's plugins.

    A fork (`ctx.fork("name")`) shares listeners and services with its parent but carries the
    name of the plugin it was made for, so what a plugin registers can say where it came from.
    """

    def __init__(self, *, owner: str | None = None, _hub: _Hub | None = None) -> None:
        self._hub = _hub or _Hub()
        self.owner = owner

    def fork(self, owner: str) -> Context:
        return Context(owner=owner, _hub=self._hub)

    # -- services -------------------------------------------------------------------------
    def provide(self, kind: type[T], service: T) -> None:
        if kind in self._hub.services:
            raise ContextError(f"service {kind.__name__} is already provided")
        self._hub.services[kind] = service

    def get(self, kind: type[T]) -> T:
        try:
            return cast(T, self._hub.services[kind])
        except KeyError:
            raise ContextError(f"service {kind.__name__} is not provided") from None

    def has(self, kind: type[Any]) -> bool:
        return kind in self._hub.services

    # -- listeners ------------------------------------------------------------------------
    def on(self, event: str, listener: Listener, *, prepend: bool = False) -> Disposer:
        listeners = self._hub.listeners.setdefault(event, [])
        if prepend:
            listeners.insert(0, listener)
        else:
            listeners.append(listener)

        def dispose() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return dispose

    def listeners(self, event: str) -> tuple[Listener, ...]:
        return tuple(self._hub.listeners.get(event, ()))

    # -- the five verbs -------------------------------------------------------------------
    def emit(self, event: str, *args: Any) -> None:
        """Call every listener synchronously; results are ignored, errors raised after all ran."""
        listeners = self._hub.listeners.get(event)
        if not listeners:
            return
        errors: list[BaseException] = []
        for listener in tuple(listeners):
            try:
                listener(*args)
            except Exception as error:
                errors.append(error)
        if errors:
            _raise_collected(errors, event)

    async def parallel(self, event: str, *args: Any) -> None:
        """Run every listener concurrently; all run to completion, errors are aggregated."""

        async def run(listener: Listener) -> Any:
            # Called inside a coroutine, so a synchronous listener that raises is gathered
            # with the others instead of stopping the ones after it.
            return await _settle(listener(*args))

        results = await asyncio.gather(
            *(run(listener) for listener in self.listeners(event)), return_exceptions=True
        )
        _raise_collected([r for r in results if isinstance(r, BaseException)], event)

    async def serial(self, event: str, *args: Any) -> Any:
        """Await listeners in order; the first result that is not None stops the chain."""
        for listener in self.listeners(event):
            result = await _settle(listener(*args))
            if result is not None:
                return result
        return None

    def bail(self, event: str, *args: Any) -> Any:
        """Synchronous `serial`: the first result that is not None wins."""
        for listener in self.listeners(event):
            result = listener(*args)
            if result is not None:
                return result
        return None

    async def waterfall(self, event: str, value: T, *args: Any) -> T:
        """Run listeners as a chain of middleware around `value`.

        Each listener is called as `listener(value, *args, next)`. `await next()` runs the rest of
        the chain on the same value, `await next(other)` on another one, and returns what the rest
        of the chain returned; past the last listener it returns the value it was given. A listener
        that never calls `next` vetoes the listeners after it. The outermost return value wins.
        """
        chain = self.listeners(event)
        if not chain:
            return value
        return cast(T, await _Chain(chain, args).call(0, value))

    # -- plugins --------------------------------------------------------------------------
    async def plugin(self, plugin: Plugin | Callable[[Context], Any]) -> Context:
        """Apply a plugin after one scheduling point, on a fork named after it.

        A plugin is an object with `name` and `apply(ctx)`, or a named function `fn(ctx)`; its
        configuration is bound when it is constructed, not passed here.
        """
        await asyncio.sleep(0)
        fork = self.fork(plugin_name(plugin))
        apply = plugin.apply if _is_plugin(plugin) else cast(Callable[[Context], Any], plugin)
        await _settle(apply(fork))
        return fork


class _Chain:
    """A waterfall's listeners and arguments. Each `next_` refers to the chain, never the
    reverse: a waterfall leaves no reference cycle behind for the garbage collector."""

    __slots__ = ("args", "listeners")

    def __init__(self, listeners: tuple[Listener, ...], args: tuple[Any, ...]) -> None:
        self.listeners = listeners
        self.args = args

    async def call(self, index: int, current: Any) -> Any:
        if index == len(self.listeners):
            return current

        async def next_(replacement: Any = None) -> Any:
            return await self.call(index + 1, current if replacement is None else replacement)

        return await _settle(self.listeners[index](current, *self.args, next_))


@runtime_checkable
class Plugin(Protocol):
    """A plugin: a name, an optional import step, and `apply(ctx)` which registers things."""

    name: str

    def apply(self, ctx: Context) -> Awaitable[None] | None: ...


def _is_plugin(value: object) -> TypeGuard[Plugin]:
    """`isinstance(value, Plugin)`, with the common yes answered without typing's slow check.

    A runtime-checkable protocol accepts any object that has every member, methods not None;
    that is the first test here, and everything else is left to isinstance itself.
    """
    if hasattr(value, "name") and getattr(value, "apply", None) is not None:
        return True
    return isinstance(value, Plugin)


def plugin_name(plugin: object) -> str:
    name = getattr(plugin, "name", None) or getattr(plugin, "__name__", None)
    if not isinstance(name, str) or not name:
        raise ContextError(f"plugin {plugin!r} has no name")
    return name


class LoadSchedule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The entropy of one concurrent load, made explicit.

    `start` is the order in which plugin tasks are started (plugin names; empty means the order
    given). `yields[name]` is how many scheduling points that plugin's import step awaits before it
    registers (absent means 0). With asyncio's FIFO ready queue the completion order is a pure
    function of the two: plugins finish by yield count, ties in start order. So a schedule
    reproduces a registration order exactly on any host.
    """

    start: tuple[str, ...] = ()
    yields: dict[str, int] = {}

    @classmethod
    def shuffled(
        cls, names: Sequence[str], rng: random.Random, max_yields: int = 3
    ) -> LoadSchedule:
        start = list(names)
        rng.shuffle(start)
        return cls(tuple(start), {name: rng.randint(0, max_yields) for name in names})

    def start_order(self, names: Sequence[str]) -> list[str]:
        if not self.start:
            return list(names)
        if sorted(self.start) != sorted(names):
            raise ContextError(
                f"load schedule starts {list(self.start)} but the plugins are {list(names)}"
            )
        return list(self.start)

    def completion_order(self, names: Sequence[str]) -> list[str]:
        """The registration order this schedule produces (the loader's result, computed)."""
        started = self.start_order(names)
        rank = {name: i for i, name in enumerate(started)}
        return sorted(started, key=lambda n: (self.yields.get(n, 0), rank[n]))


async def load_plugins(
    ctx: Context,
    plugins: Iterable[Plugin | Callable[[Context], Any]],
    schedule: LoadSchedule | None = None,
) -> list[str]:
    """Start sibling plugins concurrently; each registers when its own import step completes.

    Returns the names in the order the plugins were applied (the registration order). A plugin's
    import step is its optional `load()` coroutine, preceded by the schedule's yields.
    """
    by_name: dict[str, Plugin | Callable[[Context], Any]] = {}
    for plugin in plugins:
        name = plugin_name(plugin)
        if name in by_name:
            raise ContextError(f"two plugins are named {name!r}")
        by_name[name] = plugin
    schedule = schedule or LoadSchedule()
    applied: list[str] = []

    async def load_one(name: str) -> None:
        plugin = by_name[name]
        for _ in range(schedule.yields.get(name, 0)):
            await asyncio.sleep(0)
        load = getattr(plugin, "load", None)
        if callable(load):
            await _settle(load())
        await ctx.plugin(plugin)
        applied.append(name)

    tasks = [asyncio.ensure_future(load_one(name)) for name in schedule.start_order(list(by_name))]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    _raise_collected([r for r in results if isinstance(r, BaseException)], "loader")
    return applied
