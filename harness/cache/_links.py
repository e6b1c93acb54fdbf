"""Which request continues which: the conversations of a file, the gate's and the rules' alike.

A provider caches per prefix, not per conversation; but a verdict needs the request a request
continues (the one whose cached prefix it should extend). `walk(items)` links each request, per
endpoint (method, host and path: Gemini and Bedrock carry the model in the path), by the rules
of decision 0008:
- the latest earlier request to the same endpoint whose conversation opens with the same message
  (a conversation is the `messages`, `input` or `contents` block, after the system prompt), so
  two agents that take turns on one endpoint are two chains, not a break at every turn; an
  opening in the API's shorthand (Anthropic's string content) is the same as its long form;
- a request whose conversation is one message no earlier request opened with starts a new
  conversation: it has no history that could have broken;
- a request the provider's server holds the earlier turns of (`RequestSplit.held`: OpenAI's
  `previous_response_id` or `conversation`, Anthropic's server-held message thread) continues
  the latest earlier request to its endpoint;
- any other request continues the latest earlier request to its endpoint (an edited first
  message in a longer history is a break, not a new conversation);
- a conversation inlined into one growing message (DSPy's ReAct: the system prompt and one user
  message holding the trajectory) continues the latest of the recent one-message requests to its
  endpoint whose text it grew from (more at the end, or inserted before a kept tail), or whose
  text it holds all of but the first line (a rewritten start, which then breaks), or, failing
  that, the latest whose head (settings, tools, system) holds the same pieces in another order
  (a tool moved between two steps of one program: DSPy names its tools in the message too); any
  other one-message request starts a new conversation. Before those: a message that edits a
  middle step of the latest one-message request of the same head and adds a step (it keeps that
  request's first line and its latest step, `message_edited`) continues that request, and the
  edit breaks, rather than extending an older step it happens to extend.

Items are anything the gate takes: a captured request (`number`, `split`, `url`, `method`, its
body), a `LintRequest`, a `RequestSplit`, a `CacheView` (taken as exact-prefix, the whole view
being the prefix) or a request body. `Link.request` is the item as a `LintRequest`, made when a
verdict needs to know what the request caches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from harness._shared._views import OPAQUE, CacheView, RequestSplit, encode_json
from harness.cache._analysis import LintRequest
from harness.cache._extends import head_of, message_edited, message_grew, words_of
from harness.cache._markers import strip
from harness.providers import split_request
from harness.providers._opaque import BODY
from harness.providers._registry import provider_named

__all__ = ["CONVERSATION_BLOCKS", "Link", "as_split", "conversation_of", "link_of", "links", "walk"]

# The block that holds the conversation, in each provider's vocabulary.
CONVERSATION_BLOCKS: Final = ("messages", "input", "contents")
# How many earlier one-message requests of an endpoint a growing message may continue (DSPy
# sends another module's request between two steps of a ReAct loop).
_SINGLES: Final = 16


@dataclass
class Link:
    """A request as the links see it: its number, split, endpoint and conversation's opening."""

    item: Any
    number: int
    split: RequestSplit
    endpoint: str
    opening: bytes | None  # the conversation's first message, encoded; None when it has none
    single: bool  # the conversation is one message
    position: int = 0  # 0-based place in the items
    first: Any = None  # the conversation's first message, without markers
    heads: tuple[bytes, list[bytes]] | None = None  # `_heads` and its words, once asked
    _request: LintRequest | None = None

    @property
    def stored(self) -> bool:
        """Whether the provider's server holds the earlier turns (`RequestSplit.held`)."""
        return bool(self.split.held)

    @property
    def request(self) -> LintRequest:
        """The item as a request the cache model analyses (its body, URL, headers, response)."""
        if self._request is None:
            self._request = _as_request(self.item, self.position, self.split)
        return self._request


def walk(items: Sequence[Any]) -> Iterator[tuple[Link | None, Link | None]]:
    """Each item's link (None: no provider recognises it) and the link it continues."""
    latest: dict[str, Link] = {}
    threads: dict[tuple[str, bytes | None], Link] = {}
    singles: dict[str, list[Link]] = {}  # one-message requests, per endpoint, latest last
    for position, item in enumerate(items, start=1):
        link = link_of(item, position)
        if link is None:
            yield None, None
            continue
        key = (link.endpoint, link.opening)
        previous = threads.get(key) if link.opening is not None else None
        if link.stored or (previous is None and not link.single and not _opaque_batch(link)):
            previous = latest.get(link.endpoint)
        elif previous is None and link.single:
            earlier = singles.setdefault(link.endpoint, [])
            previous = _edited(earlier, link)
            if previous is None:
                previous = next((e for e in reversed(earlier) if _grows(e, link)), None)
            if previous is None:
                same = next((e for e in reversed(earlier) if _same_words(e, link)), None)
                if same is not None and _heads(same)[0] != _heads(link)[0]:
                    previous = same  # the latest with the same head, in another order
        yield link, previous
        latest[link.endpoint] = threads[key] = link
        if link.single:
            singles.setdefault(link.endpoint, []).append(link)
            del singles[link.endpoint][:-_SINGLES]


def links(items: Sequence[Any]) -> list[int | None]:
    """For each item (0-based), the item it continues, or None (it starts a conversation, or no
    provider recognises it): what the rules read along a conversation."""
    return [
        None if link is None or previous is None else previous.position
        for link, previous in walk(items)
    ]


def conversation_of(view: CacheView) -> Any:
    """The conversation block of a view (an opaque JSON body's own conversation member)."""
    blocks = view.blocks
    if view.provider == OPAQUE and isinstance(blocks.get(BODY), dict):
        blocks = blocks[BODY]
    return next((blocks[name] for name in CONVERSATION_BLOCKS if name in blocks), None)


def as_split(item: Any) -> RequestSplit | None:
    """An item's split: its own, or its provider's for a body; a bare view is exact-prefix."""
    if isinstance(item, RequestSplit):
        return item
    if isinstance(item, CacheView):
        return RequestSplit(item.provider, item, item, "exact-prefix")
    if isinstance(item, Mapping):
        return split_request(item)
    if hasattr(item, "split"):
        found = item.split
        return found if isinstance(found, RequestSplit) else None
    raise TypeError(f"cannot check the prefix of a {type(item).__name__}")


def link_of(item: Any, position: int) -> Link | None:
    """An item as a link (`position`: its 1-based place), None when no provider claims it."""
    split = as_split(item)
    if split is None:
        return None
    number = getattr(item, "number", position)
    url = getattr(item, "url", None)
    endpoint = split.provider
    if isinstance(url, str):
        parts = urlsplit(url)
        method = getattr(item, "method", "POST")
        endpoint = f"{method} {parts.hostname or ''}{parts.path}"
    conversation = conversation_of(split.view)
    opening: bytes | None = None
    single = False
    first: Any = None
    if isinstance(conversation, list) and conversation:
        first = strip(conversation[0], split.markers)
        opening = encode_json(_long_form(split.provider, first))
        single = len(conversation) == 1
    elif isinstance(conversation, str):
        first = conversation
        opening, single = encode_json(conversation), True
    number = number if isinstance(number, int) else position
    return Link(item, number, split, endpoint, opening, single, position - 1, first)


def _long_form(provider: str, message: Any) -> Any:
    """A message with its content in the long form where the API documents a shorthand."""
    found = provider_named(provider)
    if found is None or not isinstance(message, dict) or "content" not in message:
        return message
    long = found.shorthand(message["content"])
    return message if long is None else {**message, "content": long}


def _as_request(item: Any, position: int, split: RequestSplit) -> LintRequest:
    if isinstance(item, LintRequest):
        return item
    body: Any = item if isinstance(item, Mapping) else getattr(item, "body", None)
    if isinstance(body, bytes | bytearray):
        try:
            body = msgspec.json.decode(body)
        except msgspec.DecodeError:
            body = None
    headers = getattr(item, "headers", ())
    return LintRequest(
        position - 1,
        body if isinstance(body, Mapping) else {},
        url=getattr(item, "url", None),
        headers=tuple(headers) if isinstance(headers, list | tuple) else (),
        method=getattr(item, "method", "POST"),
        time=getattr(item, "time", None),
        response=getattr(item, "response", None),
        split=split,
        presplit=True,
    )


def _opaque_batch(link: Link) -> bool:
    """An opaque body whose `input` is a list of plain values (an embeddings or moderation batch,
    not messages) continues only a request that opened it the same way: a batch whose first item
    is new is another batch, not an edited conversation. Messages (objects) thread as usual, so
    an edited system message in an unknown API's conversation still breaks."""
    return (
        link.split.provider == OPAQUE
        and link.opening is not None
        and not isinstance(link.first, dict)
    )


def _grows(a: Link | None, b: Link) -> bool:
    """Whether `b`, one message, continues `a`, one message, by inlining the conversation into
    that message (DSPy's ReAct): its text grew from `a`'s, or holds all of `a`'s text but its
    first line (a rewritten start: the gate judges it, and it breaks)."""
    return a is not None and a.single and b.single and message_grew(a.first, b.first)


def _edited(earlier: list[Link], link: Link) -> Link | None:
    """The latest earlier one-message request of the same head (the same step of the same
    program) when `link` is it with a middle step edited and a step added (`message_edited`):
    judged against it, not against an older step it happens to extend, so the edit is found."""
    same = next((e for e in reversed(earlier) if _heads(e)[0] == _heads(link)[0]), None)
    if same is not None and link.single and message_edited(same.first, link.first):
        return same
    return None


def _same_words(a: Link, b: Link) -> bool:
    """Whether `a` and `b`, one message each, have heads of the same words (in the same order or
    not). The latest such request before `b` is the one `b` is judged against when its head is
    in another order: the tools or the system prompt's lines moved between two steps of one
    program (DSPy names its tools in the message too, so the message is new as well). A new
    question with the same head, in the same order, is a new conversation."""
    if not (a.single and b.single) or a.split.provider != b.split.provider:
        return False
    (head_a, words_a), (head_b, words_b) = _heads(a), _heads(b)
    return len(head_a) == len(head_b) and words_a == words_b


def _heads(link: Link) -> tuple[bytes, list[bytes]]:
    if link.heads is None:
        head = head_of(link.split.view, CONVERSATION_BLOCKS)
        link.heads = (head, words_of(head))
    return link.heads
