"""The prefix-chain gate: each request must keep the cached prefix of the one it continues.

A provider caches the prefix it saw; the next request of the same conversation hits that cache
only if it keeps it, in that provider's cache order. `prefix_chain` links the requests of each
endpoint (which request continues which: `harness.cache._links`) and judges every request
against the one it continues by the cache model (`harness.cache._verdict`, the one judge `harness
lint`, `harness diff`, the cost model and `harness scan` share); `PrefixBroken` raises the breaks
as a test failure, each with its drift report (verdict, place, tool, and what the provider's
cache loses: nothing where nothing was cached).

Bookkeeping fields (the rules pack's: streaming, output limits, a diagnostics request) never
break the prefix. A break whose cache effect the rules do not know for certain (a retention
setting, a setting no rule knows) or that the provider makes by design of a feature the program
uses on purpose (OpenAI's `context_compacted`; Anthropic's `images_changed`, the rules pack's
`gate: "warning"`) is a warning, kept apart in `PrefixChain.warnings`: it is reported, never a
failure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from harness._shared._errors import Drift
from harness._shared._views import RequestSplit
from harness.cache._links import CONVERSATION_BLOCKS, links, walk
from harness.cache._verdict import judge
from harness.drift._report import DriftReport, Loss
from harness.drift._wording import BYTES_PER_TOKEN, UNCERTAIN_KINDS

__all__ = [
    "CONVERSATION_BLOCKS",
    "ChainItem",
    "PrefixBreak",
    "PrefixBroken",
    "PrefixChain",
    "check_prefix_chain",
    "conversation_links",
    "prefix_chain",
]

# Breaks the gate reports as warnings: an effect the rules do not know for certain, or a move the
# provider makes on purpose.
WARNING_KINDS: Final = UNCERTAIN_KINDS | {"compaction", "by-design"}


@runtime_checkable
class ChainItem(Protocol):
    """A request with its number in a conversation (a captured request is one).

    A `url` attribute, when the item has one, puts it on its endpoint; `method`, `headers` and
    `body` (bytes or a decoded body), when it has them, tell the cache model what it caches.
    """

    number: int
    split: RequestSplit | None


class PrefixBroken(Drift):
    """Consecutive requests of one conversation do not extend each other's cacheable prefix."""

    def __init__(self, breaks: Sequence[PrefixBreak]) -> None:
        self.breaks = tuple(breaks)
        text = "\n".join(item.to_text() for item in self.breaks)
        super().__init__(
            f"{len(self.breaks)} cache prefix {'break' if len(self.breaks) == 1 else 'breaks'}"
            " (mark the test @pytest.mark.moves_header(reason=...) if the move is deliberate)\n\n"
            + text
        )


@dataclass(frozen=True)
class PrefixBreak:
    """Request `index` does not extend the cacheable prefix of request `previous` (1-based)."""

    index: int
    previous: int
    block: str
    report: DriftReport
    prefix_bytes: int
    bytes_lost: int
    endpoint: str = ""
    loss: Loss | None = None  # the cache model's: what the provider's cache loses

    @property
    def tokens_lost(self) -> int:
        """The cached tokens the request can no longer read (the cache model's; 0 where nothing
        was cached or the rules cannot say)."""
        if self.loss is not None:
            return self.loss.tokens or 0
        return self.bytes_lost // BYTES_PER_TOKEN

    @property
    def verdict(self) -> str:
        return self.report.verdict or f"{self.block}_changed"

    @property
    def severity(self) -> str:
        """`error` for a certain break; `warning` for an effect the rules do not know for certain
        (a retention, a setting no rule knows) or a compaction the provider made."""
        return "warning" if self.report.kind in WARNING_KINDS else "error"

    def to_text(self) -> str:
        return f"{self.headline}\n{self.report.to_text()}"

    @property
    def headline(self) -> str:
        """The first line of `to_text`: the verdict, the requests and what it costs (made without
        printing the drift report)."""
        where = f" ({self.endpoint})" if self.endpoint else ""
        if self.report.kind in UNCERTAIN_KINDS:
            head = (
                f"{self.verdict}: request {self.index}{where} changed a setting of request"
                f" {self.previous} whose cache effect is not documented; {self.prefix_bytes:,}"
                f" prefix bytes (~{self.prefix_bytes // BYTES_PER_TOKEN:,} tokens) at stake"
            )
        elif self.loss is not None:
            head = (
                f"{self.verdict}: request {self.index}{where} does not extend request"
                f" {self.previous}'s cacheable prefix: the {self.block} block broke first;"
                f" {self.loss.clause()}"
            )
        else:
            head = (
                f"{self.verdict}: request {self.index}{where} does not extend request"
                f" {self.previous}'s cacheable prefix: the {self.block} block broke first;"
                f" {self.bytes_lost:,} of {self.prefix_bytes:,} prefix bytes lost"
                f" (~{self.tokens_lost:,} tokens, bytes / {BYTES_PER_TOKEN})"
            )
        return head


@dataclass
class PrefixChain:
    """What the gate saw: the breaks (certain), the warnings (breaks whose effect is not certain,
    or a compaction), and per provider the requests it saw and judged."""

    breaks: list[PrefixBreak] = field(default_factory=list)
    warnings: list[PrefixBreak] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)  # provider requests, by provider
    judged: Counter[str] = field(default_factory=Counter)  # of those, judged against another
    unrecognised: int = 0  # requests no provider claimed (not judged)

    def coverage(self) -> str:
        """One line: requests checked per provider (rig's and pydantic-ai's coverage line)."""
        parts = [
            f"{provider} {self.seen[provider]} (judged {self.judged[provider]})"
            for provider in sorted(self.seen)
        ]
        text = ", ".join(parts) if parts else "no provider requests"
        if self.unrecognised:
            text += f"; {self.unrecognised} other request(s) not checked"
        return f"prefix chain: {text}"

    def add(self, other: PrefixChain) -> None:
        """Count `other` in (another conversation of the same test)."""
        self.breaks.extend(other.breaks)
        self.warnings.extend(other.warnings)
        self.seen.update(other.seen)
        self.judged.update(other.judged)
        self.unrecognised += other.unrecognised


def prefix_chain(items: Sequence[Any], *, only: Collection[int] | None = None) -> PrefixChain:
    """Judge every request against the one it continues, per endpoint (see the module doc).

    `items` are captured requests, `LintRequest`s, `RequestSplit`s, `CacheView`s (taken as
    exact-prefix, the whole view being the prefix) or request bodies; requests no provider
    recognises are counted, not judged. `only`: the numbers of the requests to judge, where the
    caller knows every other one keeps its prefix (`harness check` judged the same requests,
    split alike, for the rules: whether a request breaks depends on its split and the one it
    continues, not on what it was answered); each is counted as judged all the same.
    """
    chain = PrefixChain()
    for link, previous in walk(items):
        if link is None:
            chain.unrecognised += 1
            continue
        chain.seen[link.split.provider] += 1
        if previous is None:
            continue
        chain.judged[link.split.provider] += 1
        if only is not None and link.number not in only:
            continue
        found = judge(previous, link)
        if found is None:
            continue
        item = PrefixBreak(
            index=link.number,
            previous=previous.number,
            block=found.report.block or "settings",
            report=found.report,
            prefix_bytes=found.prefix_bytes,
            bytes_lost=found.bytes_lost,
            endpoint=link.endpoint if link.endpoint != link.split.provider else "",
            loss=found.loss,
        )
        (chain.breaks if item.severity == "error" else chain.warnings).append(item)
    return chain


def conversation_links(items: Sequence[Any]) -> list[int | None]:
    """For each item (0-based), the item it continues by the gate's rules, or None (it starts a
    conversation, or no provider recognises it): what the rules read along a conversation."""
    return links(items)


def check_prefix_chain(items: Sequence[Any]) -> list[PrefixBreak]:
    """The breaks of `prefix_chain(items)`, in order."""
    return prefix_chain(items).breaks
