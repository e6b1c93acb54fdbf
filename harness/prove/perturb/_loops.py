"""Which event loops are ours: during a run, every loop the build runs, whoever makes it.

The policy a run installs hands out loops of ours (`asyncio.run`, `Runner`, `new_event_loop`,
anyio); a policy the build installs (`uvloop.install()`, `asyncio.set_event_loop_policy(...)`)
has its loops made ours; so has a `loop_factory` handed to `asyncio.Runner` (and so
`uvloop.run`); and a loop made directly (`asyncio.SelectorEventLoop()`,
`uvloop.new_event_loop()`) is made ours when it starts running. Making a loop ours swaps its
class for a subclass that mixes `Perturbing` in (`_aio`), so the loop keeps its own machinery,
uvloop's included. A loop whose class cannot be swapped (a compiled class used directly) fails
the proof with one line saying so: a run that silently perturbs nothing would pass a racy build.
Everything is undone when the run ends, the process's policy included.
"""

from __future__ import annotations

import asyncio
import asyncio.runners
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness._shared._errors import CannotPerturb
from harness.prove.perturb._aio import Perturbing

__all__ = ["adopt", "perturbed_asyncio"]

_CLASSES: dict[type[Any], type[Any]] = {}


def adopt(loop: Any) -> Any:
    """Make `loop` perturb as the run in force says (swap its class for one mixing ours in)."""
    if isinstance(loop, Perturbing):
        return loop
    base = type(loop)
    try:
        if base not in _CLASSES:
            _CLASSES[base] = type(
                f"Perturbed{base.__name__}", (Perturbing, base), {"__slots__": ()}
            )
        loop.__class__ = _CLASSES[base]
    except TypeError as error:
        raise CannotPerturb(
            f"prove_stable could not perturb the event loop the build runs"
            f" ({base.__module__}.{base.__qualname__}: its class cannot be extended: {error}),"
            " so its tasks would keep one order in every run; make the loop with"
            " asyncio.new_event_loop, uvloop.new_event_loop or a Python subclass"
        ) from None
    return loop


class _Policy(asyncio.DefaultEventLoopPolicy):
    """The default policy, handing out loops of ours."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return adopt(super().new_event_loop())  # type: ignore[no-any-return]


_ORIGINAL_SET_POLICY = asyncio.events.set_event_loop_policy
_ORIGINAL_RUNNER_INIT = asyncio.runners.Runner.__init__
_ORIGINAL_RUN_FOREVER = asyncio.BaseEventLoop.run_forever


@contextmanager
def perturbed_asyncio() -> Iterator[None]:
    """While the block runs, every event loop the build makes or runs is ours (see the module
    doc); it perturbs as the run in force says."""
    previous = asyncio.get_event_loop_policy()
    adopted_policies: list[Any] = []

    def set_event_loop_policy(policy: Any) -> None:
        if policy is None:
            policy = _Policy()
        elif not isinstance(policy, _Policy):
            original = policy.new_event_loop
            try:
                policy.new_event_loop = lambda: adopt(original())
            except (AttributeError, TypeError):
                raise CannotPerturb(
                    f"prove_stable could not perturb the event loop policy the build installs"
                    f" ({type(policy).__qualname__}: its new_event_loop cannot be wrapped)"
                ) from None
            adopted_policies.append(policy)
        _ORIGINAL_SET_POLICY(policy)

    def runner_init(self: Any, *, debug: bool | None = None, loop_factory: Any = None) -> None:
        if loop_factory is not None:
            factory = loop_factory
            loop_factory = lambda: adopt(factory())  # noqa: E731
        _ORIGINAL_RUNNER_INIT(self, debug=debug, loop_factory=loop_factory)

    def adopting(original: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            return original(adopt(self), *args, **kwargs)

        return run

    uvloop_class = getattr(sys.modules.get("uvloop"), "Loop", None)
    _ORIGINAL_SET_POLICY(_Policy())
    asyncio.set_event_loop_policy = asyncio.events.set_event_loop_policy = set_event_loop_policy
    asyncio.runners.Runner.__init__ = runner_init  # type: ignore[method-assign]
    asyncio.BaseEventLoop.run_forever = adopting(_ORIGINAL_RUN_FOREVER)  # type: ignore[method-assign]
    if uvloop_class is not None:
        uvloop_class.run_forever = adopting(uvloop_class.run_forever)
        uvloop_class.run_until_complete = adopting(uvloop_class.run_until_complete)
    try:
        yield
    finally:
        asyncio.set_event_loop_policy = asyncio.events.set_event_loop_policy = _ORIGINAL_SET_POLICY
        asyncio.runners.Runner.__init__ = _ORIGINAL_RUNNER_INIT  # type: ignore[method-assign]
        asyncio.BaseEventLoop.run_forever = _ORIGINAL_RUN_FOREVER  # type: ignore[method-assign]
        if uvloop_class is not None:
            for name in ("run_forever", "run_until_complete"):
                if name in uvloop_class.__dict__:
                    delattr(uvloop_class, name)
        for policy in adopted_policies:
            policy.__dict__.pop("new_event_loop", None)
        _ORIGINAL_SET_POLICY(previous)
