"""What a log reads: a message as a test failure or the CLI prints it, and GitHub Actions'
workflow commands and step summary, made from the printer's redacted, bounded text.

- `shown(message)`: `printed_lines` (redacted, escaped, bounded), and safe on GitHub Actions.
- `annotation` (escaped as GitHub documents), `actions_safe` (text that holds a line reading as a
  workflow command goes between `::stop-commands::` markers), and the step summary
  (`write_step_summary`, cut to GitHub's 1 MiB with a line saying what was cut).
"""

from __future__ import annotations

import hashlib
import os
from typing import Final

from harness._shared._errors import one_line
from harness._shared._printer import (
    ANNOTATION_LIMIT,
    LINE_LIMIT,
    bounded,
    printed_lines,
    redact,
)

__all__ = [
    "STEP_SUMMARY_LIMIT",
    "actions_safe",
    "annotation",
    "bounded_summary",
    "on_github_actions",
    "reads_as_command",
    "shown",
    "write_step_summary",
]


# -- GitHub Actions --------------------------------------------------------------------------

# GitHub's cap on one step's summary; past it the summary is dropped (with an error) in the job.
STEP_SUMMARY_LIMIT: Final = 1024 * 1024
_COMMAND_START: Final = ("::", "##[")


def on_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _data(text: str) -> str:
    """A workflow command's data: `%`, CR and LF encoded as GitHub documents, every other
    control character escaped (an ESC in an annotation would colour the log)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return one_line(text)


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
    level: str = "error",
) -> str:
    """An `::error` (or `level`: `::warning`, `::notice`) workflow command, its message
    redacted, message and properties escaped."""
    properties = []
    if file is not None:
        properties.append(f"file={_property(bounded(file, LINE_LIMIT))}")
    if line is not None:
        properties.append(f"line={line}")
    if title is not None:
        properties.append(f"title={_property(bounded(title, LINE_LIMIT))}")
    command = level if level in ("error", "warning", "notice") else "error"
    head = f"::{command} " + ",".join(properties) if properties else f"::{command}"
    return f"{head}::{_data(bounded(message, ANNOTATION_LIMIT))}"


def reads_as_command(text: str) -> bool:
    """Whether a line of `text` would be taken for a workflow command (`::...` or `##[...`)."""
    return any(line.lstrip().startswith(_COMMAND_START) for line in text.splitlines())


def actions_safe(text: str, *, github: bool | None = None) -> str:
    """`text` as it may be printed to a GitHub Actions log: as it is, unless one of its lines
    would be read as a workflow command; then it is wrapped in `::stop-commands::<token>` and
    `::<token>::`, as GitHub documents for untrusted output. The token is the SHA-256 of the text,
    so output stays deterministic and the text cannot hold its own token. Outside Actions (or
    with `github=False`) the text is unchanged."""
    if not (on_github_actions() if github is None else github) or not reads_as_command(text):
        return text
    token = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"::stop-commands::{token}\n{text}\n::{token}::"


def shown(message: str, *, whole: bool = False) -> str:
    """A message as a test failure or the CLI prints it: its lines redacted, escaped and bounded
    (`printed_lines`; `whole`: not cut), and safe on GitHub Actions."""
    return actions_safe("\n".join(printed_lines(message, None if whole else LINE_LIMIT)))


def bounded_summary(markdown: str, room: int = STEP_SUMMARY_LIMIT) -> str:
    """`markdown` cut to fit `room` bytes (UTF-8), with a last line saying what was cut."""
    data = markdown.encode("utf-8", "surrogatepass")
    if len(data) <= room:
        return markdown
    note_room = 200  # the closing fence and the note below
    if room < note_room:
        return ""  # the summary is full: the job log has it all
    kept = data[: room - note_room].decode("utf-8", "ignore")
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else ""
    cut = len(data) - len(kept.encode("utf-8", "surrogatepass"))
    fence = "\n```\n" if kept.count("```") % 2 else ""  # close a code block cut in the middle
    return (
        f"{kept}{fence}\n> **Cut:** {cut:,} more bytes did not fit GitHub's"
        f" {STEP_SUMMARY_LIMIT // 1024:,} KiB step summary limit; the full reports are in the job"
        " log.\n"
    )


def write_step_summary(markdown: str) -> bool:
    """Append `markdown`, redacted, to the GitHub step summary, cut to what fits GitHub's 1 MiB
    limit (the summary may already hold other output); False when there is none to write to."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path or not on_github_actions():
        return False
    try:
        used = os.stat(path).st_size
    except OSError:
        used = 0
    text = redact(markdown)
    text = text if text.endswith("\n") else text + "\n"
    text = bounded_summary(text, max(STEP_SUMMARY_LIMIT - used, 0))
    if text:
        with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
    return True
