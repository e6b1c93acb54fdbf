"""Markdown and JSON made of values that came from input: inert Markdown, parseable JSON.

A value a Markdown report shows (a file name, a model, a finding's message, a test id, a
marker's reason, a price's source) may hold Markdown of its own: an image `![x](https://...)`
GitHub would fetch, a link, an `@`-mention GitHub would turn into a ping, a `|` that ends the
table cell, HTML. Each goes through one of these, after the printer made it printable
(`harness._shared._printer.line`: redacted, one line, control characters escaped, bounded):

- `text(value)`: as text: every character Markdown gives a meaning is backslash-escaped
  (emphasis, code, links and images, HTML and autolinks, tables, strikethrough, entities,
  math); and an `@`, an issue number's `#`, a URL's `://` and a `www.` are broken by a word
  joiner (U+2060, invisible), since GitHub finds mentions, issue references and bare URLs in
  the rendered text, where a backslash no longer stands;
- `code(value, cell=...)`: as a code span (nothing inside one renders: no link, image, mention
  or emphasis), fenced by more backticks than it holds; in a table cell its `|` escaped, as
  GitHub's tables read it inside a code span too;
- `as_json(value)`: `value` as JSON, each of its strings redacted before it is encoded (issue
  32: redacting the encoded text could eat the backslash of a `\\"`, and the output no longer
  parsed). Strings are whole, not cut: a tool reads them.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from harness._shared._printer import LINE_LIMIT, NAME_LIMIT, line, redact_all

__all__ = ["as_json", "code", "text"]

_SPECIAL: Final = re.compile(r"[\\`*_\[\]<>|~&$]")
_JOINER: Final = "\u2060"
# After these GitHub links what it reads: `@name`, `#12`, `https://...`, `www.site`.
_LINKED: Final = re.compile(r"@|#(?=\d)|:(?=//)|(?i:www)(?=\.)")


def text(value: str, limit: int = LINE_LIMIT) -> str:
    """`value` as inert Markdown text (see the module doc)."""
    shown = _SPECIAL.sub(lambda m: "\\" + m.group(), line(value, limit))
    return _LINKED.sub(lambda m: m.group() + _JOINER, shown)


def code(value: str, limit: int = NAME_LIMIT, *, cell: bool = False) -> str:
    """`value` as an inert code span (see the module doc); `cell`: it stands in a table."""
    shown = line(value, limit)
    if not shown:
        return '`""`'
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    body = shown.replace("|", "\\|") if cell else shown
    return f"{fence}{pad}{body}{pad}{fence}"


def as_json(value: Any, *, indent: int = 0) -> str:
    """`value` as JSON, every string in it (object keys too) redacted before it is encoded:
    redaction never touches the encoding, so the text always parses (issue 32: redacting the
    encoded text could eat the backslash of a `\\"`). Strings are whole, not cut."""
    plain = msgspec.to_builtins(value, str_keys=True, enc_hook=repr)
    strings: list[str] = []
    _strings(plain, strings)
    encoded = msgspec.json.encode(_redacted(plain, redact_all(strings)))
    return (msgspec.json.format(encoded, indent=indent) if indent else encoded).decode()


def _strings(value: Any, into: list[str]) -> None:
    """Every string in `value` (object keys too), into `into`."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        into.extend(map(str, value))
        for item in value.values():
            _strings(item, into)
    elif isinstance(value, list):
        for item in value:
            _strings(item, into)


def _redacted(value: Any, seen: dict[str, str]) -> Any:
    """`value` with each string as `seen` redacts it (`redact_all` of its strings: each
    distinct string redacted once, many cleared at once)."""
    if isinstance(value, str):
        return seen[value]
    if isinstance(value, dict):
        return {seen[str(key)]: _redacted(item, seen) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, seen) for item in value]
    return value
