"""Finer exemptions from the prefix-chain gate: waive one move, judge the rest.

`@pytest.mark.moves_header(reason=...)` alone waives the whole test's gate. With `only=`, it
waives just the breaks that match, and every other break still fails the test:

    @pytest.mark.moves_header(reason="Semantic Kernel names replies", only="/messages/*/name")
    @pytest.mark.moves_header(reason="AutoGen's reflection call drops the tools", only="tools")
    @pytest.mark.moves_header(reason="...", only=lambda b: b.verdict == "messages_changed")

`only` is one matcher or a list of them (a break matching any is waived):
- a block name (`"tools"`, `"system"`, `"messages"`, ...), matched against the break's `block`;
  `"messages"` means the conversation whatever the provider calls it (`input`, `contents`);
- a verdict (`"tools_changed"`, `"model_changed"`, ...), matched against its `verdict`;
- a JSON pointer (it starts with `/`), matched against the place the report names
  (`report.raw_pointer`): the same place or one inside it, `*` standing for one segment;
- a predicate: a callable given the `PrefixBreak`, true to waive it.

A project lists the moves its frameworks make, with their reasons, once, in
`harness_capture_config`'s `known_moves` (`[{"reason": "...", "only": "tools"}, ...]`): they waive
those moves in every captured test. An exemption that waived nothing is stale: a marker's is
reported for its test as a whole-test marker's is, a known move's when no test of the run used it.
The gate's breaks are filtered after the gate has judged them: what a break is stays the gate's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from harness._shared._errors import UsageError

if TYPE_CHECKING:
    from harness.capture._prefix import PrefixBreak

__all__ = ["Waiver", "known_moves", "waive", "waived_reasons", "waiver"]

_CONVERSATION: Final = frozenset({"messages", "input", "contents"})
Only = str | Callable[[Any], bool]


@dataclass(frozen=True)
class Waiver:
    """One exemption: why, and which breaks it waives (`only`: any of these)."""

    reason: str
    only: tuple[Only, ...]
    source: str  # where it was given: "@pytest.mark.moves_header", "known_moves"

    def matches(self, item: PrefixBreak) -> bool:
        return any(_matches(one, item, self) for one in self.only)

    def describe(self) -> str:
        """What it waives, as a report names it."""
        return ", ".join(
            repr(one) if isinstance(one, str) else getattr(one, "__name__", "a predicate")
            for one in self.only
        )


def waiver(reason: str, only: object, *, source: str) -> Waiver:
    """A waiver from a marker's or a config's `only` (one line naming `source` when it is not
    a block, verdict, pointer, predicate, or a list of them)."""
    items: Sequence[object] = only if isinstance(only, list | tuple) else (only,)
    if not items:
        raise UsageError(f"{source}: only= takes a block, a verdict, a JSON pointer or a predicate")
    checked: list[Only] = []
    for item in items:
        if callable(item) or (
            isinstance(item, str) and item.strip() and (item.startswith("/") or item.isidentifier())
        ):
            checked.append(item)
        else:
            raise UsageError(
                f'{source}: only= takes a block ("tools", "system", "messages"), a verdict'
                f' ("tools_changed"), a JSON pointer ("/messages/*/name") or a predicate, not'
                f" {item!r}"
            )
    return Waiver(reason, tuple(checked), source)


def known_moves(value: object, *, where: str) -> tuple[Waiver, ...]:
    """`known_moves` of a capture config: a list of `{"reason": ..., "only": ...}`."""
    if not isinstance(value, list | tuple):
        raise UsageError(f'{where}: known_moves takes a list of {{"reason": ..., "only": ...}}')
    found = []
    for entry in value:
        if isinstance(entry, Waiver):
            found.append(entry)
            continue
        reason = entry.get("reason") if isinstance(entry, dict) else None
        if not isinstance(reason, str) or not reason.strip() or "only" not in entry:
            raise UsageError(
                f'{where}: each of known_moves is {{"reason": "why", "only": what}}, not {entry!r}'
            )
        unknown = set(entry) - {"reason", "only"}
        if unknown:
            raise UsageError(
                f"{where}: known_moves entries take reason and only, not {sorted(unknown)}"
            )
        found.append(waiver(reason, entry["only"], source=f"{where}: known_moves"))
    return tuple(found)


def waive(
    breaks: Iterable[PrefixBreak], waivers: Sequence[Waiver]
) -> tuple[list[PrefixBreak], list[tuple[PrefixBreak, Waiver]]]:
    """The breaks still to judge, and those waived with the waiver that waived each (the first
    that matches)."""
    kept: list[PrefixBreak] = []
    waived: list[tuple[PrefixBreak, Waiver]] = []
    for item in breaks:
        found = next((w for w in waivers if w.matches(item)), None)
        if found is None:
            kept.append(item)
        else:
            waived.append((item, found))
    return kept, waived


def waived_reasons(waived: Iterable[tuple[PrefixBreak, Waiver]]) -> str | None:
    """The reasons of the waivers that waived a break, as a cassette's exemption is written (so
    `harness check` agrees with the gate); None when none waived anything."""
    return "; ".join(dict.fromkeys(found.reason for _, found in waived)) or None


def _matches(one: Only, item: PrefixBreak, owner: Waiver) -> bool:
    if callable(one):
        try:
            return bool(one(item))
        except Exception as error:  # the project's predicate: one line, not its traceback
            raise UsageError(
                f"{owner.source} (reason {owner.reason!r}): the only= predicate raised"
                f" {type(error).__name__}: {error}"
            ) from None
    if one.startswith("/"):
        return _inside(item.report.raw_pointer, one)
    if one == "messages" and item.block in _CONVERSATION:
        return True
    return one in (item.block, item.verdict)


def _inside(pointer: str, pattern: str) -> bool:
    """Whether `pointer` is the place `pattern` names or a place inside it (`*`: one segment)."""
    have = pointer.split("/")[1:] if pointer.startswith("/") else []
    want = pattern.rstrip("/").split("/")[1:]
    if not want or len(have) < len(want):
        return False
    return all(w in ("*", h) for w, h in zip(want, have, strict=False))
