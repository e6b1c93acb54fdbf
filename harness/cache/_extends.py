"""What "extends" means to the prefix chain: a later request cut to the shape of the earlier
one's prefix, a growing message's text, an opaque body (the markers set aside first:
`harness.cache._markers`).

`cut_like` cuts a later view to the blocks of an earlier prefix, the last block no longer than the
prefix's (the conversation may have grown), and the last message's text to the earlier one's
where it only grew at its end (the cache holds every byte before it: a conversation inlined into
one growing message, DSPy's ReAct). `opaque_cut` is `harness.providers._opaque`'s rule for a
body no provider claims. `message_grew`, `message_edited`, `message_text`, `head_of` and
`words_of` serve the gate's rules on one-message conversations (a growing message, one whose
middle was edited; a head whose words moved).
"""

from __future__ import annotations

import re
from typing import Any, Final

from harness._shared._views import CacheView, common_prefix, encode_json
from harness.providers._base import role
from harness.providers._opaque import BODY, extends

__all__ = [
    "cut_like",
    "head_of",
    "message_edited",
    "message_grew",
    "message_text",
    "opaque_cut",
    "text_grew",
    "words_of",
]

# The start a growing message must share with the earlier one for an insertion to count.
_SHARED: Final = 16


# A growing message whose first line was rewritten still continues when the rest of it, this
# long at least, is found again in the later message.
_REWRITTEN_REST: Final = 64


def message_grew(a: Any, b: Any) -> bool:
    """Whether message `b` continues message `a` as one growing message (DSPy's ReAct): its text
    grew from `a`'s (`text_grew`: more at the end, or inserted before a kept tail), or holds all
    of `a`'s text but its first line (a rewritten start: the gate judges it, and it breaks)."""
    if role(a) != role(b):
        return False
    text_a, text_b = message_text(a), message_text(b)
    if text_a is None or text_b is None or len(text_b) <= len(text_a):
        return False
    if text_grew(text_a, text_b, inserted=True):
        return True
    rest = text_a.partition("\n")[2]
    return len(rest) >= _REWRITTEN_REST and rest in text_b


def message_edited(a: Any, b: Any) -> bool:
    """Whether message `b` continues message `a` as one growing message whose middle was edited
    (a step rewritten, an observation rendered anew, a step dropped) before a new step was
    added: `b` is longer, starts with `a`'s opening (its first paragraph: DSPy's question) and
    `_SHARED` characters or more, then differs, and still holds the last `_REWRITTEN_REST`
    characters of what `a` has before the end both share. A new question differs within its
    opening. An edit in `a`'s opening (the rewritten start `message_grew` takes), in its last
    step, or in a message too short to keep that much is not told from a new question."""
    if role(a) != role(b):
        return False
    text_a, text_b = message_text(a), message_text(b)
    if text_a is None or text_b is None or len(text_b) <= len(text_a):
        return False
    start = common_prefix(text_a, text_b)
    if start < max(_SHARED, _opening(text_a)):
        return False
    rest_a, rest_b = text_a[start:], text_b[start:]
    end = common_prefix(rest_a[::-1], rest_b[::-1])
    middle_a, middle_b = rest_a[: len(rest_a) - end], rest_b[: len(rest_b) - end]
    kept = middle_a[-_REWRITTEN_REST:]
    return len(kept) == _REWRITTEN_REST and kept in middle_b


def _opening(text: str) -> int:
    """How long a growing message's opening is: its first paragraph (DSPy's first input field,
    `[[ ## question ## ]]` and the question), else its first line."""
    for mark in ("\n\n", "\n"):
        found = text.find(mark)
        if found >= 0:
            return found + len(mark)
    return len(text)


def head_of(view: CacheView, conversation: tuple[str, ...]) -> bytes:
    """What comes before the conversation: the settings and every other block, encoded."""
    blocks = {k: v for k, v in view.blocks.items() if k not in conversation}
    return encode_json({"settings": view.settings, **blocks})


def words_of(encoded: bytes) -> list[bytes]:
    """The words of an encoding, sorted: two heads that hold the same words in another order
    (tools moved, however a prompt lists them: `['search', 'lookup']`, `search; lookup`,
    numbered lines) have the same."""
    return sorted(word for word in re.split(rb"[^A-Za-z0-9_]+", encoded) if word)


def message_text(message: Any) -> str | None:
    """A message's text when it is one text: its `content` string, or its one text part (Gemini's
    `parts`, a content list of one block); a bare string is its own text. A message of several
    blocks has none here (a conversation that adds blocks is not one growing text)."""
    if isinstance(message, str):
        return message
    if not isinstance(message, dict):
        return None
    content = message.get("content", message.get("parts"))
    if isinstance(content, str):
        return content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if isinstance(text, str) else None
    return None


def opaque_cut(prefix: CacheView, view: CacheView) -> CacheView:
    """An opaque body cut to the earlier one's shape where it may have grown (`_opaque`)."""
    if BODY not in prefix.blocks or BODY not in view.blocks:
        return view
    body = extends(prefix.blocks[BODY], view.blocks[BODY])
    return CacheView(settings=view.settings, blocks={BODY: body}, provider=view.provider)


def cut_like(
    prefix: CacheView,
    view: CacheView,
    *,
    cut_content: bool,
    grows: bool = True,
    text: bool = True,
) -> CacheView:
    """`view` cut to the shape of `prefix`: its blocks, and when the last one `grows` (the
    conversation, or the block a breakpoint cut the prefix in) and is a list, that list no longer
    than prefix's. A string is never cut: a system prompt that gained text is not the earlier one
    followed by more turns (defect 3, issue 24); a growing message's text is judged inside the
    conversation list (`_grown_text`), and only where the provider caches an exact prefix of the
    prompt (`text`): a provider that keys its cache by content block (Anthropic, Bedrock) loses
    the entry of a block whose text grew, so there it is a change like any other."""
    blocks: dict[str, Any] = {}
    names = list(prefix.blocks)
    order = list(view.blocks)
    shared = [name for name in order if name in prefix.blocks]
    # a block the prefix lacks that comes before the prefix's end (tools added mid-conversation,
    # a response format) is kept, so it is seen as the change it is; only what follows is cut
    through = order.index(shared[-1]) + 1 if shared else 0
    for name in order[:through]:
        if name not in prefix.blocks:
            blocks[name] = view.blocks[name]
            continue
        value, shape = view.blocks[name], prefix.blocks[name]
        last = grows and name == names[-1]
        if last and isinstance(value, list) and isinstance(shape, list):
            value = value[: len(shape)]
            if cut_content and value and shape:
                value = [*value[:-1], _cut_message(value[-1], shape[-1])]
            if text and value and shape and len(value) == len(shape):
                grown = _grown_text(value[-1], shape[-1], inserted=len(shape) == 1)
                value = [*value[:-1], grown]
        blocks[name] = value
    return CacheView(settings=view.settings, blocks=blocks, provider=view.provider)


def text_grew(old: str, new: str, *, inserted: bool) -> bool:
    """Whether `new` is `old` grown: `old` then more (the cache holds all of `old`), or, when
    `inserted`, `old` with text inserted after a shared start of `_SHARED` characters or more and
    its tail kept at the end (DSPy's ReAct adds each step to the trajectory before a fixed
    instruction tail: the cache holds everything up to the insertion; only that tail, the same
    every step and bounded, is read again)."""
    if new.startswith(old):
        return True
    if not inserted or len(new) <= len(old):
        return False
    shared = common_prefix(old, new)
    return shared >= _SHARED and new.endswith(old[shared:])


def _grown_text(message: Any, shape: Any, *, inserted: bool) -> Any:
    """The last message cut to the earlier one's text where it only grew (`text_grew`): the
    earlier bytes are all there, the cache holds them."""
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    for key in ("content", "parts"):
        value, cut = message.get(key), shape.get(key)
        if (
            isinstance(value, str)
            and isinstance(cut, str)
            and text_grew(cut, value, inserted=inserted)
        ):
            return {**message, key: cut}
        if isinstance(value, list) and isinstance(cut, list) and value and len(value) == len(cut):
            last, last_cut = value[-1], cut[-1]
            text, text_cut = _member(last, "text"), _member(last_cut, "text")
            texts = isinstance(text, str) and isinstance(text_cut, str)
            if texts and text_grew(text_cut, text, inserted=inserted):
                return {**message, key: [*value[:-1], {**last, "text": text_cut}]}
    return message


def _member(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _cut_message(message: Any, shape: Any) -> Any:
    if not (isinstance(message, dict) and isinstance(shape, dict)):
        return message
    content, cut = message.get("content"), shape.get("content")
    if isinstance(content, list) and isinstance(cut, list) and len(content) > len(cut):
        return {**message, "content": content[: len(cut)]}
    return message
