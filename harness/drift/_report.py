"""The drift report struct: what differs between two sides, where, and what it costs.

`harness.drift._compare` fills it; `harness.drift._render` turns it into text for terminals,
Markdown for CI summaries, and JSON (the struct itself, through msgspec).
"""

from __future__ import annotations

from typing import Any

import msgspec


class Reproduce(msgspec.Struct, frozen=True):
    """How to get the same two sides again."""

    seed: int | None = None
    order_a: tuple[str, ...] = ()
    order_b: tuple[str, ...] = ()
    command: str | None = None


class DriftReport(msgspec.Struct, frozen=True, omit_defaults=True):
    """What differs between two sides, where, and what it costs. See `compare`."""

    identical: bool
    verdict: str | None = None
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
    prefix_bytes_kept: int = 0
    prefix_bytes_lost: int = 0
    tokens_kept: int = 0
    tokens_lost: int = 0
    provenance: str | None = None
    reproduce: Reproduce | None = None
    volatile_hints: tuple[str, ...] = ()
    deepdiff: dict[str, Any] = {}
    notes: tuple[str, ...] = ()
    label_a: str = "expected"
    label_b: str = "actual"

    def to_text(self) -> str:
        """Plain text for terminals: the summary, then one labelled line per fact."""
        from harness.drift._render import text_lines

        return "\n".join(text_lines(self)) + "\n"

    def to_markdown(self) -> str:
        """Markdown for CI summaries (a GitHub step summary)."""
        from harness.drift._render import markdown_lines

        return "\n".join(markdown_lines(self)) + "\n"

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)
