"""The rules that read a conversation: what one request wrote and the next one reads.

`simulate(session)` replays the provider's cache over a file's requests in order, per endpoint:
each request looks up its breakpoints (Anthropic and Bedrock: each marker looks back at most
`Lookback.reach` blocks; OpenAI, Gemini and DeepSeek: the longest prefix an entry was written
for), then writes the breakpoints the rules say are written. From it:

- `lookback-exceeded`: a request whose only earlier entry lies further back from its markers
  than a breakpoint looks: the prefix is written again instead of read;
- `write-never-read`: a write (an entry at or above the minimum) that no later request reads,
  although its conversation goes on: its write premium buys nothing (a write the next request
  breaks is the gate's finding, `prefix-broken`, and one a later breakpoint could not reach is
  `lookback-exceeded`'s, not this one).

And from the prefix-chain gate, `prefix-broken` (its verdict word first: `tools_changed`,
`messages_changed`...; an effect the rules do not know for certain, or a compaction, is a
warning), and `unknown-model`: once per model the rules know no minimum for, so the rules that
need one abstain. Time is not simulated here: a TTL that expires between requests is the cost
model's (`ttl-expired`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from harness.rules._analysis import Analysis
from harness.rules._engine import Finding, Rule, Session, Severity

__all__ = [
    "LookbackExceeded",
    "PrefixBroken",
    "Simulation",
    "UnknownModel",
    "WriteNeverRead",
    "simulate",
]


@dataclass
class Entry:
    """A cache entry a request wrote: its owner, boundary and pointer, and whether it was read."""

    owner: int
    after: int
    pointer: str
    tokens: int
    read: bool = False


@dataclass
class Simulation:
    """What the replayed cache saw: every entry written, and each out-of-reach lookup."""

    entries: list[Entry] = field(default_factory=list)
    out_of_reach: list[tuple[int, int, str, Entry]] = field(default_factory=list)


def _endpoint(analysis: Analysis) -> str:
    url = analysis.request.url
    if url is None:
        return analysis.provider
    parts = urlsplit(url)
    return f"{analysis.provider} {parts.hostname or ''}{parts.path}"


def simulate(session: Session) -> Simulation:
    """The cache replayed over the session (made once per session)."""
    found = session.shared.get("simulation")
    if isinstance(found, Simulation):
        return found
    result = Simulation()
    entries: dict[tuple[str, bytes], Entry] = {}
    for analysis in session.analysed():
        if analysis.caching is None:
            continue
        endpoint, lay = _endpoint(analysis), analysis.layout
        blocks = analysis.lookback is not None and analysis.lookback.unit == "blocks"
        reach = analysis.lookback.reach if blocks and analysis.lookback is not None else None
        lookups = [mark.after for mark in analysis.marks] if blocks else [len(lay.units)]
        best = None
        for point in lookups:
            low = max(point - reach, 1) if reach is not None else 1
            for boundary in range(point, low - 1, -1):
                entry = entries.get((endpoint, lay.digest(boundary)))
                if entry is not None and entry.after == boundary:
                    best = boundary if best is None else max(best, boundary)
                    break
        if best is not None:
            for boundary in range(best, 0, -1):  # an entry read covers every shorter one
                entry = entries.get((endpoint, lay.digest(boundary)))
                if entry is not None and entry.after == boundary:
                    entry.read = True
        elif reach is not None and lookups:
            _out_of_reach(result, analysis, entries, endpoint, reach)
        for write in analysis.writes:
            key = (endpoint, lay.digest(write.after))
            if write.written and key not in entries:
                entry = Entry(
                    analysis.request.index, write.after, write.pointer, write.tokens.tokens
                )
                entries[key] = entry
                result.entries.append(entry)
    session.shared["simulation"] = result
    return result


def _out_of_reach(
    result: Simulation,
    analysis: Analysis,
    entries: dict[tuple[str, bytes], Entry],
    endpoint: str,
    reach: int,
) -> None:
    """A lookup that found nothing in reach: is there an entry further back it would have read?"""
    lay = analysis.layout
    first = min(mark.after for mark in analysis.marks)
    for boundary in range(first - reach - 1, 0, -1):
        entry = entries.get((endpoint, lay.digest(boundary)))
        if entry is not None and entry.after == boundary:
            mark = min((m for m in analysis.marks if m.after > boundary), key=lambda m: m.after)
            distance = mark.after - boundary
            result.out_of_reach.append((analysis.request.index, distance, mark.pointer, entry))
            return


class LookbackExceeded(Rule):
    name = "lookback-exceeded"
    severity = "warning"
    providers = "Anthropic, Bedrock (20 blocks); OpenAI (80 breakpoints)"
    meaning = (
        "a breakpoint sits more blocks after the previous cache write than a breakpoint looks"
        " back (Anthropic: about 20): the prefix is written again instead of read"
    )
    fix = "add a breakpoint within 20 blocks of the previous one (on a long tool turn, mid-way)"

    def check(self, session: Session) -> Iterable[Finding]:
        result = simulate(session)
        for index, distance, pointer, entry in result.out_of_reach:
            analysis = session.analyses[index]
            reach = analysis.lookback.reach if analysis and analysis.lookback else 0
            yield session.finding(
                self,
                index,
                f"the breakpoint at {pointer} is {distance} blocks after the cache entry request"
                f" {entry.owner} wrote at {entry.pointer}; a breakpoint looks back at most"
                f" {reach} blocks, so ~{entry.tokens:,} cached tokens are written again instead of"
                " read",
                pointer=pointer,
            )
        yield from self._breakpoints(session)

    def _breakpoints(self, session: Session) -> Iterable[Finding]:
        """OpenAI: matching considers only the latest `reach` breakpoints of the request."""
        for analysis in session.analysed():
            row = analysis.lookback
            if row is None or row.unit != "breakpoints" or len(analysis.marks) <= row.reach:
                continue
            yield session.finding(
                self,
                analysis.request.index,
                f"{len(analysis.marks)} breakpoints: matching considers only the latest"
                f" {row.reach}, so an entry written at an earlier one is not found",
            )


class WriteNeverRead(Rule):
    name = "write-never-read"
    severity = "warning"
    providers = "any that writes (Anthropic, Bedrock, OpenAI 5.6+ at 1.25x)"
    meaning = (
        "a cache write that no later request of the conversation reads: the write premium"
        " (1.25x or 2x the input price) buys nothing"
    )
    fix = (
        "move the breakpoint to a place the next request repeats, or remove what changes"
        " before it (a timestamp, a reordered tool)"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        chain = session.chain  # a break the gate reports explains its own unread write
        explained = {item.previous - 1 for item in [*chain.breaks, *chain.warnings]}
        result = simulate(session)
        out_of_reach = {id(entry) for *_, entry in result.out_of_reach}  # lookback-exceeded's
        for entry in result.entries:
            if entry.read or entry.owner in explained or not session.continued(entry.owner):
                continue
            if id(entry) in out_of_reach:
                continue
            yield session.finding(
                self,
                entry.owner,
                f"the cache write of ~{entry.tokens:,} tokens up to {entry.pointer} is never"
                " read by a later request of the conversation: its write premium buys nothing",
                pointer=entry.pointer,
            )


class PrefixBroken(Rule):
    name = "prefix-broken"
    severity = "error"
    providers = "any"
    meaning = (
        "a request does not extend the cached prefix of the request it continues (the"
        " prefix-chain gate); the message starts with the verdict word (tools_changed, ...)"
    )
    fix = (
        "send the same tools, system and settings in the same order every turn"
        " (harness.canonical_tools); mark a deliberate move moves_header(reason=...)"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        chain = session.chain
        found = sorted([*chain.breaks, *chain.warnings], key=lambda item: item.index)
        for item in found:
            previous = session.offset + item.previous - 1
            message = (
                f"{item.report.summary} (against request {previous}, the request it continues)"
            )
            severity: Severity = "error" if item.severity == "error" else "warning"
            if session.moves_header:  # the test says its header moves, and why
                message += f"; expected: moves_header(reason={session.moves_header!r})"
                severity = "info"
            yield session.finding(
                self,
                item.index - 1,
                message,
                severity=severity,
                pointer=item.report.raw_pointer,
                expected=bool(session.moves_header),
            )


class UnknownModel(Rule):
    name = "unknown-model"
    severity = "info"
    providers = "any with per-model rows"
    meaning = (
        "the rules pack knows no minimum for the model: the rules that need one abstain"
        " (below-minimum, no-breakpoint, write-never-read)"
    )
    fix = "add a minimum row for the model (harness-rules.json or harness_capture_config rules)"

    def check(self, session: Session) -> Iterable[Finding]:
        told: set[tuple[str, str | None]] = set()
        for analysis in session.analysed():
            key = (analysis.provider, analysis.model)
            if analysis.caching is None or analysis.model_known or key in told:
                continue
            told.add(key)
            named = f"model {analysis.model}" if analysis.model else "a request without a model"
            yield session.finding(
                self,
                analysis.request.index,
                f"the rules know no minimum for {named} ({analysis.provider}): the rules that"
                " need one abstain; add a minimum row to the project's rules to judge it",
            )
