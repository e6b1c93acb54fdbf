"""Model names against the rules pack's model patterns (`claude-sonnet-4*`, an exact name, or a
glob), fast and bounded: what `Row.applies` asks for every row at every lookup."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import cache
from typing import Final

__all__ = ["MODEL_NAME_LIMIT", "model_matches"]

_GLOB: Final = frozenset("*?[")


# The longest model name a row can match. Model ids run to about a hundred characters (a Bedrock
# inference-profile ARN is the longest seen); a request naming a model of megabytes is hostile or
# broken input, and a glob with an inner `*` costs time linear in the name for each of the
# pack's patterns at each lookup (a 4 MiB name took minutes in `harness lint`). Such a name
# matches no row: the rules abstain on it as on any model the pack does not know.
MODEL_NAME_LIMIT: Final = 1_024


def model_matches(name: str, pattern: str) -> bool:
    """`fnmatchcase(name, pattern)`, without compiling a regex for the patterns rows mostly hold
    (`claude-sonnet-4*`, an exact name): 140 patterns compiled were a third of `harness lint`'s
    start-up on one small cassette. A pattern with more wildcards (`*claude-haiku-4-5-v[0-9]*`)
    is compiled only for a name that holds each of its literal runs (`claude-haiku-4-5-v`): a
    run of plain characters matches only itself, so a name without one cannot match. A name over
    `MODEL_NAME_LIMIT` matches nothing."""
    if len(name) > MODEL_NAME_LIMIT:
        return False
    starred = pattern.endswith("*")
    head = pattern[:-1] if starred else pattern
    if not _GLOB.isdisjoint(head):
        if any(run not in name for run in _literal_runs(pattern)):
            return False
        return fnmatchcase(name, pattern)
    return name.startswith(head) if starred else name == pattern


@cache
def _literal_runs(pattern: str) -> tuple[str, ...]:
    """The runs of plain characters of a glob before its first `[` (a class, or a literal `[`
    when it is not closed: either way the runs before it are plain), split at `*` and `?`."""
    head = pattern.split("[", 1)[0].replace("?", "*")
    return tuple(run for run in head.split("*") if run)
