"""A drift report as it is printed: the raw report's content redacted, then cut and bounded.

`printed(report)` makes a `PrintedReport` (the report's facts as strings, the shape its JSON
keeps) through `harness._shared._printer`, the one place that redacts: a value is redacted before
it is
cut, so a cut key cannot slip through; names are bounded (saying how many more characters there
were); the excerpt is made from the bytes around the first difference; hints read the redacted
texts; the structured diff's keys and strings are redacted and bounded, and a unified diff of two
texts is remade from the redacted texts. `volatile_hints(text)` is the same hints for a text
the caller holds.
"""

from __future__ import annotations

import difflib
from typing import Any, Final

import msgspec

from harness._shared import _printer
from harness._shared._printer import around, bounded, clip, redact
from harness._shared._views import Window, encode_json
from harness.drift._hints import hints_between
from harness.drift._parts import Around, Quote, Reproduce, Sentence

__all__ = ["PrintedReport", "printed", "volatile_hints"]

POINTER_LIMIT: Final = 2000  # characters of a pointer (a 1 MiB key) a report keeps
VALUE_REACH: Final = 240  # characters of a long changed string the structured diff keeps
_UNNAMED: Final = "<unnamed "


class PrintedReport(msgspec.Struct, frozen=True, omit_defaults=True):
    """A drift report's facts as printed; its JSON is the report's `--format json`."""

    identical: bool
    verdict: str | None = None
    # always printed (None only in a report decoded from JSON without them): `identical`,
    # `extends` and the kept and lost figures are keys every report's JSON has
    extends: bool | None = None
    block: str | None = None
    invalidated: tuple[str, ...] = ()
    kind: str | None = None
    summary: str = ""
    pointer: str = ""
    offset: int = -1
    context_a: str = ""
    context_b: str = ""
    tool: str | None = None
    settings_changed: tuple[str, ...] = ()
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    tools_a: tuple[str, ...] = ()
    tools_b: tuple[str, ...] = ()
    prefix_bytes_kept: int | None = None
    prefix_bytes_lost: int | None = None
    tokens_kept: int | None = None
    tokens_lost: int | None = None
    provenance: str | None = None
    reproduce: Reproduce | None = None
    volatile_hints: tuple[str, ...] = ()
    deepdiff: dict[str, Any] = {}
    notes: tuple[str, ...] = ()
    label_a: str = "expected"
    label_b: str = "actual"


def printed(report: Any) -> tuple[int, PrintedReport]:
    """`report` (a `harness.drift._report.DriftReport`, which imports this module to print
    itself: it is not named here) printed, and the printer's generation it was printed under."""
    made = _printer.generation()
    reproduce = report.raw_reproduce
    if reproduce is not None:
        reproduce = Reproduce(
            seed=reproduce.seed,
            order_a=tuple(map(redact, reproduce.order_a)),
            order_b=tuple(map(redact, reproduce.order_b)),
            command=redact(reproduce.command) if reproduce.command else reproduce.command,
        )
    hints = tuple(map(redact, report.made_hints))
    if report.raw_hints is not None:
        a_text, b_text, differential = report.raw_hints
        hints = hints_between(redact(a_text), redact(b_text), differential=differential)
    return made, PrintedReport(
        identical=report.identical,
        verdict=report.verdict,
        extends=report.extends,
        block=bounded(report.raw_block, POINTER_LIMIT) if report.raw_block else report.raw_block,
        invalidated=report.invalidated,
        kind=report.kind,
        summary=redact(_summary(report.raw_summary)),
        pointer=bounded(report.raw_pointer, POINTER_LIMIT),
        offset=report.offset,
        context_a=_context(report.raw_context_a),
        context_b=_context(report.raw_context_b),
        tool=name(report.raw_tool) if report.raw_tool is not None else None,
        settings_changed=tuple(map(bounded, report.raw_settings_changed)),
        tools_added=tuple(map(name, report.raw_tools_added)),
        tools_removed=tuple(map(name, report.raw_tools_removed)),
        tools_a=tuple(map(name, report.raw_tools_a)),
        tools_b=tuple(map(name, report.raw_tools_b)),
        prefix_bytes_kept=report.prefix_bytes_kept,
        prefix_bytes_lost=report.prefix_bytes_lost,
        tokens_kept=report.tokens_kept,
        tokens_lost=report.tokens_lost,
        provenance=redact(report.raw_provenance) if report.raw_provenance else None,
        reproduce=reproduce,
        volatile_hints=hints,
        deepdiff=_tree(report.raw_deepdiff) if report.raw_deepdiff else {},
        notes=report.notes,
        label_a=redact(report.raw_label_a),
        label_b=redact(report.raw_label_b),
    )


def _summary(summary: str | Sentence) -> str:
    return summary if isinstance(summary, str) else sentence(summary)


def sentence(parts: Sentence) -> str:
    """A sentence with its quoted content shown (each quote redacted, then cut)."""
    return "".join(_part(part) for part in parts)


def _part(part: str | Quote | Around) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Around):
        shown = around(part.a, part.b, part.width)[part.side]
        return encode_json(shown).decode("utf-8", "replace")
    if part.style == "clip":
        return clip(part.text, part.limit)
    if part.style == "name":
        return name(part.text)
    return bounded(part.text, part.limit)


def name(text: str) -> str:
    """A tool name as printed: bounded; an unnamed tool's JSON clipped inside `<unnamed ...>`."""
    if text.startswith(_UNNAMED) and text.endswith(">"):
        return f"{_UNNAMED}{clip(text[len(_UNNAMED) : -1], 40)}>"
    return bounded(text)


def _context(context: Window | str) -> str:
    return _printer.excerpt(context) if isinstance(context, Window) else redact(context)


def volatile_hints(a_text: str, b_text: str = "") -> tuple[str, ...]:
    """Hints about volatile content: timestamps, dates, times, UUIDs, absolute paths, hex ids.

    With one text, every such thing in it is reported. With two, only what differs between them
    is (a timestamp present in only one side, say), plus counters: a number at the same place in
    both texts with another value. Each hint quotes what it saw (redacted).
    """
    return hints_between(redact(a_text), redact(b_text), differential=bool(b_text))


def _unified(a: str, b: str) -> str:
    """A unified diff of two texts, as deepdiff writes it for a changed multi-line string."""
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm=""))


def _tree(value: Any, depth: int = 0) -> Any:
    """A structured diff with every key and string redacted and bounded (two changed strings
    keep the region around their first difference)."""
    if isinstance(value, dict):
        if depth > 32:
            return "…"
        old, new = value.get("old_value"), value.get("new_value")
        if isinstance(old, str) and isinstance(new, str) and "diff" in value:
            # deepdiff's unified diff of two texts, remade from the redacted texts: its context
            # lines could show the body of a private key whose first line they leave out.
            value = {**value, "diff": _unified(redact(old), redact(new))}
        if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > VALUE_REACH:
            old, new = around(old, new, VALUE_REACH)
            value = {**value, "old_value": old, "new_value": new}
        return {bounded(str(k), 300): _tree(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_tree(item, depth + 1) for item in value[:100]] + (
            [f"… {len(value) - 100} more"] if len(value) > 100 else []
        )
    if isinstance(value, str):
        return bounded(value, VALUE_REACH)
    return value
