"""The drift report: what differs between two sides, where, and what it costs, as raw values.

`harness.drift._compare` fills it with what it compared: names, pointers and setting keys as
they are, the bytes around the first difference (`Window`), sentences whose quoted content is a
`Quote` still to be cut. Nothing in it is redacted or cut yet: that is printing, and printing is
`harness.drift._printed` (through `harness._shared._printer`, which redacts before it cuts). Every
attribute that shows content (`summary`, `context_a`, `tool`, `tools_b`, `deepdiff`...) is the
printed form, made once per report and made again when the printer learns a new secret; the
raw values are the `raw_*` fields. `to_text`, `to_markdown` and `to_json` print it whole.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from harness._shared._views import Window
from harness.drift._parts import Reproduce, Sentence

if TYPE_CHECKING:
    from harness.drift._printed import PrintedReport

__all__ = ["DriftReport", "Loss"]


class Loss(NamedTuple):
    """What a change costs in the cache model's terms (`harness.cache._verdict`): the cached
    tokens and prompt bytes the later request can no longer read (None: the rules cannot say),
    and, when nothing is lost or the loss is unknown, why (`nothing was cached at request 1 (41
    tokens, minimum 1,024 for claude-sonnet-4-5)`)."""

    tokens: int | None
    bytes: int | None
    note: str = ""

    def clause(self) -> str:
        """The report's cost clause."""
        if self.tokens is None:
            return f"{self.note}: what it loses is not judged"
        if self.tokens == 0 and self.note:
            return f"{self.note}: no cached tokens lost"
        size = f" ({self.bytes:,} bytes)" if self.bytes is not None else ""
        return f"~{self.tokens:,} cached tokens{size} lost"


class DriftReport(msgspec.Struct, frozen=True, dict=True):
    """What differs between two sides, where, and what it costs. See `compare`.

    Its JSON (`to_json`) is the printed report; decoding that JSON as a `DriftReport` gives a
    report holding printed values, which prints the same. Two reports are equal when they print
    the same.
    """

    identical: bool
    verdict: str | None = None
    extends: bool = False  # not identical, but the later request keeps the cached prefix
    raw_block: str | None = msgspec.field(default=None, name="block")
    invalidated: tuple[str, ...] = ()
    kind: str | None = None
    raw_summary: str | Sentence = msgspec.field(default="", name="summary")
    raw_pointer: str = msgspec.field(default="", name="pointer")
    offset: int = -1
    raw_context_a: Window | str = msgspec.field(default="", name="context_a")
    raw_context_b: Window | str = msgspec.field(default="", name="context_b")
    raw_tool: str | None = msgspec.field(default=None, name="tool")
    raw_settings_changed: tuple[str, ...] = msgspec.field(default=(), name="settings_changed")
    raw_tools_added: tuple[str, ...] = msgspec.field(default=(), name="tools_added")
    raw_tools_removed: tuple[str, ...] = msgspec.field(default=(), name="tools_removed")
    raw_tools_a: tuple[str, ...] = msgspec.field(default=(), name="tools_a")
    raw_tools_b: tuple[str, ...] = msgspec.field(default=(), name="tools_b")
    prefix_bytes_kept: int = 0
    prefix_bytes_lost: int = 0
    tokens_kept: int = 0
    tokens_lost: int = 0
    raw_provenance: str | None = msgspec.field(default=None, name="provenance")
    raw_reproduce: Reproduce | None = msgspec.field(default=None, name="reproduce")
    made_hints: tuple[str, ...] = msgspec.field(default=(), name="volatile_hints")
    raw_deepdiff: dict[str, Any] = msgspec.field(default_factory=dict, name="deepdiff")
    notes: tuple[str, ...] = ()
    raw_label_a: str = msgspec.field(default="expected", name="label_a")
    raw_label_b: str = msgspec.field(default="actual", name="label_b")
    # What hints read (the texts near the first difference, and whether to compare them):
    # hints are made from them when printed. A decoded report has its hints made already.
    raw_hints: tuple[str, str, bool] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DriftReport) and self.printed() == other.printed()

    def __hash__(self) -> int:
        return hash(self.to_json())

    @cached_property
    def _printed(self) -> tuple[int, PrintedReport]:
        from harness.drift._printed import printed

        return printed(self)

    def printed(self) -> PrintedReport:
        """This report as it is printed: redacted, cut, bounded (made once, and again when the
        printer learns a new secret)."""
        from harness._shared._printer import generation

        made, report = self._printed
        if made != generation():
            del self.__dict__["_printed"]
            made, report = self._printed
        return report

    @property
    def block(self) -> str | None:
        return self.printed().block

    @property
    def summary(self) -> str:
        return self.printed().summary

    @property
    def pointer(self) -> str:
        return self.printed().pointer

    @property
    def context_a(self) -> str:
        return self.printed().context_a

    @property
    def context_b(self) -> str:
        return self.printed().context_b

    @property
    def tool(self) -> str | None:
        return self.printed().tool

    @property
    def settings_changed(self) -> tuple[str, ...]:
        return self.printed().settings_changed

    @property
    def tools_added(self) -> tuple[str, ...]:
        return self.printed().tools_added

    @property
    def tools_removed(self) -> tuple[str, ...]:
        return self.printed().tools_removed

    @property
    def tools_a(self) -> tuple[str, ...]:
        return self.printed().tools_a

    @property
    def tools_b(self) -> tuple[str, ...]:
        return self.printed().tools_b

    @property
    def provenance(self) -> str | None:
        return self.printed().provenance

    @property
    def reproduce(self) -> Reproduce | None:
        return self.printed().reproduce

    @property
    def volatile_hints(self) -> tuple[str, ...]:
        return self.printed().volatile_hints

    @property
    def deepdiff(self) -> dict[str, Any]:
        return self.printed().deepdiff

    @property
    def label_a(self) -> str:
        return self.printed().label_a

    @property
    def label_b(self) -> str:
        return self.printed().label_b

    def to_text(self) -> str:
        """Plain text for terminals: the summary, then one labelled line per fact."""
        from harness.drift._render import text_lines

        return "\n".join(text_lines(self.printed())) + "\n"

    def to_markdown(self) -> str:
        """Markdown for CI summaries (a GitHub step summary)."""
        from harness.drift._render import markdown_lines

        return "\n".join(markdown_lines(self.printed())) + "\n"

    def to_json(self) -> bytes:
        """The printed report as JSON: the same keys whatever the report holds."""
        return msgspec.json.encode(self.printed())
