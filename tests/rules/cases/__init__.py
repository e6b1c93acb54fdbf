"""The corpus of cases: requests with the verdict the provider would sign, and its source.

Each case is a request, a pair or a session (`<provider>.json` in this folder), with what
`harness diff`, `harness lint` or `harness cost` must print for it, and the source that decides
it: a provider's page with the sentence that decides it, or another tool's published case
restated here as data (`sources.json`). The expected verdict is the source's, never the
harness's: a case that today's code gets wrong stays in the corpus, and fails, until the code
is right. `tests/rules/test_corpus.py` runs every case through the CLI; `python -m
tests.rules.cases` prints the outcomes and writes the agreement figure into docs/rules.md.
README.md in this folder says how to read and add a case.

Modules: `_model` (the file formats), `_build` (bodies from a case's compact description),
`_run` (a case through the CLI, and the judgement), `_figure` (the agreement figure and the
docs section that prints it).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Final

import msgspec

from tests.rules.cases._model import Case, CaseFile, Source, SourcesFile
from tests.rules.cases._run import Outcome, run_case

__all__ = ["FOLDER", "Outcome", "case_files", "cases", "outcome_of", "sources"]

FOLDER: Final = Path(__file__).parent


@cache
def sources() -> dict[str, Source]:
    data = (FOLDER / "sources.json").read_bytes()
    return msgspec.json.decode(data, type=SourcesFile).sources


@cache
def case_files() -> tuple[CaseFile, ...]:
    """Every case file of the corpus, in name order."""
    return tuple(
        msgspec.json.decode(path.read_bytes(), type=CaseFile)
        for path in sorted(FOLDER.glob("*.json"))
        if path.name != "sources.json"
    )


def cases() -> list[tuple[CaseFile, Case]]:
    return [(file, case) for file in case_files() for case in file.cases]


@cache
def outcome_of(case_id: str) -> Outcome:
    """The case's outcome, run once per process (the figure and the per-case tests share it)."""
    for file, case in cases():
        if case.id == case_id:
            return run_case(case, file, [sources()[key] for key in case.source_ids])
    raise KeyError(case_id)
