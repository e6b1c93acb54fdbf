"""The corpus's file formats: a case, what it expects, and the sources that decide it.

One `msgspec.Struct` per concept, decoded strictly (an unknown key is an error, so a typo in a
case file cannot silently drop an expectation). A case file (`<provider>.json`) holds templates
(`bodies`) and cases; `sources.json` holds every source once, with the quote that decides it.
A case names exactly one check, the CLI command that judges it: `diff` (a pair, `harness diff A B
--format json`), `lint` (a request or a session, `harness lint PATH --format json`) or `cost`
(a session, `harness cost PATH --format json`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "BREAK",
    "NO_BREAK",
    "Case",
    "CaseFile",
    "CostExpect",
    "DiffExpect",
    "Fires",
    "LintExpect",
    "Source",
    "SourcesFile",
]

# `diff.verdict` words that are not a break: `identical` (the same bytes), `extends` (the second
# request continues the first's cached prefix), `same` (bytes differ, the provider caches both as
# one prefix). `break` is any break whose word no source decides; every other word is the
# provider's (or the harness's documented) word for a break.
NO_BREAK = frozenset({"identical", "extends", "same"})
BREAK = "break"

# A count the CLI prints: exactly this number, or ">0".
Count = int | Literal[">0"]


class Source(msgspec.Struct, forbid_unknown_fields=True):
    """Where a verdict comes from: a provider's page, or another tool's published case."""

    url: str
    title: str
    quote: str  # the sentence(s) that decide it, as the page says them
    kind: Literal["provider", "tool"] = "provider"
    checked_on: str = ""  # the date of the stored copy read (YYYY-MM-DD)
    note: str = ""  # how the quote was read, where it needs saying


class SourcesFile(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["harness/rule-case-sources"]
    format: Literal[1]
    sources: dict[str, Source]


class DiffExpect(msgspec.Struct, forbid_unknown_fields=True):
    """What `harness diff A B --format json` must say."""

    verdict: str  # identical | extends | same | break | a break word
    block: str | None = None  # the first block that changed (`block`)
    invalidated: list[str] | None = None  # exactly these levels lost
    invalidated_includes: list[str] | None = None  # at least these levels lost
    tokens_lost: Count | None = None


class Fires(msgspec.Struct, forbid_unknown_fields=True):
    """A finding that must be there. No `rule`: any rule (a refusal no rule is named for yet)."""

    rule: str | None = None
    severity: Literal["error", "warning", "info"] | None = None
    request: int | None = None  # 0-based, in the file
    message: str | None = None  # a piece of its message


class LintExpect(msgspec.Struct, forbid_unknown_fields=True):
    """What `harness lint PATH --format json` must find, and what it must not."""

    fires: list[Fires] = []
    silent: list[str] = []  # rules that must not fire on any request
    exit: int | None = None


class CostExpect(msgspec.Struct, forbid_unknown_fields=True):
    """What `harness cost PATH --format json` must total (its `totals`)."""

    cache_read_tokens: Count | None = None
    cache_write_tokens: Count | None = None


class Case(msgspec.Struct, forbid_unknown_fields=True):
    """One case: requests built from templates, one check, the source that decides it."""

    id: str
    title: str
    source: str | list[str]  # a key of sources.json, or several when each decides a part
    requests: list[Any]  # templates (see `_build`); one for a request, two for a pair, more
    why: str = ""  # how the quote decides this case, where it is not plain
    url: str | None = None  # overrides the file's
    near_miss_of: str | None = None  # the id of the case this one must stay silent beside
    diff: DiffExpect | None = None
    lint: LintExpect | None = None
    cost: CostExpect | None = None

    def __post_init__(self) -> None:
        checks = [c for c in (self.diff, self.lint, self.cost) if c is not None]
        if len(checks) != 1:
            raise ValueError(f"case {self.id}: give exactly one of diff, lint, cost")
        if self.diff is not None and len(self.requests) != 2:
            raise ValueError(f"case {self.id}: a diff case is a pair of requests")

    @property
    def source_ids(self) -> list[str]:
        return [self.source] if isinstance(self.source, str) else list(self.source)

    @property
    def check(self) -> str:
        return "diff" if self.diff else "lint" if self.lint else "cost"


class CaseFile(msgspec.Struct, forbid_unknown_fields=True):
    kind: Literal["harness/rule-cases"]
    format: Literal[1]
    provider: str
    cases: list[Case]
    url: str | None = None  # the URL every request is sent to, unless a case says otherwise
    bodies: dict[str, Any] = {}  # named templates (`{"$use": name}`)
