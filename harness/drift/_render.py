"""Rendering a drift report: plain text for terminals, Markdown for CI summaries.

JSON is the report struct itself (`DriftReport.to_json`). Text is a summary line, then one
labelled line per fact, the tool order side by side, hints and a trimmed structured diff.
Markdown is the same facts as a table, with code spans and fences sized so that no value can
close them early.

It renders a printed report (`harness.drift._printed`: redacted, then cut), and every line it makes
goes through the printer again (`harness._shared._printer.line`): one line per fact (a newline or
any
control character from the content is escaped, so it can neither split a line nor start a GitHub
workflow command), and bounded (every line at most `LINE_LIMIT` characters, saying how many more
there were). A changed string in the structured diff is shown around its first difference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from harness._shared import _formats
from harness._shared._printer import LINE_LIMIT, MARKER, around, bounded, clip, line, redact
from harness._shared._views import SETTINGS, encode_json
from harness.drift._printed import sentence
from harness.drift._wording import (
    ABSENT,
    BYTES_PER_TOKEN,
    KIND_TEXT,
    UNCERTAIN_KINDS,
    short,
    short_encoded,
    show_pointer,
    words,
)

if TYPE_CHECKING:
    from harness.drift._printed import PrintedReport as DriftReport

_MAX_DEEPDIFF_LINES: Final = 20
_MAX_TOOL_ROWS: Final = 60
_POINTER_LIMIT: Final = 300


def _cost_phrase(report: DriftReport) -> str:
    if report.kind in UNCERTAIN_KINDS:
        return "settings changed -> the cache effect is not documented: nothing is lost for certain"
    lost = words(report.invalidated)
    caches = "cache is" if len(report.invalidated) == 1 else "caches are"
    outcome = f"the {lost} {caches} lost"
    if report.invalidated and not (report.tokens_lost or report.prefix_bytes_lost):
        outcome = f"the {lost} {caches} invalidated, and held nothing cached"
    if report.block == SETTINGS:
        if not report.invalidated:
            return "settings changed -> the cache key moves (there are no prompt blocks)"
        return f"settings changed -> the cache key moves: {outcome}"
    return f"{report.block} changed -> {outcome}"


def text_lines(report: DriftReport) -> list[str]:
    lines = [report.summary]
    rows: list[tuple[str, str]] = []
    if not report.identical and not report.extends:
        if report.verdict:
            rows.append(("verdict", f"{report.verdict}: {_cost_phrase(report)}"))
        if report.kind:
            rows.append(("kind", f"{report.kind} ({KIND_TEXT.get(report.kind, report.kind)})"))
        if report.settings_changed:
            rows.append(("settings", ", ".join(report.settings_changed)))
        rows.append(("place", _place(report)))
        rows.append((report.label_a, report.context_a))
        rows.append((report.label_b, report.context_b))
        if report.tools_added:
            rows.append(("tools added", _names(report.tools_added)))
        if report.tools_removed:
            rows.append(("tools removed", _names(report.tools_removed)))
        if report.verdict:
            rows.append(("cost", _cost(report)))
        if report.provenance:
            rows.append(("provenance", report.provenance))
    rows.extend(_reproduce_rows(report))
    width = max([len(label) for label, _ in rows] + [10]) + 2
    lines.extend(f"{label + ':':<{width}}{value}" for label, value in rows)
    if report.tools_a or report.tools_b:
        lines.append(f"tool order ({report.label_a} | {report.label_b}):")
        lines.extend("  " + row for row in _tool_rows(report))
    lines.extend(f"note: {note}" for note in report.notes)
    if report.volatile_hints:
        lines.append("hints:")
        lines.extend(f"  - {hint}" for hint in report.volatile_hints)
    if report.deepdiff:
        lines.append("deepdiff:")
        lines.extend(f"  {line}" for line in _deepdiff_lines(report.deepdiff))
    return [line(text) for text in lines]


def _names(items: tuple[str, ...]) -> str:
    shown = ", ".join(f'"{bounded(name)}"' for name in items[:8])
    return shown + (f" and {len(items) - 8} more" if len(items) > 8 else "")


def _place(report: DriftReport) -> str:
    place = f"{show_pointer(bounded(report.pointer, _POINTER_LIMIT))}, byte {report.offset}"
    return place + (f', tool "{report.tool}"' if report.tool else "")


def _cost(report: DriftReport) -> str:
    if report.kind in UNCERTAIN_KINDS:
        return (
            f"{report.prefix_bytes_kept or 0:,} prompt bytes (~{report.tokens_kept or 0:,}"
            f" tokens) at stake, effect unknown; tokens ~ bytes / {BYTES_PER_TOKEN}"
        )
    return (
        f"kept {report.prefix_bytes_kept or 0:,} prompt bytes (~{report.tokens_kept or 0:,}"
        f" tokens), lost {report.prefix_bytes_lost or 0:,} bytes (~{report.tokens_lost or 0:,}"
        " tokens);"
        f" tokens ~ bytes / {BYTES_PER_TOKEN}"
    )


def _reproduce_rows(report: DriftReport) -> list[tuple[str, str]]:
    reproduce = report.reproduce
    if reproduce is None:
        return []
    rows = []
    if reproduce.seed is not None:
        rows.append(("seed", str(reproduce.seed)))
    if reproduce.order_a:
        rows.append((f"order ({report.label_a})", ", ".join(map(bounded, reproduce.order_a))))
    if reproduce.order_b:
        rows.append((f"order ({report.label_b})", ", ".join(map(bounded, reproduce.order_b))))
    if reproduce.command:
        rows.append(("reproduce", reproduce.command))
    return rows


def _out_of_place(report: DriftReport) -> int | None:
    """The index to mark in the tool order: the first name mismatch, or the changed tool's row
    (found by name: a Gemini function's pointer is /tools/<group>/functionDeclarations/<n>)."""
    names_a, names_b = report.tools_a, report.tools_b
    for index, (x, y) in enumerate(zip(names_a, names_b, strict=False)):
        if x != y:
            return index
    if len(names_a) != len(names_b):
        return min(len(names_a), len(names_b))
    if report.tool is not None and names_b.count(report.tool) == 1:
        return names_b.index(report.tool)
    parts = report.pointer.split("/")
    if len(parts) >= 3 and parts[1] == "tools" and parts[2].isdigit():
        return int(parts[2])
    return None


def _tool_rows(report: DriftReport) -> list[str]:
    names_a, names_b = report.tools_a, report.tools_b
    mark = _out_of_place(report)
    count = max(len(names_a), len(names_b))
    width = max([len(name) for name in names_a] + [len(report.label_a), 8])
    digits = len(str(max(count - 1, 0)))
    rows = []
    for index in range(min(count, _MAX_TOOL_ROWS)):
        x = names_a[index] if index < len(names_a) else "-"
        y = names_b[index] if index < len(names_b) else "-"
        flag = ">" if index == mark else ("*" if x != y else " ")
        note = ""
        if index == mark:
            note = "  <- first out of place" if x != y else "  <- changed here"
        rows.append(f"{flag} {index:>{digits}}  {x:<{width}} | {y}{note}")
    if count > _MAX_TOOL_ROWS:
        rows.append(f"  … {count - _MAX_TOOL_ROWS} more")
    return rows


def _deepdiff_lines(diff: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for change, entries in diff.items():
        if isinstance(entries, dict):
            for path, detail in entries.items():
                lines.append(f"{change} {path}: {_deepdiff_detail(detail)}")
        elif isinstance(entries, list):
            lines.extend(f"{change} {clip(str(path), 120)}" for path in entries)
        elif change == "note":
            lines.append(f"note: {bounded(str(entries), 300)}")
        else:
            lines.append(f"{change}: {sentence((short(entries),))}")
    if len(lines) > _MAX_DEEPDIFF_LINES:
        more = len(lines) - _MAX_DEEPDIFF_LINES
        lines = [*lines[:_MAX_DEEPDIFF_LINES], f"… {more} more"]
    return lines


def _deepdiff_detail(detail: Any) -> str:
    if isinstance(detail, dict) and ("old_value" in detail or "new_value" in detail):
        old, new = detail.get("old_value", ABSENT), detail.get("new_value", ABSENT)
        if isinstance(old, str) and isinstance(new, str):  # both sides around the difference
            old, new = around(old, new)
            return f"{_quoted(old)} -> {_quoted(new)}"
        return f"{sentence((short_encoded(old),))} -> {sentence((short_encoded(new),))}"
    return sentence((short_encoded(detail),))


def _quoted(text: str) -> str:
    return encode_json(text).decode("utf-8", "replace")


def markdown_lines(report: DriftReport) -> list[str]:
    if report.identical or report.extends:
        said = (
            f"{report.label_a} and {report.label_b} are identical"
            if report.identical
            else f"{report.label_b} extends {report.label_a}'s cached prefix"
        )
        lines = [f"### No drift: {said}", ""]
        lines.append(report.summary)
        lines.extend(_markdown_reproduce(report))
        return lines
    title = report.verdict or "values differ"
    kind = f" ({report.kind})" if report.kind else ""
    lines = [
        f"### Drift: {_md_code(title, False)}{kind}",
        "",
        f"> {_md_escape(report.summary)}",
        "",
    ]
    lines += ["| | |", "|---|---|"]
    if report.verdict:
        lines.append(
            f"| verdict | {_md_code(report.verdict)}: {_md_escape(_cost_phrase(report))} |"
        )
    if report.kind:
        kind_text = KIND_TEXT.get(report.kind, report.kind)
        lines.append(f"| kind | {_md_code(report.kind)}: {_md_escape(kind_text)} |")
    shown_pointer = bounded(report.pointer, _POINTER_LIMIT)
    pointer = _md_code(shown_pointer) if report.pointer else '`""` (the whole value)'
    place = f"{pointer}, byte {report.offset}"
    if report.tool:
        place += f", tool {_md_code(report.tool)}"
    lines.append(f"| place | {place} |")
    if report.settings_changed:
        lines.append(f"| settings | {_md_escape(', '.join(report.settings_changed))} |")
    if report.verdict:
        lines.append(f"| cost | {_md_escape(_cost(report))} |")
        lines.append(f"| invalidated | {_md_escape(', '.join(report.invalidated) or '-')} |")
    if report.tools_added:
        lines.append(f"| tools added | {_md_escape(_names(report.tools_added))} |")
    if report.tools_removed:
        lines.append(f"| tools removed | {_md_escape(_names(report.tools_removed))} |")
    if report.provenance:
        lines.append(f"| provenance | {_md_escape(report.provenance)} |")
    lines.append("")
    marker = f"{_md_code(MARKER, False)} marks where the difference starts"
    lines += [f"**{_md_escape(report.label_a)}** ({marker}):", ""]
    lines += _md_block(report.context_a, "text")
    lines += ["", f"**{_md_escape(report.label_b)}**:", ""]
    lines += _md_block(report.context_b, "text")
    if report.tools_a or report.tools_b:
        lines += ["", "**Tool order**", ""]
        lines += [
            f"| # | {_md_escape(report.label_a)} | {_md_escape(report.label_b)} |",
            "|---|---|---|",
        ]
        mark = _out_of_place(report)
        count = max(len(report.tools_a), len(report.tools_b))
        for index in range(min(count, _MAX_TOOL_ROWS)):
            x = report.tools_a[index] if index < len(report.tools_a) else "-"
            y = report.tools_b[index] if index < len(report.tools_b) else "-"
            number = str(index)
            if index == mark:
                note = "first out of place" if x != y else "changed here"
                number = f"**{index}** ({note})"
            lines.append(f"| {number} | {_md_code(x)} | {_md_code(y)} |")
        if count > _MAX_TOOL_ROWS:
            lines.append(f"| … | {count - _MAX_TOOL_ROWS} more | |")
    if report.notes:
        lines += ["", *(f"> note: {_md_escape(note)}" for note in report.notes)]
    if report.volatile_hints:
        lines += ["", "**Hints**", ""]
        lines += [f"- {_md_escape(hint)}" for hint in report.volatile_hints]
    lines.extend(_markdown_reproduce(report))
    if report.deepdiff:
        lines += ["", "<details><summary>deepdiff</summary>", ""]
        lines += _md_block(msgspec.json.format(encode_json(report.deepdiff)).decode(), "json")
        lines += ["", "</details>"]
    return [redact(line) for line in lines]


def _markdown_reproduce(report: DriftReport) -> list[str]:
    reproduce = report.reproduce
    if reproduce is None:
        return []
    lines = ["", "**Reproduce**", ""]
    if reproduce.seed is not None:
        lines.append(f"- seed: {_md_code(str(reproduce.seed), False)}")
    if reproduce.order_a:
        lines.append(
            f"- order ({_md_escape(report.label_a)}):"
            f" {_md_code(', '.join(reproduce.order_a), False)}"
        )
    if reproduce.order_b:
        lines.append(
            f"- order ({_md_escape(report.label_b)}):"
            f" {_md_code(', '.join(reproduce.order_b), False)}"
        )
    if reproduce.command:
        lines += ["", *_md_block(reproduce.command, "sh")]
    return lines


def _md_block(text: str, language: str) -> list[str]:
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return [f"{fence}{language}", text, fence]


def _md_code(text: str, cell: bool = True) -> str:
    """An inert code span; `cell`: it stands in a table's cell (its `|` escaped)."""
    return _formats.code(text, LINE_LIMIT, cell=cell)


def _md_escape(text: str) -> str:
    """Inert Markdown text: no image, link, mention, HTML or table break renders."""
    return _formats.text(text.replace("\n", " "))


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(f"{re.escape(char)}+", text)
    return max((len(run) for run in runs), default=0)
