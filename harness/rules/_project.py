"""A project's rules: its rules file, and which rules fail.

A project keeps its rows and its choices in one file, `harness-rules.json` at its root (the
folder the CLI runs in, pytest's rootdir), or another one named by `--rules FILE` (CLI) or the
`harness_rules` ini value (pytest). It is a rules file like the shipped ones (kind
`harness/rules`), and may also say which rules fail (`fail_on`: their findings are errors) and
their severities (`severity`: {"below-minimum": "error"}). `--fail-on RULE,...` and the
`harness_fail_on` ini value add to `fail_on`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from harness.providers._pack import AnyRow, RulesFile, load_rules_file
from harness.rules._engine import Policy

__all__ = ["PROJECT_FILE", "policy_of", "project_rules", "rows_of", "split_names"]

PROJECT_FILE: Final = "harness-rules.json"


def project_rules(root: Path, paths: Iterable[str | Path] = ()) -> list[RulesFile]:
    """The project's rules files: those named, else `harness-rules.json` at `root` if present."""
    named = [Path(path) for path in paths if str(path)]
    named = [path if path.is_absolute() else root / path for path in named]
    if not named and (root / PROJECT_FILE).is_file():
        named = [root / PROJECT_FILE]
    files = []
    for path in named:
        from harness.rules._registry import rule_names  # the rules, only when a file names some

        rules = load_rules_file(path)
        Policy.of(  # an unknown rule name is named with its file
            rule_names(),
            fail_on=rules.fail_on,
            severity=rules.severity.items(),
            where=f"{path}: fail_on/severity",
        )
        files.append(rules)
    return files


def rows_of(files: Sequence[RulesFile]) -> list[AnyRow]:
    return [row for rules in files for row in rules.rows]


def split_names(value: str | Iterable[str]) -> list[str]:
    """`"a,b c"` or a list of such strings as rule names."""
    parts = [value] if isinstance(value, str) else list(value)
    return [name for part in parts for name in part.replace(",", " ").split() if name]


def policy_of(
    files: Sequence[RulesFile], fail_on: str | Iterable[str] = (), *, where: str = "--fail-on"
) -> Policy:
    """Which rules fail and their severities, from the rules files and `fail_on`."""
    from harness.rules._registry import rule_names

    names = rule_names()
    policy = Policy.of(names, fail_on=split_names(fail_on), where=where)
    for rules in files:
        policy = policy.merged(
            Policy.of(
                names,
                fail_on=rules.fail_on,
                severity=rules.severity.items(),
                where=f"{PROJECT_FILE} fail_on/severity",
            )
        )
    return policy
