"""Deep immutability for values that reach the wire.

A frozen msgspec Struct cannot have its fields reassigned, but a dict inside it (a tool's JSON
schema, a tool call's arguments) still can be changed in place. `deep_freeze` turns every dict into
a `FrozenDict` and every list into a tuple, so a request is immutable at any depth. `FrozenDict`
subclasses dict so msgspec encodes it exactly like the dict it was, key order included.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

import msgspec

T = TypeVar("T")


class FrozenError(TypeError):
    """Something tried to change a frozen value in place."""


class FrozenDict(dict[str, Any]):
    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise FrozenError("this mapping is frozen; build a new frozen copy instead")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse  # type: ignore[assignment]
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> NoReturn:
        raise FrozenError("frozen values are not pickled; encode them with msgspec")

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


def deep_freeze(value: T) -> T:
    """A copy of `value` in which no dict, list or Struct can be changed in place."""
    return _freeze(value)  # type: ignore[no-any-return]


def _freeze(value: Any) -> Any:
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):
        return FrozenDict({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        items = tuple(_freeze(item) for item in value)
        if isinstance(value, tuple) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    if isinstance(value, msgspec.Struct):
        changes = {}
        for field in value.__struct_fields__:
            current = getattr(value, field)
            frozen = _freeze(current)
            if frozen is not current:
                changes[field] = frozen
        if not value.__struct_config__.frozen:
            raise FrozenError(f"{type(value).__name__} is not a frozen Struct")
        return msgspec.structs.replace(value, **changes) if changes else value
    return value


def is_deep_frozen(value: Any) -> bool:
    if isinstance(value, FrozenDict | tuple):
        items = value.values() if isinstance(value, dict) else value
        return all(is_deep_frozen(item) for item in items)
    if isinstance(value, dict | list | set | bytearray):
        return False
    if isinstance(value, msgspec.Struct):
        return value.__struct_config__.frozen and all(
            is_deep_frozen(getattr(value, field)) for field in value.__struct_fields__
        )
    return True
