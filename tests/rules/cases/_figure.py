"""The agreement figure: how many of the corpus's cases the CLI gets right, and where it is printed.

docs/rules.md carries the figure between two markers; `python -m tests.rules.cases --write-docs`
writes it from a run of the corpus, and `tests/rules/test_corpus.py` fails when the page says
something else than the corpus gives. Nobody edits it by hand, and it has no date: the same code
and the same corpus always print the same section.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from tests.rules.cases._run import Outcome

__all__ = ["BEGIN", "DOCS", "END", "replace_section", "section", "section_in"]

DOCS: Final = Path(__file__).resolve().parents[3] / "docs" / "rules.md"
BEGIN: Final = (
    "<!-- corpus figure: written by `python -m tests.rules.cases --write-docs`; do not edit -->"
)
END: Final = "<!-- end of corpus figure -->"

_CHECKS: Final = {
    "diff": "pairs, `harness diff A B --format json`",
    "lint": "requests and sessions, `harness lint PATH --format json`",
    "cost": "sessions, `harness cost PATH --format json`",
}


def _share(agree: int, total: int) -> str:
    return f"{agree} of {total} ({100 * agree / total:.0f}%)" if total else "none"


def _rows(
    outcomes: list[Outcome], key: Callable[[Outcome], str], names: Iterable[str]
) -> list[str]:
    rows = []
    for name in names:
        group = [o for o in outcomes if key(o) == name]
        rows.append(
            f"| {name} | {len(group)} | {_share(sum(o.agrees for o in group), len(group))} |"
        )
    return rows


def section(outcomes: list[Outcome]) -> str:
    """The markdown between the markers, from the corpus's outcomes."""
    total = len(outcomes)
    agree = sum(o.agrees for o in outcomes)
    requests = sum(o.requests for o in outcomes)
    shapes = {
        shape: sum(o.shape == shape for o in outcomes) for shape in ("pair", "request", "session")
    }
    providers = sorted({o.provider for o in outcomes})
    intro = (
        f"**{_share(agree, total)} cases agree with the provider.** The corpus in"
        f" `tests/rules/cases/` holds {total} cases ({requests} requests: {shapes['pair']}"
        f" pairs, {shapes['request']} single requests, {shapes['session']} sessions), each with"
        " the verdict its source decides: a provider's page with the sentence that decides it, or"
        " another tool's published case restated as data. Each runs through the CLI as a user"
        " runs it; a case the CLI cannot judge (a key it lacks, exit 2) counts as a disagreement."
    )
    outro = (
        "`pytest tests/rules/test_corpus.py` names every case that disagrees, with what was"
        " expected, what the CLI said and the source's quote;"
        " `python -m tests.rules.cases --failing` prints the same list."
    )
    lines = [
        BEGIN,
        "",
        textwrap.fill(intro, 100),
        "",
        "| provider | cases | agree |",
        "|---|---|---|",
        *_rows(outcomes, lambda o: o.provider, providers),
        "",
        "| check | cases | agree |",
        "|---|---|---|",
        *(
            row.replace(f"| {check} |", f"| {check} ({what}) |", 1)
            for check, what in _CHECKS.items()
            for row in _rows(outcomes, lambda o: o.case.check, [check])
        ),
        "",
        "| source | cases | agree |",
        "|---|---|---|",
        *_rows(
            outcomes,
            lambda o: "other tools' cases" if o.sources[0].kind == "tool" else "providers' pages",
            ["providers' pages", "other tools' cases"],
        ),
        "",
        textwrap.fill(outro, 100),
        "",
        END,
    ]
    return "\n".join(lines)


def section_in(text: str) -> str | None:
    """The section between the markers in `text`, markers included; None without them."""
    start = text.find(BEGIN)
    end = text.find(END, start)
    if start < 0 or end < 0:
        return None
    return text[start : end + len(END)]


def replace_section(text: str, new: str) -> str:
    """`text` with its section replaced by `new` (appended, under its heading, when absent)."""
    old = section_in(text)
    if old is None:
        heading = "\n## How often the verdicts agree with the providers\n\n"
        return text.rstrip("\n") + "\n" + heading + new + "\n"
    return text.replace(old, new)
