"""The rule engine's parts: a finding, a rule, the session a rule reads, and which findings fail.

- `Finding`: what a rule found, at which request of which file, with a severity (`error`:
  the API refuses the request, or the gate's prefix is broken; `warning`: it costs; `info`: worth
  knowing). Its JSON is what `harness lint --format json` lists under `findings`.
- `Rule`: a registered part (as providers are): a `name`, a default `severity`, the words for the
  rules table (`providers`, `meaning`, `fix`), and `check(session)`, which yields findings.
- `Session`: the requests of one file (a cassette, a body, a session `.jsonl`), each analysed
  under the rules pack (`Analysis`), with the conversation each belongs to by the prefix-chain
  gate's rules (`links`), the gate's own verdicts (`chain`) and the cache replayed over them
  (`replayed`: the one replay the rules and the cost model read). Rules that need a request's time
  or the provider's response find them on `session.requests[i]`.
- `Policy`: a project's choice of which rules fail (`--fail-on`, `harness_fail_on`, a rules
  file's `fail_on`) and of their severities; a finding that says the API refuses the request
  (`too-many-breakpoints`, `misplaced-breakpoint`, `ttl-unsupported`, `ttl-order`) stays an
  error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec

from harness._shared._errors import UsageError
from harness.cache._analysis import Analysis, LintRequest, analyse
from harness.cache._links import links as conversation_links
from harness.cache._replay import Conversation, replay

if TYPE_CHECKING:
    from harness.capture._prefix import PrefixChain

__all__ = ["SEVERITIES", "Finding", "Policy", "Rule", "Session", "Severity"]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
# Rules whose error means the API refuses the request: no policy lowers that below an error.
ALWAYS_ERROR = frozenset(
    {"too-many-breakpoints", "misplaced-breakpoint", "ttl-unsupported", "ttl-order"}
)


class Finding(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a rule found: `rule`, `severity`, `file`, `request` (0-based in the file) and the
    `message`; the provider, model and JSON pointer when they are known."""

    rule: str
    severity: Severity
    file: str
    request: int
    message: str
    provider: str = ""
    model: str = ""
    pointer: str = ""
    expected: bool = False  # the test said so (moves_header): an info no policy raises

    def to_text(self) -> str:
        return f"{self.file}: request {self.request}: {self.severity} {self.rule}: {self.message}"


class Rule(ABC):
    """A rule: subclass it, name it, and register an instance (`harness.rules.register_rule`, or
    `harness.register_rule` in a `pytest_harness_configure` hook)."""

    name: ClassVar[str]
    severity: ClassVar[Severity] = "warning"
    providers: ClassVar[str] = "any"
    meaning: ClassVar[str] = ""
    fix: ClassVar[str] = ""

    @abstractmethod
    def check(self, session: Session) -> Iterable[Finding]:
        """Every finding of this rule in `session`."""


@dataclass
class Session:
    """The requests of one file, analysed, with their conversations (see the module doc)."""

    file: str
    requests: Sequence[LintRequest]
    offset: int = 0  # what a finding's `request` adds (a cassette's prove_stable calls)
    moves_header: str = ""  # the reason of the test's moves_header marker (a cassette's)
    analyses: list[Analysis | None] = field(init=False)
    links: list[int | None] = field(init=False)
    shared: dict[str, Any] = field(default_factory=dict)  # what rules compute once and share

    def __post_init__(self) -> None:
        self.analyses = [analyse(request) for request in self.requests]
        self.links = conversation_links(self.requests)

    @cached_property
    def chain(self) -> PrefixChain:
        """The prefix-chain gate over the file's requests (its judge imported when asked: the
        cost model reads no verdict)."""
        from harness.capture._prefix import prefix_chain

        return prefix_chain(self.requests)

    @cached_property
    def replayed(self) -> list[Conversation]:
        """The provider's cache replayed over the file's requests (`harness.cache._replay`):
        what every rule along a conversation and the cost model read."""
        return replay(self.file, list(self.analysed()))

    def analysed(self) -> Iterable[Analysis]:
        return (analysis for analysis in self.analyses if analysis is not None)

    @cached_property
    def roots(self) -> list[int]:
        """For each request, the first request of its conversation."""
        roots: list[int] = []
        for index, previous in enumerate(self.links):
            roots.append(index if previous is None else roots[previous])
        return roots

    def conversation(self, index: int) -> int:
        """The first request of `index`'s conversation."""
        return self.roots[index]

    def continued(self, index: int) -> bool:
        """Whether a later request of the file continues `index`'s conversation."""
        return self._last.get(self.roots[index], index) > index

    @cached_property
    def _last(self) -> dict[int, int]:
        last: dict[int, int] = {}
        for index, root in enumerate(self.roots):
            last[root] = index
        return last

    def finding(
        self,
        rule: Rule,
        index: int,
        message: str,
        *,
        severity: Severity | None = None,
        pointer: str = "",
        expected: bool = False,
    ) -> Finding:
        analysis = self.analyses[index] if 0 <= index < len(self.analyses) else None
        return Finding(
            rule=rule.name,
            severity=severity or rule.severity,
            file=self.file,
            request=self.offset + index,
            message=message,
            provider=analysis.provider if analysis is not None else "",
            model=(analysis.model or "") if analysis is not None else "",
            pointer=pointer,
            expected=expected,
        )


@dataclass(frozen=True)
class Policy:
    """Which rules fail (`fail_on`: their findings are errors) and each rule's severity."""

    fail_on: frozenset[str] = frozenset()
    severity: tuple[tuple[str, Severity], ...] = ()

    @classmethod
    def of(
        cls,
        known: Iterable[str],
        *,
        fail_on: Iterable[str] = (),
        severity: Iterable[tuple[str, str]] = (),
        where: str = "--fail-on",
    ) -> Policy:
        """A policy, its rule names checked against `known` (a UsageError lists them)."""
        names = set(known)
        wanted = {name.strip() for name in fail_on if name.strip()}
        unknown = sorted(wanted - names - {"all", "none"})
        levels: list[tuple[str, Severity]] = []
        for name, level in severity:
            if name not in names:
                unknown.append(name)
            elif level not in SEVERITIES:
                raise UsageError(
                    f"{where}: {name}: severity {level!r} is not one of error, warning, info"
                )
            else:
                levels.append((name, level))
        if unknown:
            raise UsageError(
                f"{where}: unknown rule {', '.join(map(repr, unknown))}; the rules are"
                f" {', '.join(sorted(names))} (or all)"
            )
        if "none" in wanted:
            wanted = set()
        return cls(frozenset(names if "all" in wanted else wanted), tuple(levels))

    def merged(self, other: Policy) -> Policy:
        return Policy(self.fail_on | other.fail_on, (*self.severity, *other.severity))

    def apply(self, finding: Finding) -> Finding:
        """The finding with the project's severity: an error where the rule fails."""
        if finding.expected:
            return finding
        level: Severity = dict(self.severity).get(finding.rule, finding.severity)
        if finding.rule in ALWAYS_ERROR and finding.severity == "error":
            level = "error"  # the API refuses the request: never less than an error
        if finding.rule in self.fail_on:
            level = "error"
        return (
            finding
            if level == finding.severity
            else msgspec.structs.replace(finding, severity=level)
        )
