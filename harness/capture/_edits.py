"""What a recorded request adds to the one it extends: the edits of cassette format 3.

A conversation's requests repeat everything before them, so a cassette that stores every body
whole grows with the square of the conversation. Format 3 stores a request that extends an
earlier one as that request's number (`extends`) and the `Edit`s that turn its body into this
one, each at a JSON pointer (RFC 6901) and each readable on its own:

- `{"at": "/messages", "keep": 12, "add": [...]}`: the array there keeps its first 12 items,
  then gains these (a turn: the new messages, in full);
- `{"at": "/system", "value": "..."}`: the value there is replaced (`"at": ""` is the whole
  body), or, when the object there has no such member, added at its end;
- `{"at": "/messages/11/content/0/cache_control", "remove": true}`: that member is removed (a
  cache marker moved off the previous last message);
- `{"at": "/messages/0/content", "keep": 9000, "text": "...", "tail": 40}`: the string there
  keeps its first 9000 characters, then this text, then its last 40 (a message that grows,
  DSPy's ReAct).

`edits_between(base, new)` finds them, `apply_edits(base, edits)` rebuilds the body. The rebuilt
value shares every unchanged part with its base (a copy is made only along the paths an edit
touches), so the requests of a conversation held in memory share their messages too. The
cassette writer (`harness.capture._cassette`) keeps an edit only when the rebuilt body encodes
to exactly the bytes sent, so rebuilding is byte for byte by construction.

A secret never hides between two edits: the file's bytes are what the secret scan reads, so a
string is cut only at whitespace at least `_REACH` characters away from where it changed (every
key-shaped string is shorter: it lies whole in one stored piece, as it would in a whole body),
and strings shorter than `_LONG` are never cut.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

__all__ = ["Edit", "apply_edits", "edits_between"]

_REACH: Final = 1024  # characters kept around a change in a cut string (> any key shape)
_LONG: Final = 4 * _REACH  # shorter strings are replaced whole
_SEAM_SEARCH: Final = 4096  # how far to look for whitespace to cut at
_CHANGED_ITEMS: Final = 2  # array items edited in place after the kept ones (a moved marker)

_encode = msgspec.json.Encoder().encode


class Edit(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """One change to the body a request extends, at the JSON pointer `at` (see the module doc):
    `value`; or `remove`; or `keep` and `add` (an array); or `keep`, `text` and `tail` (a
    string)."""

    at: str = ""
    value: Any | msgspec.UnsetType = msgspec.UNSET
    remove: bool | msgspec.UnsetType = msgspec.UNSET
    keep: int | msgspec.UnsetType = msgspec.UNSET
    add: list[Any] | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    tail: int | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        given = frozenset(
            name
            for name in ("value", "remove", "keep", "add", "text", "tail")
            if getattr(self, name) is not msgspec.UNSET
        )
        if given not in _SHAPES:
            raise ValueError(
                f"an edit at {self.at!r} holds {', '.join(sorted(given)) or 'nothing'};"
                ' expected "value", "remove", "keep" and "add", or "keep", "text" and "tail"'
            )
        if self.remove is False or (self.remove is True and not self.at):
            raise ValueError(f'an edit at {self.at!r} has "remove" but removes nothing')
        for name in ("keep", "tail"):
            number = getattr(self, name)
            if isinstance(number, int) and number < 0:
                raise ValueError(f"an edit at {self.at!r} has a negative {name!r}")


_SHAPES: Final = (
    frozenset({"value"}),
    frozenset({"remove"}),
    frozenset({"keep", "add"}),
    frozenset({"keep", "text", "tail"}),
)


# -- rebuilding ---------------------------------------------------------------------------------


def apply_edits(base: Any, edits: Sequence[Edit]) -> Any:
    """`base` with `edits` applied in order; `base` is never changed (the result shares what the
    edits leave alone). A `ValueError` says which edit does not fit."""
    owned: dict[int, Any] = {}  # containers made for this result (kept alive): edited in place
    root = base
    for edit in edits:
        try:
            tokens = _tokens(edit.at)
            root = _edited(root, tokens, edit, owned)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ValueError(
                f"the edit at {edit.at!r} does not fit the body it extends: {error}"
            ) from None
    return root


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError("a JSON pointer starts with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _edited(node: Any, tokens: list[str], edit: Edit, owned: dict[int, Any]) -> Any:
    if not tokens:
        return _changed(node, edit, owned)
    token, rest = tokens[0], tokens[1:]
    if isinstance(node, dict):
        member = not rest and (edit.remove is True or token not in node)
        if token not in node and not (member and edit.remove is not True):
            raise KeyError(f"no member {token!r}")
        copy = node if id(node) in owned else _own(dict(node), owned)
        if not member:
            copy[token] = _edited(node[token], rest, edit, owned)
        elif edit.remove is True:
            del copy[token]
        elif isinstance(edit.value, msgspec.UnsetType):
            raise KeyError(f"no member {token!r}")
        else:
            copy[token] = edit.value  # a new member goes at the end, as JSON objects keep order
        return copy
    if isinstance(node, list):
        index = _index(token, len(node))
        copy = node if id(node) in owned else _own(list(node), owned)
        copy[index] = _edited(node[index], rest, edit, owned)
        return copy
    raise TypeError(f"{token!r} points into a {type(node).__name__}")


def _index(token: str, size: int) -> int:
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise ValueError(f"{token!r} is not an array index")
    index = int(token)
    if index >= size:
        raise IndexError(f"index {index} is past the array's {size} items")
    return index


def _own(container: Any, owned: dict[int, Any]) -> Any:
    owned[id(container)] = container
    return container


def _changed(node: Any, edit: Edit, owned: dict[int, Any]) -> Any:
    if edit.remove is True:
        raise TypeError("only a member of an object can be removed")
    if not isinstance(edit.value, msgspec.UnsetType):
        return edit.value
    keep = edit.keep if isinstance(edit.keep, int) else 0
    if isinstance(edit.add, list):
        if not isinstance(node, list):
            raise TypeError(f"keeps items of a {type(node).__name__}, not an array")
        if keep > len(node):
            raise IndexError(f"keeps {keep} items of an array of {len(node)}")
        return _own([*node[:keep], *edit.add], owned)
    tail = edit.tail if isinstance(edit.tail, int) else 0
    if not isinstance(node, str):
        raise TypeError(f"cuts a {type(node).__name__}, not a string")
    if keep + tail > len(node):
        raise IndexError(f"keeps {keep} + {tail} characters of a string of {len(node)}")
    assert isinstance(edit.text, str)
    return node[:keep] + edit.text + node[len(node) - tail :]


# -- finding the edits --------------------------------------------------------------------------


def edits_between(base: Any, new: Any) -> list[Edit]:
    """Edits that turn `base` into a value encoding like `new` (compared by their encodings, as
    the wire does: `1` and `1.0` differ, and so do two dicts with their keys in another order)."""
    found: list[Edit] = []
    _diff(base, new, "", found)
    return found


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, str):
        return bool(a == b)
    return _encode(a) == _encode(b)


def _diff(a: Any, b: Any, at: str, found: list[Edit]) -> None:
    if a is b:
        return
    if type(a) is dict and type(b) is dict and _members_kept(a, b):
        for key in a:
            if key not in b:
                found.append(Edit(at=f"{at}/{_escape(key)}", remove=True))
        for key, value in b.items():
            if key in a:
                _diff(a[key], value, f"{at}/{_escape(key)}", found)
            else:
                found.append(Edit(at=f"{at}/{_escape(key)}", value=value))
        return
    if type(a) is list and type(b) is list:
        _diff_array(a, b, at, found)
        return
    if _same(a, b):
        return
    if type(a) is str and type(b) is str:
        cut = _cut(a, b, at)
        if cut is not None:
            found.append(cut)
            return
    found.append(Edit(at=at, value=b))


def _members_kept(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether `b`'s keys are `a`'s in their order, less some, then new ones at the end (what
    removals and additions of members give)."""
    kept = [key for key in b if key in a]
    return kept == [key for key in a if key in b] and all(key in a for key in list(b)[: len(kept)])


def _diff_array(a: list[Any], b: list[Any], at: str, found: list[Edit]) -> None:
    both = min(len(a), len(b))
    kept = _same_items(a, b, both)
    if kept == len(a) == len(b):
        return
    if both - kept > _CHANGED_ITEMS:  # rewritten, not extended: keep what is the same
        found.append(Edit(at=at, keep=kept, add=b[kept:]))
        return
    inner: list[Edit] = []
    for index in range(kept, both):  # the last item or two of the base, edited (a moved marker)
        _diff(a[index], b[index], f"{at}/{index}", inner)
    if len(b) != len(a):
        found.append(Edit(at=at, keep=both, add=b[both:]))
    found += inner


def _same_items(a: list[Any], b: list[Any], limit: int) -> int:
    """How many first items `a` and `b` share (by encoding), at most `limit`: whole slices are
    encoded and compared, halving, so a long conversation costs a few encodings of its messages,
    not one call per message."""
    if all(map(operator.is_, a[:limit], b[:limit])):
        return limit
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if _encode(a[low:middle]) == _encode(b[low:middle]):
            low = middle
        else:
            high = middle - 1
    return low


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _cut(a: str, b: str, at: str) -> Edit | None:
    """`b` as `a`'s start, new text and `a`'s end, cut at whitespace far from the change."""
    if len(b) < _LONG or len(a) < _LONG:
        return None
    start = _common_prefix(a, b, min(len(a), len(b)))
    end = _common_prefix(a[::-1], b[::-1], min(len(a), len(b)) - start)
    keep = _seam_before(b, start - _REACH)
    stop = _seam_after(b, len(b) - end + _REACH)
    if keep is None or stop is None:
        return None
    text = b[keep:stop]
    if len(text) + 64 >= len(b):
        return None
    return Edit(at=at, keep=keep, text=text, tail=len(b) - stop)


def _common_prefix(a: str, b: str, limit: int) -> int:
    """How many first characters `a` and `b` share, at most `limit` (slices compared in C)."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _seam_before(text: str, position: int) -> int | None:
    """The last place at or before `position` just after whitespace (0 at the start), within
    `_SEAM_SEARCH` characters; None when there is none."""
    if position <= 0:
        return 0
    found = _last_of(text.rfind, max(position - _SEAM_SEARCH, 0), position)
    return None if found < 0 else found + 1


def _seam_after(text: str, position: int) -> int | None:
    """The first place at or after `position` where whitespace starts (the end of the string),
    within `_SEAM_SEARCH` characters; None when there is none."""
    if position >= len(text):
        return len(text)
    found = _first_of(text.find, position, min(position + _SEAM_SEARCH, len(text)))
    return None if found < 0 else found


_WHITESPACE: Final = (" ", "\n", "\t", "\r")


def _last_of(rfind: Callable[[str, int, int], int], start: int, end: int) -> int:
    return max(rfind(space, start, end) for space in _WHITESPACE)


def _first_of(find: Callable[[str, int, int], int], start: int, end: int) -> int:
    hits = [hit for hit in (find(space, start, end) for space in _WHITESPACE) if hit >= 0]
    return min(hits, default=-1)
