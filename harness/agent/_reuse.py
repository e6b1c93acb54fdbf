"""What prompt assembly remembers between steps, and the identity proofs that let it reuse it.

Every step assembles the same prompt (twice, with the harness's rebuild). Each piece here returns
exactly what the plain computation would, and reuses last time's result only when identity proves
the inputs are the ones it was computed from:

- shared frozen copies of what a provider returned (`shared_copies`): deep-frozen sources (the
  tool registry's, decision 0012) are proven unchanged by identity alone, other ToolSchemas by
  one encoding of all their parameters;
- the tool order (`in_order`): the same tool objects under the same `tool_order` give the same
  order; otherwise the permutation is remembered by the names it sorts;
- the sections in assembly order (`sections`), by identity of the section objects (frozen);
- the invariant check (`checked`): it reads the section names and the tools' types and names
  only, all fixed for frozen objects, so a success holds for the very same objects.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import msgspec

from harness.agent._frozen import FrozenList, is_known_frozen
from harness.agent._tools import ToolSchema

Provider = Callable[[], Any]

_same = operator.is_
_name = operator.attrgetter("name")
_parameters = operator.attrgetter("parameters")
_encode = msgspec.json.Encoder().encode
_by_order = operator.attrgetter("order")
# (names in collection order, tool order) -> the positions order_tools puts them in. It depends
# on nothing else, and every step (and every boot of the same agent) collects the same names.
_orders: dict[Any, tuple[int, ...]] = {}


def same_items(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """The same objects, in the same order (identity, not equality)."""
    return a is b or (len(a) == len(b) and all(map(_same, a, b)))


class _Provided(NamedTuple):
    """What a provider returned last, and the shared frozen copies made of it."""

    provider: Provider
    sources: tuple[Any, ...]
    parameters: bytes | None  # the sources' parameters as JSON, when all are ToolSchemas
    frozen: bool  # every source a ToolSchema known deep-frozen: identity is enough
    copies: list[ToolSchema]


class _Slot(NamedTuple):
    """A tool reduced to what order_tools looks at (its name) and where it was collected."""

    name: str
    position: int


def _parameters_json(sources: Sequence[Any], *, checked: bool = False) -> bytes | None:
    """The JSON of every source's parameters, when every source is a ToolSchema (else None)."""
    if not checked and not set(map(type, sources)) <= {ToolSchema}:
        return None
    try:
        return _encode(list(map(_parameters, sources)))
    except Exception:  # unencodable now: copying one by one raises what copy_of raises
        return None


class AssemblyMemory:
    """One SystemPrompt's memory of its last assembly's parts."""

    SLOTS = 256

    def __init__(self) -> None:
        self.provided: dict[int, _Provided] = {}
        # the tool order, the tools last put in that order, and that order
        self.last_order: tuple[Any, tuple[ToolSchema, ...], tuple[ToolSchema, ...]] = (
            None,
            (),
            (),
        )
        # the copies lists of the last collection, the tool order, and their order
        self.last_parts: tuple[tuple[list[ToolSchema], ...], Any, tuple[ToolSchema, ...]] = (
            (),
            None,
            (),
        )
        self.last_sections: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())
        # providers, the tuples they returned, the tool order, and the tools in order
        self.last_collection: (
            tuple[tuple[Provider, ...], tuple[Any, ...], Any, tuple[ToolSchema, ...]] | None
        ) = None
        self.lists: dict[int, FrozenList] = {}  # id(tuple) -> its FrozenList (which holds it)
        self.last_checked: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None

    def shared_copies(
        self, provider: Provider, provided: Iterable[ToolSchema | Mapping[str, Any]]
    ) -> list[ToolSchema]:
        """`ToolSchema.frozen_copy_of` of each provided schema, in one pass when nothing moved.

        A frozen copy is a function of the schema's name, description and parameters' JSON.
        When the provider hands back the very same ToolSchema objects as last time (frozen
        Structs: their names and descriptions cannot have been reassigned) the copies are last
        time's: at once when the sources are deep-frozen, else when their parameters encode to
        the same bytes (one encoding of all of them instead of a copy per schema).
        """
        last = self.provided.get(id(provider))
        if last is not None and last.provider is provider:
            sources = provided if type(provided) in (list, tuple) else tuple(provided)
            if same_items(last.sources, cast("Sequence[Any]", sources)):
                if last.frozen:  # deep-frozen sources cannot have changed
                    return last.copies
                # The very same objects, so the same types: last time's check holds.
                blob = _parameters_json(last.sources, checked=last.parameters is not None)
                if blob is not None and blob == last.parameters:
                    return last.copies
            provided = sources
        sources = tuple(provided)
        copies = [ToolSchema.frozen_copy_of(schema) for schema in sources]
        if len(self.provided) >= self.SLOTS:
            self.provided.clear()
        frozen = all(type(s) is ToolSchema and is_known_frozen(s) for s in sources)
        self.provided[id(provider)] = _Provided(
            provider, sources, None if frozen else _parameters_json(sources), frozen, copies
        )
        return copies

    def in_order(
        self,
        tools: list[ToolSchema],
        tool_order: Sequence[str] | msgspec.UnsetType,
        order_tools: Callable[[Sequence[ToolSchema], Any], list[ToolSchema]],
    ) -> tuple[ToolSchema, ...]:
        """`order_tools(tools, tool_order)`, the very same tuple while the same tools come in."""
        last_order, collected, ordered = self.last_order
        if last_order is tool_order and same_items(collected, tools):
            return ordered  # the same tools as last time: the same order (same names)
        try:
            key: Any = (tuple(map(_name, tools)), tool_order)
            positions = _orders.get(key)
        except TypeError:  # an unhashable name: nothing to remember it by
            return tuple(order_tools(tools, tool_order))
        if positions is None:
            # order_tools reads names only; slots carry each tool's position through it.
            slots = [_Slot(tool.name, position) for position, tool in enumerate(tools)]
            placed = order_tools(cast("list[ToolSchema]", slots), tool_order)
            positions = tuple(cast("_Slot", slot).position for slot in placed)
            if len(_orders) >= self.SLOTS:
                _orders.clear()
            _orders[key] = positions
        ordered = tuple([tools[index] for index in positions])
        self.last_order = (tool_order, tuple(tools), ordered)
        return ordered

    def ordered_parts(
        self,
        parts: list[list[ToolSchema]],
        tool_order: Sequence[str] | msgspec.UnsetType,
        order_tools: Callable[[Sequence[ToolSchema], Any], list[ToolSchema]],
    ) -> tuple[ToolSchema, ...]:
        """`in_order` of the parts joined; last time's tuple while every part is the very list
        of copies `shared_copies` handed out last time (they are never changed)."""
        last_parts, last_order, ordered = self.last_parts
        if last_order is tool_order and same_items(last_parts, parts):
            return ordered
        ordered = self.in_order([tool for part in parts for tool in part], tool_order, order_tools)
        self.last_parts = (tuple(parts), tool_order, ordered)
        return ordered

    def collected(
        self, providers: list[Provider], results: list[Any], tool_order: Any
    ) -> tuple[ToolSchema, ...] | None:
        """The ordered tools of the last collection, when these very providers returned these
        very tuples under this tool order (see `remember_collection`); else None."""
        last = self.last_collection
        if (
            last is not None
            and last[2] is tool_order
            and same_items(last[0], providers)
            and same_items(last[1], results)
        ):
            return last[3]
        return None

    def remember_collection(
        self,
        providers: list[Provider],
        results: list[Any],
        tool_order: Any,
        ordered: tuple[ToolSchema, ...],
    ) -> None:
        """Remember a collection only when identity can prove it unchanged next time: every
        provider returned a tuple, and every schema in it was deep-frozen."""
        provided = self.provided
        if len(results) == len(providers) and all(
            type(result) is tuple
            and (last := provided.get(id(provider))) is not None
            and last.provider is provider
            and last.sources is result
            and last.frozen
            for provider, result in zip(providers, results, strict=True)
        ):
            self.last_collection = (tuple(providers), tuple(results), tool_order, ordered)
        else:
            self.last_collection = None

    def frozen_list(self, items: tuple[Any, ...]) -> FrozenList:
        """`FrozenList(items)`, one per tuple: immutable, so handed out again while the same
        tuple comes in."""
        made = self.lists.get(id(items))
        if made is None or made.items is not items:
            if len(self.lists) >= 8:
                self.lists.clear()
            made = self.lists[id(items)] = FrozenList(items)
        return made

    def sections(
        self, sections: list[Any], arrange: Callable[[list[Any]], list[Any]]
    ) -> tuple[Any, ...]:
        """`arrange(sections)` as a tuple, last time's while the same sections come in."""
        given, arranged = self.last_sections
        if same_items(given, sections):
            return arranged
        arranged = tuple(arrange(sections))
        self.last_sections = (tuple(sections), arranged)
        return arranged

    def checked(self, sections: tuple[Any, ...], tools: tuple[ToolSchema, ...]) -> bool:
        """Whether these very sections and tools passed the invariant check last time."""
        last = self.last_checked
        return last is not None and last[0] is sections and last[1] is tools

    def passed(self, sections: tuple[Any, ...], tools: tuple[ToolSchema, ...]) -> None:
        self.last_checked = (sections, tools)
