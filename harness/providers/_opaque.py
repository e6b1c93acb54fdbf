"""A request on a captured host that no provider claims: judged as opaque bytes, whole.

A capture session intercepts a host because some provider answers on it or the project said so
(`hosts`, `local_hosts`); a body no provider recognises there (an API the harness has no provider
for, a local server's own route) is still gated: its split has the provider `OPAQUE` and one block,
`body`, the whole request, and the prefix chain asks of it what a byte-prefix cache asks: that a
later request extend the earlier one.

A body sent as an upload (multipart, octet-stream, audio, image, video) is no prompt and is not
judged (counted as a request no provider claims). Bytes first: a body that is not JSON is its text
(UTF-8, or one character per byte when it is not UTF-8, so a prefix of the text is a prefix of the
bytes), and a later body extends it when it starts with it. A JSON body is read as its parsed
value, because its bytes close every list and object it opens: a conversation that grows by a
message changes the earlier body's last bytes (`]}`) although the provider's cache, which reads the
prompt as it comes, still holds everything before them. So a later JSON body extends an earlier one
when every member is the same except that a list may grow at its end and a text in a list's last
item (a growing message) may grow: `extended_like` cuts the later body to the earlier one's shape,
and what is left must be equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from harness._shared._views import OPAQUE, CacheView, RequestSplit

__all__ = ["BODY", "extended_like", "extends", "opaque_split", "prompt_like"]

BODY: Final = "body"
# Bodies that are no prompt: uploads (a multipart boundary is new every request), audio, images.
_NOT_PROMPTS: Final = ("multipart/", "application/octet-stream", "audio/", "image/", "video/")


def prompt_like(headers: Sequence[tuple[str, str]]) -> bool:
    """Whether a body sent with `headers` may be a prompt: JSON, text, or no content type; an
    upload (multipart, octet-stream, audio, image, video) is not judged."""
    kind = next((value.lower() for name, value in headers if name.lower() == "content-type"), "")
    return not kind.strip().startswith(_NOT_PROMPTS)


def extends(shape: Any, value: Any) -> Any:
    """`extended_like` from the top of a body: a text body may grow at its end."""
    return extended_like(shape, value, last=isinstance(shape, str))


def opaque_split(body: bytes) -> RequestSplit:
    """The split of a body no provider claims: one block, the whole body."""
    value: Any
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError:
        try:
            value = body.decode("utf-8")
        except UnicodeDecodeError:
            value = body.decode("latin-1")
    view = CacheView(settings={}, blocks={BODY: value}, provider=OPAQUE)
    return RequestSplit(OPAQUE, view, view, "exact-prefix")


def extended_like(shape: Any, value: Any, *, last: bool = False) -> Any:
    """`value` cut to the shape of `shape` where it may have grown: a list to `shape`'s length
    (its last item cut in turn), a text within a list's last item (`last`) to `shape`'s length
    when it starts with it; a text body (`shape` a text at the top) likewise. Equal to `shape`
    exactly when `value` extends it."""
    if isinstance(shape, dict) and isinstance(value, dict):
        return {
            key: extended_like(shape[key], item, last=last) if key in shape else item
            for key, item in value.items()
        }
    if isinstance(shape, list) and isinstance(value, list):
        if len(value) < len(shape) or not shape:
            return value
        cut = value[: len(shape)]
        return [*cut[:-1], extended_like(shape[-1], cut[-1], last=True)]
    if last and isinstance(shape, str) and isinstance(value, str):
        return value[: len(shape)] if value.startswith(shape) else value
    return value
