"""What one request caches under the rules pack: its breakpoints, what is written, and why not.

`LintRequest` is a request to judge (a body, and where known its URL, headers, time and the
provider's response); `analyse(request)` reads it against the rows in force
(`harness.providers._pack`): the provider's caching mode, the model's minimum, the breakpoint
limit, the TTLs. The result, an `Analysis`, is what every rule reads and what `harness show` and
`harness diff` say of a request ("caches ~5,210 tokens up to /messages/3/content/0 (5m)",
"nothing is cached: 116 tokens, minimum 4,096 for claude-opus-4-6").

Tokens are estimated (`harness.cache._tokens`): bytes / 4, or scaled by the response's usage
when it counted the request's input tokens. When the response says the provider read from or
wrote to its cache, that is taken as the answer: the rules do not contradict the provider.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final, NamedTuple
from urllib.parse import unquote, urlsplit

import msgspec

from harness._shared._views import RequestSplit
from harness.cache._counters import Counted, count_tokens, counting
from harness.cache._layout import Layout, Mark, layout
from harness.cache._tokens import Estimate, estimate
from harness.providers import CacheUsage, cache_usage, split_request
from harness.providers._anthropic import ANTHROPIC, surface_of
from harness.providers._pack import (
    Breakpoints,
    Caching,
    Lookback,
    Minimum,
    Pack,
    Ttl,
    rules_pack,
)
from harness.providers._registry import provider_named, vocabulary_of

__all__ = ["Analysis", "LintRequest", "Write", "analyse", "model_of", "scope_of"]

_URL_MODEL: Final = re.compile(r"/models?/(?P<model>[^/:]+)(?::|/invoke)")


@dataclass
class LintRequest:
    """One request to judge: its body, and what is known of how it was sent and answered.

    `index` is its 0-based place in its file; `time` and `response` are kept as given (a session
    file's optional fields). It is a prefix-chain item (`number`, `split`, `continues_stored`);
    its split is made from the body unless given (`presplit`: a captured request's own).
    """

    index: int
    body: Mapping[str, Any]
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    method: str = "POST"
    time: Any = None
    response: Any = None
    split: RequestSplit | None = None
    presplit: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not self.presplit:
            self.split = split_request(self.body, url=self.url, headers=self.headers)

    @property
    def number(self) -> int:
        return self.index + 1

    def continues_stored(self) -> bool:
        """Whether the provider's server holds its earlier turns (`RequestSplit.held`)."""
        return self.split is not None and bool(self.split.held)


class Write(NamedTuple):
    """A breakpoint the provider is asked to write: its boundary, TTL, pointer, tokens, and
    whether it is written (within the limit, at or above the minimum)."""

    after: int
    ttl: str
    pointer: str
    tokens: Estimate
    written: bool


def model_of(split: RequestSplit, url: str | None) -> str | None:
    """The model a request names: in its settings, else in its URL (Vertex, Bedrock invoke)."""
    for key in ("model", "modelId"):
        value = split.view.settings.get(key)
        if isinstance(value, str) and value:
            return value
    if url is not None:
        found = _URL_MODEL.search(urlsplit(url).path)
        if found is not None:
            return unquote(found.group("model"))
    return None


@dataclass
class Analysis:
    """One request under the rules (see the module doc)."""

    request: LintRequest
    split: RequestSplit
    pack: Pack
    model: str | None
    surface: str
    layout: Layout
    caching: Caching | None
    usage: CacheUsage | None

    @property
    def provider(self) -> str:
        return self.split.provider

    @cached_property
    def minimum(self) -> Minimum | None:
        return self.pack.first(Minimum, self.provider, self.model, self.surface)

    @property
    def model_known(self) -> bool:
        """False when the provider has minimums per model and none names this one."""
        return self.minimum is not None or not self.pack.has_models(Minimum, self.provider)

    @property
    def held_elsewhere(self) -> str:
        """What of the prompt the request does not carry: a conversation stored on the server
        (OpenAI's `previous_response_id`, `conversation`; Anthropic's message thread) or Gemini's
        explicit `cachedContent`;
        "" when it carries all of it. Its size, and so whether it caches, is not in the request."""
        if self.split.held == "prefix":
            return "a message thread the server holds"
        if self.split.held:
            return "a conversation stored on the server"
        if "cachedContent" in self.request.body:
            return "an explicit cachedContent"
        return ""

    @cached_property
    def mode(self) -> str:
        """OpenAI's `prompt_cache_options.mode` (`implicit` by default); "" for other providers."""
        if self.caching is None or self.caching.mode != "automatic":
            return ""
        value = self.split.view.settings.get("prompt_cache_options.mode", "implicit")
        return value if isinstance(value, str) else "implicit"

    @cached_property
    def limit(self) -> Breakpoints | None:
        for row in self.pack.every(Breakpoints, self.provider, self.model, self.surface):
            if not row.mode or row.mode == self.mode:
                return row
        return None

    @cached_property
    def lookback(self) -> Lookback | None:
        return self.pack.first(Lookback, self.provider, self.model, self.surface)

    @cached_property
    def ttl(self) -> Ttl | None:
        return self.pack.first(Ttl, self.provider, self.model, self.surface)

    @cached_property
    def automatic(self) -> bool:
        """Whether the request asks for automatic caching with a top-level marker."""
        key = self.caching.automatic_marker if self.caching is not None else ""
        return bool(key) and key in self.request.body

    @cached_property
    def marks(self) -> list[Mark]:
        """Every breakpoint the request asks for, in cache order (the automatic one last)."""
        found = list(self.layout.marks)
        if self.automatic and self.caching is not None:
            marker = self.request.body.get(self.caching.automatic_marker)
            ttl = marker.get("ttl") if isinstance(marker, dict) else None
            found.append(
                Mark(
                    len(self.layout.units),
                    ttl if isinstance(ttl, str) else None,
                    "/" + self.caching.automatic_marker,
                    automatic=True,
                )
            )
        return found

    @property
    def counted(self) -> int:
        """The markers that count toward the breakpoint limit."""
        extra = (
            1 if self.automatic and self.limit is not None and self.limit.automatic_counts else 0
        )
        return self.layout.markers + extra

    @property
    def over_limit(self) -> bool:
        """More markers than the API takes, where it refuses such a request."""
        limit = self.limit
        return limit is not None and limit.over_limit == "refused" and self.counted > limit.limit

    @cached_property
    def misplaced(self) -> list[tuple[str, str]]:
        """The markers the API refuses where they stand (the provider's `misplaced`), as (JSON
        pointer, why)."""
        found = provider_named(self.provider)
        return found.misplaced(self.request.body) if found is not None else []

    @cached_property
    def bad_ttls(self) -> list[tuple[Mark, str]]:
        """The breakpoints whose time to live the API refuses for this model: a value it does
        not take at all, or one this model lacks (the `ttl` row in force names the values)."""
        row = self.ttl
        if row is None:
            return []
        return [
            (mark, ", ".join(row.values))
            for mark in self.marks
            if mark.ttl is not None and mark.ttl not in row.values
        ]

    @cached_property
    def ttl_clash(self) -> tuple[Mark, str, str] | None:
        """The top-level automatic marker asking for another time to live than the last
        block's own marker: "If the last block has an explicit cache_control with a different
        TTL, the API returns a 400 error" (Anthropic's prompt-caching page, edge cases): that
        mark, its TTL and the automatic one's."""
        marks = self.marks
        if len(marks) < 2 or not marks[-1].automatic:
            return None
        automatic, last = marks[-1], marks[-2]
        if last.after != automatic.after:
            return None
        default = self.ttl.default if self.ttl is not None else ""
        own, asked = last.ttl or default, automatic.ttl or default
        return (last, own, asked) if own != asked else None

    @cached_property
    def ttl_out_of_order(self) -> tuple[Mark, str, str] | None:
        """The first breakpoint whose time to live is longer than an earlier one's where the
        provider wants longer TTLs first: (that mark, the shorter TTL, where it stands)."""
        row = self.ttl
        if row is None or row.order != "longer-first":
            return None
        rank = {value: place for place, value in enumerate(row.values)}  # 0: the longest
        shortest: tuple[int, str, str] | None = None  # the shortest TTL seen so far
        for mark in self.marks:
            ttl = mark.ttl or row.default
            if ttl not in rank:
                continue
            if shortest is not None and rank[ttl] < shortest[0]:
                return mark, shortest[1], shortest[2]
            if shortest is None or rank[ttl] > shortest[0]:
                shortest = (rank[ttl], ttl, mark.pointer)
        return None

    @property
    def refused(self) -> bool:
        """The API refuses the request: more markers than its limit, a marker where it may not
        stand, a time to live it does not take, or TTLs out of the order it requires."""
        out_of_order = (
            self.ttl_out_of_order is not None
            and self.ttl is not None
            and self.ttl.out_of_order == "refused"
        )
        return (
            self.over_limit
            or bool(self.misplaced)
            or bool(self.bad_ttls)
            or out_of_order
            or self.ttl_clash is not None
        )

    def tokens(self, boundary: int) -> Estimate:
        total = None
        if self.usage is not None:
            total = self.usage.read_tokens + self.usage.written_tokens
            total += self.usage.uncached_tokens or 0
        return estimate(
            self.layout.size(boundary),
            total_size=self.layout.total,
            total_tokens=total,
            counted=lambda: self.tokenized,
        )

    @cached_property
    def tokenized(self) -> Counted | None:
        """The request's prompt tokens by a token counter (a tokenizer, the project's), if any."""
        if not counting(self.provider):
            return None  # no counter: the request's text is not joined for nothing
        text = b"".join(unit.text for unit in self.layout.units)
        return count_tokens(text, self.provider, self.model) if text else None

    @property
    def provider_cached(self) -> bool:
        """The response says the provider read from or wrote to its cache."""
        return self.usage is not None and (self.usage.read_tokens + self.usage.written_tokens) > 0

    @property
    def implicit(self) -> bool:
        """Whether the provider caches this request implicitly as well (automatic caching, not
        OpenAI's explicit mode; where the provider runs it only for a request that marks nothing,
        a request without markers)."""
        caching = self.caching
        if caching is None or caching.mode != "automatic" or self.mode == "explicit":
            return False
        return caching.implicit_when_marked or not self.marks

    @cached_property
    def writes(self) -> list[Write]:
        """The breakpoints the provider is asked to write, each with whether it is written."""
        if self.caching is None or self.refused or self.held_elsewhere:
            return []
        if self.caching.mode == "none":
            return []
        default = self.ttl.default if self.ttl is not None else ""
        ends = len(self.layout.units)
        mode = self.caching.mode
        marks = self.marks
        if mode == "automatic":
            limit = self.limit.limit if self.limit is not None else len(marks)
            marks = marks[-limit:] if limit else []
            if self.implicit and not any(mark.after == ends for mark in marks):
                marks = [*marks, Mark(ends, None, "(the implicit breakpoint)")]
        elif mode in ("implicit", "units"):
            marks = [Mark(ends, None, "(the whole request)")]
        found = []
        minimum = self.minimum.tokens if self.minimum is not None else None
        for mark in marks:
            tokens = self.tokens(mark.after)
            written = mark.after > 0 and (
                mode == "units"
                or self.provider_cached
                or (minimum is not None and tokens.tokens >= minimum)
            )
            found.append(Write(mark.after, mark.ttl or default, mark.pointer, tokens, written))
        return found

    def largest(self) -> Write | None:
        written = [write for write in self.writes if write.written]
        return max(written, key=lambda write: write.after) if written else None

    def describe(self) -> str:
        """Whether and what the request caches, in one sentence."""
        if self.caching is None:
            return f"no rules for {self.provider}: what it caches is not judged"
        if self.caching.mode == "none":
            return (
                f"no provider caching: {self.provider} documents none (the prefix chain still"
                " judges its stability byte for byte)"
            )
        if self.over_limit and self.limit is not None:
            return (
                f"the API refuses this request: {self.counted} breakpoints, at most"
                f" {self.limit.limit} ({self.limit.counts})"
            )
        if self.misplaced:
            pointer, why = self.misplaced[0]
            return f"the API refuses this request: {why} at {pointer}"
        if self.bad_ttls:
            mark, values = self.bad_ttls[0]
            return (
                f"the API refuses this request: a {mark.ttl} time to live at {mark.pointer}"
                f" ({self.model or 'this model'} takes {values})"
            )
        if self.held_elsewhere:
            return f"reads {self.held_elsewhere}: what it caches is not in the request"
        if not self.model_known:
            named = self.model or "a request without a model"
            return f"whether it caches is unknown: the rules know no minimum for {named}"
        largest = self.largest()
        if largest is not None:
            where = f" up to {largest.pointer}" if not largest.pointer.startswith("(") else ""
            ttl = f" ({largest.ttl})" if largest.ttl else ""
            more = sum(write.written for write in self.writes) - 1
            extra = f"; {more} more breakpoint(s) written" if more > 0 else ""
            guarantee = ", no guarantee" if self.caching.mode == "implicit" else ""
            return f"caches ~{largest.tokens.tokens:,} tokens{where}{ttl}{guarantee}{extra}"
        if not self.writes:
            if self.caching.mode == "breakpoints":
                automatic = (
                    f" and no top-level automatic {self.caching.automatic_marker}"
                    if self.caching.automatic_marker
                    else ""
                )
                return f"nothing is cached: no {self.caching.marker} marker{automatic}"
            if self.mode == "explicit":
                return "nothing is cached: explicit mode with no prompt_cache_breakpoint"
            return "nothing is cached"
        return self.below()

    def below(self) -> str:
        """`nothing is cached: N tokens, minimum M for MODEL` for the largest prefix asked."""
        asked = max(self.writes, key=lambda write: write.after)
        minimum = self.minimum.tokens if self.minimum is not None else 0
        return (
            f"nothing is cached: {asked.tokens.tokens:,} tokens, minimum {minimum:,} for"
            f" {self.model} (tokens: {asked.tokens.how})"
        )


def scope_of(request: LintRequest) -> tuple[str | None, str]:
    """The model a request names and the surface it goes to (`claude-api`, `vertex`,
    `bedrock` for Claude's Messages; "" otherwise): what picks the rows in force for it."""
    split = request.split
    if split is None:
        return None, ""
    surface = surface_of(request.body, request.url) if split.provider == ANTHROPIC else ""
    return model_of(split, request.url), surface


def analyse(request: LintRequest, pack: Pack | None = None) -> Analysis | None:
    """`request` under the rules in force; None when no provider recognises it."""
    split = request.split
    if split is None:
        return None
    pack = pack or rules_pack()
    model, surface = scope_of(request)
    caching = pack.first(Caching, split.provider, model, surface)
    markers = (caching.marker,) if caching is not None and caching.marker else split.markers
    words = vocabulary_of(split.provider, model, surface)
    return Analysis(
        request=request,
        split=split,
        pack=pack,
        model=model,
        surface=surface,
        layout=layout(split, markers, words),
        caching=caching,
        usage=_usage(split.provider, request.response),
    )


def _usage(provider: str, response: Any) -> CacheUsage | None:
    """The provider's counters in a response (a JSON body, or a stream's events as a list)."""
    values = response if isinstance(response, list) else [response]
    best: CacheUsage | None = None
    output: int | None = None  # a stream counts its output as it goes (Anthropic's message_delta)
    for value in values:
        for candidate in (value, _member(value, "message"), _member(value, "response")):
            if not isinstance(candidate, dict):
                continue
            found = cache_usage(provider, candidate)
            if found is not None and (best is None or _total(found) > _total(best)):
                best = found
            if found is not None and found.output_tokens is not None:
                output = max(output or 0, found.output_tokens)
    if best is None or _total(best) == 0:
        return None
    return best if output is None else msgspec.structs.replace(best, output_tokens=output)


def _total(usage: CacheUsage) -> int:
    return usage.read_tokens + usage.written_tokens + (usage.uncached_tokens or 0)


def _member(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None
