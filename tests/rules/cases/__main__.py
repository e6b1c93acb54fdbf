"""`python -m tests.rules.cases`: run the corpus through the CLI and say what agrees.

python -m tests.rules.cases               one line a case, then the figure
python -m tests.rules.cases --failing     each disagreeing case: expected, got, its source
python -m tests.rules.cases --only TEXT   the cases whose id contains TEXT
python -m tests.rules.cases --write-docs  write the figure into docs/rules.md
python -m tests.rules.cases --materialize DIR
                                          each case's files under DIR/<case id>/, with the
                                          command that judges it, to run by hand
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from tests.rules.cases import cases, outcome_of
from tests.rules.cases._figure import DOCS, replace_section, section
from tests.rules.cases._run import write_case


def _materialize(folder: Path, only: str) -> int:
    count = 0
    for file, case in cases():
        if only not in case.id:
            continue
        target = folder / case.id
        target.mkdir(parents=True, exist_ok=True)
        paths = write_case(case, file, target)
        command = ["harness", case.check, *paths, "--format", "json"]
        (target / "command.txt").write_text(shlex.join(command) + "\n", encoding="utf-8")
        count += 1
    print(f"{count} case(s) written under {folder}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.rules.cases", description=__doc__)
    parser.add_argument("--only", default="", metavar="TEXT")
    parser.add_argument("--failing", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--materialize", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    if args.materialize is not None:
        return _materialize(args.materialize, args.only)
    outcomes = [outcome_of(case.id) for _, case in cases() if args.only in case.id]
    for outcome in outcomes:
        if args.failing:
            if not outcome.agrees:
                print(outcome.explain(), end="\n\n")
        else:
            print(f"{'agrees ' if outcome.agrees else 'DIFFERS'} {outcome.case.id}")
    agree = sum(o.agrees for o in outcomes)
    print(f"{agree} of {len(outcomes)} cases agree")
    if args.write_docs:
        if args.only:
            print("--write-docs needs the whole corpus (no --only)", file=sys.stderr)
            return 2
        DOCS.write_text(replace_section(DOCS.read_text(encoding="utf-8"), section(outcomes)))
        print(f"wrote the figure into {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
