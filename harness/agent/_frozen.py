"""Deep immutability for values that reach the wire.

A frozen msgspec Struct cannot have its fields reassigned, but a dict inside it (a tool's JSON
schema, a tool call's arguments) still can be changed in place. `deep_freeze` turns every dict into
a `FrozenDict` and every list into a tuple, so a request is immutable at any depth. `FrozenDict`
subclasses dict so msgspec encodes it exactly like the dict it was, key order included.

Checking deep immutability walks the whole value, and a request holds the whole conversation and
every tool schema, so walking it at every step makes a long session quadratic. A value that was
checked once cannot have changed since (that is what deep-frozen means), so the outcome is
remembered by identity: `_Known` answers "already verified" in O(1) for the same object. Only
values that passed `is_deep_frozen` (or were built from verified parts by `extend_frozen`) are
remembered; `deep_freeze` and `is_deep_frozen` give exactly the results they gave before, faster.
"""

from __future__ import annotations

import operator
import weakref
from collections import OrderedDict
from collections.abc import Iterable
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
    __ior__ = _refuse
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


class FrozenList(list[Any]):
    """A list that refuses to change, made from a tuple it keeps (`items`).

    What a read-only caller is handed where the API promises a list (a prompt assembly no
    listener sees): it encodes and reads like the list it is, and whoever needs the items as a
    tuple takes `items`, the very tuple, so comparing two of them can stop at identity.
    """

    __slots__ = ("items",)

    def __init__(self, items: tuple[Any, ...]) -> None:
        super().__init__(items)
        self.items = items

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise FrozenError("this list is read-only; copy it (list(...)) to change it")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    reverse = _refuse
    sort = _refuse
    clear = _refuse

    def __reduce__(self) -> NoReturn:
        raise FrozenError("frozen values are not pickled; encode them with msgspec")

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self


def items_of(values: Iterable[T]) -> tuple[T, ...]:
    """`tuple(values)`; for a FrozenList, the very tuple it was made from."""
    return values.items if type(values) is FrozenList else tuple(values)


class FrozenView:
    """A read-only view of values kept elsewhere, which knows whether they are deep-frozen.

    `deep_freeze` hands a view back as it is (it cannot copy what it does not own) and
    `is_deep_frozen` believes its `deep_frozen` flag, which the view's maker sets from a check
    of what it shows (a session's conversation, say).
    """

    __slots__ = ()

    @property
    def deep_frozen(self) -> bool:
        raise NotImplementedError


class WeakIdentitySet:
    """Objects held weakly and tested by identity (hashing a frozen value walks all of it).

    An entry leaves when its object dies, before its id can be reused, so `id` plus an identity
    check is sound. Objects that allow no weak reference are never members.
    """

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def __contains__(self, value: object) -> bool:
        ref = self._refs.get(id(value))
        return ref is not None and ref() is value

    def __len__(self) -> int:
        return len(self._refs)

    def add(self, value: object) -> None:
        key = id(value)
        refs = self._refs

        def forget(ref: weakref.ref[Any]) -> None:
            if refs.get(key) is ref:
                del refs[key]

        refs[key] = weakref.ref(value, forget)


class _Known:
    """Values verified deep-frozen, by identity.

    Structs that allow weak references are held weakly (a request holds the whole conversation;
    keeping every checked request alive would keep every conversation prefix alive). Tuples cannot
    be weakly referenced, so only large ones are remembered, strongly, in a small LRU: the few
    conversation and tool tuples of the steps in flight. Holding a reference keeps an id from
    being reused, so `get(id) is value` is a sound identity test.
    """

    TUPLE_MIN = 16  # shorter tuples are cheaper to walk than to remember
    TUPLE_SLOTS = 32

    def __init__(self) -> None:
        self.tuples: OrderedDict[int, tuple[Any, ...]] = OrderedDict()
        self.structs = WeakIdentitySet()
        self.weakrefable: dict[type, bool] = {}

    def __contains__(self, value: Any) -> bool:
        if type(value) is tuple:
            key = id(value)
            if self.tuples.get(key) is not value:
                return False
            self.tuples.move_to_end(key)  # least recently used goes first, not the header's tools
            return True
        return value in self.structs

    def add(self, value: Any) -> None:
        """Remember `value`, verified deep-frozen (only large tuples and weakref-able values)."""
        if type(value) is tuple:
            if len(value) >= self.TUPLE_MIN:
                self.tuples[id(value)] = value
                if len(self.tuples) > self.TUPLE_SLOTS:
                    self.tuples.popitem(last=False)
            return
        kind = type(value)
        allowed = self.weakrefable.get(kind)
        if allowed is None:
            allowed = self.weakrefable[kind] = _allows_weakref(value)
        if allowed:
            self.structs.add(value)


def _allows_weakref(value: Any) -> bool:
    try:
        weakref.ref(value)
    except TypeError:
        return False
    return True


_known = _Known()


def deep_freeze(value: T) -> T:
    """A copy of `value` in which no dict, list or Struct can be changed in place."""
    return _freeze(value)  # type: ignore[no-any-return]


# What each type is to the two walks, decided once per type (`isinstance` chains on every node
# dominate a walk). The order of the tests is the order of the isinstance checks they replace.
_ATOM, _FROZEN_DICT, _DICT, _LIST, _TUPLE, _MUTABLE, _STRUCT, _FROZEN_STRUCT, _OTHER = range(1, 10)
_REMEMBERED = 10  # a frozen Struct type whose instances can be remembered (weakly)
_VIEW = 11  # a FrozenView: as it is, frozen when it says so
_AS_IS = frozenset({_ATOM, _FROZEN_DICT, _MUTABLE, _OTHER, _VIEW})  # what _freeze returns unchanged
_NEVER_FROZEN = frozenset({_DICT, _LIST, _MUTABLE, _STRUCT})  # is_deep_frozen is False at once
_kinds: dict[type, int] = {}


_ATOM_TYPES = frozenset({str, int, float, bool, type(None), bytes, type(msgspec.UNSET)})
_KEPT_TYPES = _ATOM_TYPES | {FrozenDict}  # what _freeze returns as it is, whatever it holds


def _kind(kind: type) -> int:
    found = _kinds.get(kind)
    if found is None:
        if kind in _ATOM_TYPES:
            found = _ATOM  # exact types: immutable leaves that hold nothing
        elif issubclass(kind, FrozenDict):
            found = _FROZEN_DICT
        elif issubclass(kind, dict):
            found = _DICT
        elif issubclass(kind, list):
            found = _LIST
        elif issubclass(kind, tuple):
            found = _TUPLE
        elif issubclass(kind, set | bytearray):
            found = _MUTABLE
        elif issubclass(kind, FrozenView):
            found = _VIEW
        elif issubclass(kind, msgspec.Struct):
            config = kind.__struct_config__
            found = (
                (_REMEMBERED if config.weakref else _FROZEN_STRUCT) if config.frozen else _STRUCT
            )
        else:
            found = _OTHER
        _kinds[kind] = found
    return found


_fields_of = msgspec.structs.astuple


def _freeze(value: Any) -> Any:
    kind = _kinds.get(type(value)) or _kind(type(value))
    if kind in _AS_IS:
        return value  # leaves, frozen mappings, sets and other objects: as they were
    if kind == _DICT:
        return FrozenDict({key: _freeze(item) for key, item in value.items()})
    if kind in (_LIST, _TUPLE):
        if type(value) is tuple and len(value) >= _Known.TUPLE_MIN and value in _known:
            return value
        items = tuple([_freeze(item) for item in value])
        if kind == _TUPLE and all(map(operator.is_, items, value)):
            return value
        return items
    if kind == _REMEMBERED and value in _known.structs:
        return value
    fields = _fields_of(value)
    if kind != _STRUCT and set(map(type, fields)) <= _KEPT_TYPES:
        return value  # a frozen Struct of leaves and frozen mappings: nothing to walk
    changes = None
    for field, current in zip(value.__struct_fields__, fields, strict=True):
        frozen = _freeze(current)
        if frozen is not current:
            if changes is None:
                changes = {}
            changes[field] = frozen
    if kind == _STRUCT:
        raise FrozenError(f"{type(value).__name__} is not a frozen Struct")
    return msgspec.structs.replace(value, **changes) if changes else value


def is_deep_frozen(value: Any) -> bool:
    kind = _kinds.get(type(value)) or _kind(type(value))
    if kind in (_ATOM, _OTHER):
        return True
    if kind == _VIEW:
        return bool(value.deep_frozen)
    if kind in _NEVER_FROZEN:
        return False
    remembered = kind == _REMEMBERED or (
        kind == _TUPLE and type(value) is tuple and len(value) >= _Known.TUPLE_MIN
    )
    if remembered and value in _known:
        return True
    items = (
        value.values() if kind == _FROZEN_DICT else (value if kind == _TUPLE else _fields_of(value))
    )
    if not set(map(type, items)) <= _ATOM_TYPES:  # else leaves only: frozen, nothing to walk
        for item in items:
            if not is_deep_frozen(item):
                return False
    if remembered:
        _known.add(value)
    return True


def remember_frozen(value: Any) -> None:
    """Remember `value` as deep-frozen without walking it: for a value built only from parts
    that were each checked deep-frozen (a session's conversation, message by message)."""
    _known.add(value)


def is_known_frozen(value: Any) -> bool:
    """Whether `value` is already known to be deep-frozen (no walk: False means "not known")."""
    return value in _known


def extend_frozen(prefix: tuple[T, ...], items: Iterable[T]) -> tuple[T, ...]:
    """`prefix + tuple(items)`, deep-frozen, checked in time proportional to `items` alone.

    A conversation grows at its end; when `prefix` was verified before (it came from here, or
    passed `is_deep_frozen`), only the new items need walking, and the result is remembered as
    verified too.
    """
    new = tuple([_freeze(item) for item in items])
    result: tuple[T, ...] = _freeze(prefix) + new
    # is_deep_frozen(prefix) is O(1) when it is known; otherwise it walks once and remembers.
    if result not in _known and all(map(is_deep_frozen, new)) and is_deep_frozen(prefix):
        _known.add(result)
    return result
