"""The one printer: everything the harness prints passes here, redacted before it is cut.

Reports, summaries, annotations, the GitHub step summary and error messages a test fails with
are made from raw values (a drift report holds what it compared, not a redacted copy); this
module turns them into text that is safe to print:
- `redact(text)`: every key-shaped string (`harness._shared._secret_shapes`), every value a project
  declared secret (`secret_patterns`) and every value the run redacted from a header, replaced
  by `[redacted]`; a project's allowed fake keys stay. `extend(...)` adds the project's words
  (a capture session does, as it is made and as each request and answer passes: the same words
  its recordings are scanned for), `learn(...)` the secret headers and URLs of an input file
  (the CLI's); `generation()` says when they changed, so a cached printed form is made again;
  `exported()`/`imported()` carry them from a pytest-xdist worker to the controller.
- `clip`, `bounded`, `excerpt`, `around`: cuts of content, each redacting first (a cut key may
  no longer look like one).
- `line(text)`: one printable line (control characters escaped, redacted, bounded);
  `printed_lines(text)` each line of a text so (issue 32: a 20 MB value, an ESC, a CR).
Markdown and JSON of input values: `harness._shared._formats`; a message as a test failure or
the CLI prints it, and what GitHub Actions reads (annotations, the step summary):
`harness._shared._actions`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from harness._shared._errors import one_line

if TYPE_CHECKING:
    from harness._shared._secret_shapes import SecretPattern
    from harness._shared._views import Window

__all__ = [
    "ANNOTATION_LIMIT",
    "LINE_LIMIT",
    "MARKER",
    "NAME_LIMIT",
    "REACH",
    "around",
    "bounded",
    "clip",
    "excerpt",
    "exported",
    "extend",
    "generation",
    "imported",
    "learn",
    "line",
    "printed_lines",
    "redact",
    "redact_all",
    "reset",
]

MARKER: Final = "<<HERE>>"  # where the difference starts, inside an excerpt
NAME_LIMIT: Final = 120  # characters of a tool name, key or label a report shows
LINE_LIMIT: Final = 2000  # characters of one printed line
ANNOTATION_LIMIT: Final = 16 * 1024  # characters of an annotation's message (many lines)
REACH: Final = 16 * 1024  # how far around a cut a secret that crosses it is looked for
_CONTEXT_BEFORE: Final = 20
_CONTEXT_SIZE: Final = 80


# -- what is redacted ------------------------------------------------------------------------


class _Words(NamedTuple):
    patterns: tuple[SecretPattern, ...]  # the project's, beside the built-in shapes
    allow: frozenset[str]
    secrets: tuple[str, ...]


_lock = threading.Lock()
_words = _Words((), frozenset(), ())
_generation = 0


def extend(
    *,
    patterns: Iterable[SecretPattern] = (),
    allow: Iterable[str] = (),
    secrets: Iterable[str] = (),
) -> None:
    """Redact the project's own secret shapes and these values in everything printed from now
    on; strings in `allow` (known fake keys) stay."""
    global _words, _generation
    with _lock:
        known = set(_words.patterns)
        added = tuple(p for p in patterns if p not in known)
        learnt = set(_words.secrets)
        values = tuple(v for v in dict.fromkeys(secrets) if v and v not in learnt)
        kept = frozenset(allow) - _words.allow
        if not (added or values or kept):
            return
        _words = _Words(_words.patterns + added, _words.allow | kept, _words.secrets + values)
        _generation += 1


def learn(headers: Iterable[tuple[str, str]] = (), urls: Iterable[str | None] = ()) -> None:
    """Redact, in everything printed from now on, what an input file's requests hide: the
    values of their secret headers (a proxy log's `x-api-key`, a cookie's values; named as a
    capture session's `Redaction` names them) and their URLs' passwords and secret query
    values. The CLI learns each file it reads (issue 32: a proxy log's `x-api-key`, echoed in
    a body, was printed by `harness report`, `diff` and `lint`)."""
    from harness._shared._secrets import Redaction

    rules = Redaction()
    values = rules.secret_values(list(headers))
    for url in urls:
        values += rules.url_values(url) if url else []
    if values:
        extend(secrets=values)


def exported() -> dict[str, Any]:
    """What `extend` added in this process, as plain data: a pytest-xdist worker hands it to the
    controller (`imported`), whose printer then redacts the same words in what it prints."""
    words = _words
    return {
        "patterns": [
            [p.kind, p.regex.pattern, p.regex.flags, list(p.needles), p.folded, p.run]
            for p in words.patterns
        ],
        "allow": sorted(words.allow),
        "secrets": list(words.secrets),
    }


def imported(data: Any) -> None:
    """`extend` with what another process `exported`."""
    import re

    from harness._shared._secret_shapes import SecretPattern

    if not isinstance(data, dict):
        return
    patterns = [
        SecretPattern(str(kind), re.compile(pattern, flags), tuple(needles), bool(folded), run)
        for kind, pattern, flags, needles, folded, run in data.get("patterns", ())
    ]
    extend(patterns=patterns, allow=data.get("allow", ()), secrets=data.get("secrets", ()))


def reset() -> None:
    """Forget what `extend` added (a new pytest session, a test of the printer)."""
    global _words, _generation
    with _lock:
        _words = _Words((), frozenset(), ())
        _generation += 1


def generation() -> int:
    """A number that changes whenever what is redacted changes."""
    return _generation


def _patterns() -> tuple[SecretPattern, ...]:
    """The built-in key shapes and the project's (the scan loads on the first text printed that
    may hold one, not when the printer is imported: the plugin imports it at pytest start)."""
    from harness._shared._secret_shapes import SECRET_PATTERNS

    return SECRET_PATTERNS + _words.patterns


def redact(text: str) -> str:
    from harness._shared._secrets import redact_text

    words = _words
    return redact_text(text, _patterns(), allow=words.allow, secrets=words.secrets)


_CLEARED_AT_ONCE: Final = 512  # texts a joined clearance asks about


def redact_all(texts: Iterable[str]) -> dict[str, str]:
    """Each of `texts` -> `redact(text)`, for many short texts at once (a JSON document's
    strings). They are cleared in groups: when the group's texts joined by newlines may hold
    no secret (`may_hold_any`: no needle, known secret or run of token characters near a
    needle, in any view, anywhere in the joined bytes), none of them does, since each text is
    a piece of the joined bytes and what it would be found by is found there too (a newline
    breaks every run of token characters as a text's end does). A group that may hold one is
    redacted text by text, as is a text that is not valid UTF-8 (a lone surrogate)."""
    from harness._shared._secret_views import may_hold_any

    words = _words
    patterns = _patterns()
    found: dict[str, str] = {}
    group: list[str] = []
    pieces: list[bytes] = []

    def settle() -> None:
        if not may_hold_any(b"\n".join(pieces), patterns, words.secrets):
            found.update(zip(group, group, strict=True))
        else:
            found.update((text, redact(text)) for text in group)
        group.clear()
        pieces.clear()

    for text in dict.fromkeys(texts):
        try:
            piece = text.encode("utf-8")
        except UnicodeEncodeError:
            found[text] = redact(text)
            continue
        group.append(text)
        pieces.append(piece)
        if len(group) >= _CLEARED_AT_ONCE:
            settle()
    if group:
        settle()
    return found


# -- cuts ------------------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    """`text`, redacted, cut to `limit` characters (the last one an ellipsis)."""
    text = redact(text[: limit + REACH]) + text[limit + REACH : limit + REACH + 1]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bounded(text: str, limit: int = NAME_LIMIT) -> str:
    """`text`, redacted, cut to `limit` characters and saying how many more there were."""
    if len(text) <= limit:
        return redact(text)
    shown_text = redact(text[: limit + REACH])
    if len(shown_text) <= limit and len(text) <= limit + REACH:
        return shown_text
    return f"{shown_text[:limit]}… (+{len(text) - limit:,} characters)"


def line(text: str, limit: int = LINE_LIMIT) -> str:
    """One printable line: redacted, control characters escaped, at most `limit` long (and
    saying how many more characters there were). Of a long text only its start is escaped and
    redacted: a 20 MB value costs what its first `limit + REACH` characters do."""
    if len(text) <= limit + REACH:
        return bounded(one_line(text), limit)
    return f"{redact(one_line(text[: limit + REACH]))[:limit]}… (+{len(text) - limit:,} characters)"


def printed_lines(text: str, limit: int | None = LINE_LIMIT) -> list[str]:
    """`text` as the lines the harness prints: redacted (neighbouring lines together, so a key
    spread over lines is found), control characters escaped, each at most `limit` long and
    saying how many more characters it had (None: whole, as `harness show --requests` asks)."""
    if limit is None:
        return [one_line(piece) for piece in redact(text).split("\n")]
    lines: list[str] = []
    group: list[str] = []
    for piece in [*text.split("\n"), None]:
        if piece is not None and len(piece) <= limit:
            group.append(piece)
            continue
        if group:
            shown = redact("\n".join(group)).split("\n")
            lines += [_bound(one_line(piece), limit) for piece in shown]
            group = []
        if piece is not None:
            lines.append(line(piece, limit))
    return lines


def _bound(text: str, limit: int) -> str:
    """`text` (printable already) cut to `limit`, saying how many more characters it had."""
    return text if len(text) <= limit else f"{text[:limit]}… (+{len(text) - limit:,} characters)"


def excerpt(seen: Window) -> str:
    """About 80 bytes around the mark, with MARKER where the difference starts; a secret near
    it is shown as `[redacted]` (the text around the mark is redacted before it is cut)."""
    from harness._shared._secret_views import find_all

    data, mark = seen.data, seen.mark
    words = _words
    text = data.decode("utf-8", "replace")
    if find_all(text, _patterns(), allow=words.allow, secrets=words.secrets):
        return _redacted_excerpt(seen)
    while 0 < mark < len(data) and _continuation(data[mark]):
        mark -= 1  # the marker goes before the character the differing byte belongs to
    start = max(0, mark - _CONTEXT_BEFORE)
    while 0 < start < len(data) and _continuation(data[start]):
        start -= 1
    end = min(len(data), start + _CONTEXT_SIZE)
    end = max(end, mark)
    while end < len(data) and _continuation(data[end]):
        end += 1
    before = data[start:mark].decode("utf-8", "replace")
    after = data[mark:end].decode("utf-8", "replace")
    head = "…" if start > 0 or seen.more_before else ""
    tail = "…" if end < len(data) or seen.more_after else ""
    return head + before + MARKER + after + tail


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _redacted_excerpt(seen: Window) -> str:
    """`excerpt` in characters, on the text around the mark with its secrets redacted first."""
    before = seen.data[: seen.mark].decode("utf-8", "replace")
    after = seen.data[seen.mark :].decode("utf-8", "replace")
    text, at = _redact_marking(before + after, len(before))
    head = max(0, at - _CONTEXT_BEFORE)
    tail = min(len(text), head + _CONTEXT_SIZE)
    middle = text[head:at] + MARKER + text[at : max(tail, at)]
    more_before = head > 0 or seen.more_before
    more_after = tail < len(text) or seen.more_after
    return ("…" if more_before else "") + middle + ("…" if more_after else "")


def _redact_marking(text: str, at: int) -> tuple[str, int]:
    """`text` with its secrets replaced by REDACTED, and where position `at` went (a secret
    holding `at` is replaced whole, and `at` moves to its start)."""
    from harness._shared._secret_views import find_all
    from harness._shared._secrets import REDACTED

    words = _words
    pieces: list[str] = []
    position = 0
    moved = at
    for hit in find_all(text, _patterns(), allow=words.allow, secrets=words.secrets):
        start, end = hit.cut
        start = max(start, position)  # a hit overlapping one replaced already: its rest
        if end <= start:
            continue
        pieces += [text[position:start], REDACTED]
        if start < at < end:
            moved = sum(map(len, pieces[:-1]))
        elif end <= at:
            moved -= (end - start) - len(REDACTED)
        position = end
    pieces.append(text[position:])
    return "".join(pieces), moved


def around(a: str, b: str, width: int = 60) -> tuple[str, str]:
    """Two differing strings cut to the region around their first difference (not both at the
    same prefix), with MARKER there; redacted before they are cut. Strings that hold MARKER
    already (a report's own regions) are cut around it, not marked again."""
    from harness._shared._views import common_prefix

    if MARKER in a and MARKER in b:
        return _cut(a, a.index(MARKER), width, mark=False), _cut(b, b.index(MARKER), width, False)
    at = common_prefix(a, b)
    start = max(at - REACH, 0)
    a_window, b_window = a[start : at + REACH], b[start : at + REACH]
    a_shown, b_shown = redact(a_window), redact(b_window)
    if len(a) <= width and len(b) <= width:
        return a_shown, b_shown
    at = common_prefix(a_shown, b_shown)
    return (
        _cut(a_shown, at, width, True, start > 0, len(a) > start + len(a_window)),
        _cut(b_shown, at, width, True, start > 0, len(b) > start + len(b_window)),
    )


def _cut(
    text: str, at: int, width: int, mark: bool, before: bool = False, after: bool = False
) -> str:
    head = max(0, at - width // 3)
    tail = min(len(text), max(head + width, at))
    middle = text[head:at] + (MARKER if mark else "") + text[at:tail]
    return ("…" if head > 0 or before else "") + middle + ("…" if tail < len(text) or after else "")
