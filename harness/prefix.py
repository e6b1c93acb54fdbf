"""The prefix-chain gate: each request of a conversation must extend the previous one's prefix.

A provider caches the prefix it saw; the next request of the same conversation hits that cache
only if it starts with the same bytes, in that provider's cache order. `check_prefix_chain`
walks consecutive requests and returns every break, each with its drift report (verdict, place,
tool, cost); `PrefixBroken` raises them as a test failure.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness.drift import DriftReport, compare
from harness.drift.wording import BYTES_PER_TOKEN
from harness.errors import Drift
from harness.providers import split_request
from harness.views import CacheView, RequestSplit, prompt_size

__all__ = ["ChainItem", "PrefixBreak", "PrefixBroken", "check_prefix_chain"]


@runtime_checkable
class ChainItem(Protocol):
    """A request with its number in a conversation (a captured request is one)."""

    number: int
    split: RequestSplit | None

    def continues_stored(self) -> bool:
        """Whether it continues a conversation stored on the server (its prefix lives there)."""
        ...


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

    @property
    def tokens_lost(self) -> int:
        return self.bytes_lost // BYTES_PER_TOKEN

    def to_text(self) -> str:
        head = (
            f"request {self.index} does not extend request {self.previous}'s cacheable prefix:"
            f" the {self.block} block broke first; {self.bytes_lost:,} of {self.prefix_bytes:,}"
            f" prefix bytes lost (~{self.tokens_lost:,} tokens, bytes / {BYTES_PER_TOKEN})"
        )
        return f"{head}\n{self.report.to_text()}"


def check_prefix_chain(items: Sequence[Any]) -> list[PrefixBreak]:
    """Each request must extend the previous one's cacheable prefix; the breaks, in order.

    `items` are captured requests, `RequestSplit`s, `CacheView`s (taken as exact-prefix, the whole
    view being the prefix) or request bodies; unrecognised requests are skipped. "Extends" means:
    the same settings, every prefix block before the last one equal, and the last prefix block a
    prefix of the next request's (messages: the previous messages, then more). Cache markers the
    provider names (`RequestSplit.markers`: Anthropic's `cache_control`) are ignored in the
    comparison, since moving the breakpoint forward is how a conversation keeps its cache, and
    the last message is cut at the marked content block. A Responses request that continues a
    stored response (`previous_response_id`, `conversation`) is not judged: its prefix lives on
    the server.
    """
    numbered: list[tuple[int, RequestSplit, bool]] = []
    for position, item in enumerate(items, start=1):
        split, stored = _as_split(item)
        if split is not None:
            number = item.number if isinstance(item, ChainItem) else position
            numbered.append((number, split, stored))
    breaks: list[PrefixBreak] = []
    for (number_a, a, _), (number_b, b, stored) in itertools.pairwise(numbered):
        if stored:
            continue
        prefix = a.prefix
        candidate = _cut_like(prefix, b.view, cut_content=bool(a.markers))
        if a.markers:
            prefix, candidate = _unmarked(prefix, a.markers), _unmarked(candidate, a.markers)
        report = compare(
            prefix,
            candidate,
            label_a=f"request {number_a} (cacheable prefix)",
            label_b=f"request {number_b}",
        )
        if report.identical:
            continue
        size = prompt_size(prefix)
        kept = min(report.prefix_bytes_kept, size)
        breaks.append(
            PrefixBreak(
                index=number_b,
                previous=number_a,
                block=report.block or "settings",
                report=report,
                prefix_bytes=size,
                bytes_lost=size - kept,
            )
        )
    return breaks


def _as_split(item: Any) -> tuple[RequestSplit | None, bool]:
    if isinstance(item, ChainItem):
        return item.split, item.continues_stored()
    if isinstance(item, RequestSplit):
        return item, False
    if isinstance(item, CacheView):
        return RequestSplit(item.provider, item, item, "exact-prefix"), False
    if isinstance(item, Mapping):
        stored = "previous_response_id" in item or "conversation" in item
        return split_request(item), stored
    raise TypeError(f"cannot check the prefix of a {type(item).__name__}")


def _cut_like(prefix: CacheView, view: CacheView, *, cut_content: bool) -> CacheView:
    """`view` cut to the shape of `prefix`: its blocks, the last one no longer than prefix's."""
    blocks: dict[str, Any] = {}
    names = list(prefix.blocks)
    for position, name in enumerate(names):
        if name not in view.blocks:
            continue
        value, shape = view.blocks[name], prefix.blocks[name]
        if position == len(names) - 1:
            if isinstance(value, list) and isinstance(shape, list):
                value = value[: len(shape)]
                if cut_content and value and shape:
                    value = [*value[:-1], _cut_message(value[-1], shape[-1])]
            elif isinstance(value, str) and isinstance(shape, str):
                value = value[: len(shape)]
        blocks[name] = value
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def _cut_message(message: Any, shape: Any) -> Any:
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    content, cut = message.get("content"), shape.get("content")
    if isinstance(content, list) and isinstance(cut, list) and len(content) > len(cut):
        return {**message, "content": content[: len(cut)]}
    return message


def _unmarked(view: CacheView, markers: tuple[str, ...]) -> CacheView:
    blocks = {name: _strip_markers(value, markers) for name, value in view.blocks.items()}
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def _strip_markers(value: Any, markers: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: _strip_markers(v, markers) for k, v in value.items() if k not in markers}
    if isinstance(value, list):
        return [_strip_markers(item, markers) for item in value]
    return value
