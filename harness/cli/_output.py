"""What the `harness` command prints, and how: every line through the printer
(`harness._shared._printer`: redacted, control characters escaped, each line bounded, and safe
for GitHub Actions), encodable on any terminal (a character the output encoding lacks is
escaped, never a crash). JSON is made by `out_json`: each string redacted before the value is
encoded (`harness._shared._formats.as_json`), so it always parses.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

from harness._shared._actions import shown
from harness._shared._formats import as_json

__all__ = ["err", "out", "out_json", "print_command"]

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _encoding(stream: TextIO) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def _printable(text: str, stream: TextIO) -> str:
    """`text` (printed already: redacted) encodable by `stream` (characters it lacks escaped)."""
    encoding = _encoding(stream)
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    return text


def _json_escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point > 0xFFFF:  # a surrogate pair, as JSON spells a character past the first plane
        point -= 0x10000
        return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"
    return f"\\u{point:04x}"


def out(text: str = "", *, whole: bool = False) -> None:
    """`text` printed: redacted, escaped, each line bounded (`whole`: not cut, for what the
    user asked to see whole, `harness show --requests`)."""
    print(_printable(shown(text, whole=whole), sys.stdout))


def out_json(value: Any) -> None:
    """`value` as one line of JSON; on a terminal whose encoding lacks a character, every
    character past ASCII is a JSON escape (a backslash escape of Python's would not parse)."""
    text = as_json(value)
    try:
        text.encode(_encoding(sys.stdout))
    except UnicodeEncodeError:
        text = _NON_ASCII.sub(_json_escape, text)
    except LookupError:
        pass
    print(text)


def err(text: str) -> None:
    print(_printable(shown(text), sys.stderr), file=sys.stderr)


def print_command(line: str) -> None:
    """A GitHub workflow command (an annotation the printer made, escaped): printed as it is,
    never wrapped in `::stop-commands::` as other output that reads like one is."""
    print(_printable(line, sys.stdout))
