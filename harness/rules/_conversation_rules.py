"""The rules that read a conversation: what one request wrote and a later one reads.

They read the one cache replay (`Session.replayed`, `harness.cache._replay`): per endpoint, each
request looks up each of its breakpoints on its own (Anthropic and Bedrock: each marker looks
back at most `Lookback.reach` blocks; OpenAI, Gemini and DeepSeek: the longest prefix an entry
was written for), then writes the breakpoints the rules say are written. From it:

- `lookback-exceeded`: a breakpoint whose lookup finds nothing within its reach while an entry
  longer than what the request reads lies further back: that part is written again instead of
  read. Judged per breakpoint: a hit at another breakpoint of the request (the system's) never
  hides it;
- `write-never-read`: a write (an entry at or above the minimum) that no later request of the
  file reads, although the file goes on to that endpoint: its write premium buys nothing (a write
  the next request breaks is the gate's finding, `prefix-broken`, one a later breakpoint could
  not reach is `lookback-exceeded`'s, and one that expired is `ttl-expired`'s).

And from the prefix-chain gate, `prefix-broken` (its verdict word first: `tools_changed`,
`messages_changed`...; an effect the rules do not know for certain, or a compaction, is a
warning), and `unknown-model`: once per model the rules know no minimum for, so the rules that
need one abstain.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.cache._analysis import scope_of
from harness.cache._replay import Lookup
from harness.providers._classify import prewarm
from harness.rules._engine import Finding, Rule, Session, Severity

__all__ = ["LookbackExceeded", "PrefixBroken", "UnknownModel", "WriteNeverRead"]


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
        for conversation in session.replayed:
            if conversation.unknown_model:
                continue  # the minimum decides what was written: unknown-model says so
            for step in conversation.steps:
                read = step.read_from.tokens if step.read_from is not None else 0
                for lookup in step.out_of_reach():
                    entry = lookup.beyond
                    assert entry is not None
                    yield session.finding(
                        self,
                        step.index,
                        f"the breakpoint at {lookup.mark.pointer} is {_distance(lookup)}"
                        f" after the cache entry request {session.offset + entry.owner} wrote at"
                        f" {entry.pointer}; a breakpoint looks back at most {lookup.reach}"
                        f" blocks, so ~{max(entry.tokens - read, 0):,} cached tokens are written"
                        " again instead of read",
                        pointer=lookup.mark.pointer,
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


def _distance(lookup: Lookup) -> str:
    """How far back the entry is, in the provider's positions (and blocks where they differ)."""
    if lookup.blocks in (0, lookup.distance):
        return f"{lookup.distance} blocks"
    return (
        f"{lookup.distance} positions ({lookup.blocks} blocks; a run of parallel tool_use or"
        " tool_result blocks counts as one)"
    )


class WriteNeverRead(Rule):
    name = "write-never-read"
    severity = "warning"
    providers = "any that writes (Anthropic, Bedrock, OpenAI 5.6+ at 1.25x)"
    meaning = (
        "a cache write that no later request of the file reads although the file goes on: the"
        " write premium (1.25x or 2x the input price) buys nothing"
    )
    fix = (
        "move the breakpoint to a place the next request repeats, or remove what changes"
        " before it (a timestamp, a reordered tool)"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        chain = session.chain  # a break the gate reports explains its own unread write
        explained = {item.previous - 1 for item in [*chain.breaks, *chain.warnings]}
        for conversation in session.replayed:
            if conversation.unknown_model:
                continue
            missed = {
                id(lookup.beyond)
                for step in conversation.steps
                for lookup in step.out_of_reach()  # lookback-exceeded's
            }
            expired = {id(entry) for step in conversation.steps for entry in step.expired}
            last = max((step.index for step in conversation.steps), default=-1)
            for entry in conversation.entries:
                if entry.read or entry.owner in explained or entry.owner >= last:
                    continue
                if id(entry) in missed or id(entry) in expired:
                    continue
                warmed = _prewarm(session, entry.owner)
                what = (
                    f"the pre-warm ({warmed}) writes ~{entry.tokens:,} tokens up to"
                    f" {entry.pointer}, which is"
                    if warmed
                    else f"the cache write of ~{entry.tokens:,} tokens up to {entry.pointer} is"
                )
                yield session.finding(
                    self,
                    entry.owner,
                    f"{what} never read by a later request of the file: its write premium buys"
                    " nothing",
                    pointer=entry.pointer,
                )


def _prewarm(session: Session, index: int) -> str | None:
    """The field that makes request `index` a pre-warm (OpenAI's prompt_cache_options.prewarm,
    a rules-pack row's `prewarm` values), or None for an ordinary request."""
    analysis = session.analyses[index] if 0 <= index < len(session.analyses) else None
    if analysis is None:
        return None
    split = analysis.split
    model, surface = scope_of(analysis.request)
    return prewarm(split.provider, {**split.view.settings, **split.bookkeeping}, model, surface)


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
