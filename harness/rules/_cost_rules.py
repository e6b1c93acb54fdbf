"""The rules that read the cost model (`harness.cost`): time, and the provider's own word.

- `ttl-expired`: a request whose prefix was cached, but longer ago than the entry's TTL (the
  gap between the last request that wrote or read it and this one's start, from the recorded
  times): the entry expired, so the request pays a write instead of a read. Its near miss, a gap
  within the TTL (or a read between that refreshes it), is silent.
- `provider-disagrees`: the recorded counters or miss reason contradict the harness's verdict:
  the provider reports a miss reason (`tools_changed`) where the prefix-chain gate finds the
  prefix extended (or names another word than the gate's), or its recorded cache-read tokens
  differ from the simulation's by more than the tolerance (10% of the larger, and at least 128
  tokens: OpenAI caches in 128-token steps). A request without counters is not judged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from harness.cache._replay import Conversation, ttl_seconds
from harness.rules._engine import Finding, Rule, Session

__all__ = ["ProviderDisagrees", "TtlExpired", "simulated"]

TOLERANCE: Final = 0.10
STEP_TOKENS: Final = 128


def simulated(session: Session) -> list[Conversation]:
    """The session's conversations: the one cache replay, made once per session."""
    return session.replayed


def _duration(seconds: float) -> str:
    whole = round(seconds)
    if whole >= 3600:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


class TtlExpired(Rule):
    name = "ttl-expired"
    severity = "warning"
    providers = "any with a TTL in the rules pack (Anthropic, Bedrock 5m/1h; OpenAI 30m/12h)"
    meaning = (
        "the gap before a request is longer than its cached prefix's TTL: the entry expired,"
        " so the request pays a write instead of a read"
    )
    fix = (
        "ask for a longer TTL (cache_control ttl 1h) where turns are minutes apart, or keep the"
        " entry warm; a gap is the recording's, so check it is the user's and not a slow tool"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        for conversation in simulated(session):
            for step in conversation.steps:
                if not step.expired or step.timing.start is None:
                    continue
                entry = max(step.expired, key=lambda e: e.after)
                if step.read_from is not None and step.read_from.after >= entry.after:
                    continue
                seconds = ttl_seconds(entry.ttl) or 0.0
                touched = (entry.expires_at or 0.0) - seconds
                gap = step.timing.start - touched
                lost = entry.tokens - (step.read_from.tokens if step.read_from else 0)
                yield session.finding(
                    self,
                    step.index,
                    f"starts {_duration(gap)} after the cache entry up to {entry.pointer}"
                    f" (written by request {session.offset + entry.owner}) was last written or"
                    f" read; its TTL is {entry.ttl}, so ~{lost:,} tokens are written again"
                    " instead of read",
                    pointer=entry.pointer if entry.pointer.startswith("/") else "",
                )


class ProviderDisagrees(Rule):
    name = "provider-disagrees"
    severity = "warning"
    providers = "any whose responses carry cache counters (all five)"
    meaning = (
        "the provider's recorded counters or miss reason contradict the harness's verdict (a"
        " miss reason where the prefix extended, or recorded reads far from the predicted ones)"
    )
    fix = (
        "read the message: a provider-side eviction or routing miss is not the code's; a"
        " verdict the provider contradicts is worth a bug report (with the recording)"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        chain = session.chain
        verdicts = {
            item.index - 1: item.report.verdict or "" for item in [*chain.breaks, *chain.warnings]
        }
        for conversation in simulated(session):
            for step in conversation.steps:
                usage = step.recorded
                if usage is None or step.held:
                    continue
                index = step.index
                reason = usage.miss_reason
                continued = 0 <= index < len(session.links) and session.links[index] is not None
                if reason and continued and index not in verdicts:
                    previous = session.offset + (session.links[index] or 0)
                    yield session.finding(
                        self,
                        index,
                        f"the provider reports {reason}, but the harness finds the prefix of"
                        f" request {previous} extended: a provider-side miss (eviction, routing)"
                        " or a change the harness does not see",
                    )
                    continue
                if reason and index in verdicts and verdicts[index] and reason != verdicts[index]:
                    yield session.finding(
                        self,
                        index,
                        f"the provider reports {reason}; the harness says {verdicts[index]}",
                    )
                    continue
                predicted, recorded = step.read, usage.read_tokens
                allowed = max(TOLERANCE * max(predicted, recorded), STEP_TOKENS)
                if abs(predicted - recorded) > allowed:
                    yield session.finding(
                        self,
                        index,
                        f"the provider read {recorded:,} tokens from its cache; the harness"
                        f" predicted {predicted:,} (tokens: {conversation.tokens_how};"
                        f" tolerance {allowed:,.0f})",
                    )
