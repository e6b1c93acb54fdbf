"""The rules on what the API refuses outright: a cache marker where it may not stand, a time to
live it does not take.

- `misplaced-breakpoint`: a cache marker the provider's API rejects where it stands (Bedrock
  Converse: a cache point nested inside a tool result's or a document's content, one with no
  content before it in its list, one right after a reasoning block: `Provider.misplaced`);
- `ttl-unsupported`: a breakpoint whose time to live the API does not take (a value it rejects,
  or `1h` on a model without it: the `ttl` row in force for the model names the values), or
  Anthropic's top-level automatic `cache_control` asking for another TTL than the last block's
  own marker.

Both are errors: the request fails with a 400, so nothing is cached and nothing is answered
(`too-many-breakpoints` and `ttl-order`, where the API refuses, are the others). A request the
API refuses writes nothing in the cache model, so no other rule counts what it would cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.rules._engine import Finding, Rule, Session

__all__ = ["MisplacedBreakpoint", "TtlUnsupported"]


class MisplacedBreakpoint(Rule):
    name = "misplaced-breakpoint"
    severity = "error"
    providers = "Bedrock (cache points)"
    meaning = (
        "a cache marker where the API refuses it: a Bedrock cache point nested inside a tool"
        " result or document, with no content before it in its list, or right after a reasoning"
        " block (the request fails)"
    )
    fix = (
        "put the cache point as a block of its own after the content it marks, in the message's"
        " content, the system list or the tool list"
    )

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            for pointer, why in analysis.misplaced:
                yield session.finding(
                    self,
                    analysis.request.index,
                    f"{why} at {pointer}: the API refuses the request",
                    pointer=pointer,
                )


class TtlUnsupported(Rule):
    name = "ttl-unsupported"
    severity = "error"
    providers = "Anthropic, Bedrock (per model), OpenAI"
    meaning = (
        "a breakpoint asks for a time to live the API does not take for the model (a value it"
        " rejects, or 1h on a model without it): the request fails"
    )
    fix = "use a TTL the model takes (harness rules lists them), or the default"

    def check(self, session: Session) -> Iterable[Finding]:
        for analysis in session.analysed():
            for mark, values in analysis.bad_ttls:
                model = analysis.model or "this model"
                yield session.finding(
                    self,
                    analysis.request.index,
                    f"a {mark.ttl} time to live at {mark.pointer}: {model} takes {values};"
                    " the API refuses the request",
                    pointer=mark.pointer,
                )
            clash = analysis.ttl_clash
            if clash is not None:
                mark, own, asked = clash
                yield session.finding(
                    self,
                    analysis.request.index,
                    f"the top-level automatic cache_control asks for {asked} where the last"
                    f" block's own marker at {mark.pointer} says {own}: the API refuses the"
                    " request (the same TTL, or no marker on the last block, is accepted)",
                    pointer=mark.pointer,
                )
