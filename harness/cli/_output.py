"""What the `harness` command prints, and how: every line through the printer
(`harness._shared._printer`:
redacted, and safe for GitHub Actions), encodable on any terminal (a character the output
encoding lacks is escaped, never a crash).
"""

from __future__ import annotations

import sys
from typing import TextIO

from harness._shared._printer import shown

__all__ = ["err", "out", "print_command"]


def _printable(text: str, stream: TextIO) -> str:
    """`text` (printed already: redacted) encodable by `stream` (characters it lacks escaped)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    return text


def out(text: str = "") -> None:
    print(_printable(shown(text), sys.stdout))


def err(text: str) -> None:
    print(_printable(shown(text), sys.stderr), file=sys.stderr)


def print_command(line: str) -> None:
    """A GitHub workflow command (an annotation the printer made, escaped): printed as it is,
    never wrapped in `::stop-commands::` as other output that reads like one is."""
    print(_printable(line, sys.stdout))
