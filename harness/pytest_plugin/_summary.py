"""The plugin's end of run: the `header drift` section of the terminal summary, and GitHub output.

Every line is one line (control characters in a node id or a reason are escaped), redacted
(`harness._secrets.redact_text`), and safe to print on GitHub Actions (`harness._ci.actions_safe`);
annotations are escaped as GitHub documents, and the step summary is cut to GitHub's limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness._ci import actions_safe, annotation, on_github_actions, write_step_summary
from harness._errors import one_line
from harness.pytest_plugin._api import Settings
from harness.pytest_plugin._capture import moves_line, summary_lines
from harness.pytest_plugin._unused import DELETE_FLAG, Verdict

__all__ = ["write_summary"]


def write_summary(
    terminalreporter: Any,
    s: Settings,
    verdict: Verdict,
    done: list[str],
    *,
    asked: bool,
    refused: list[tuple[str, str]],
) -> None:
    """The `header drift` section: drift, markers, writes, unused recordings; then GitHub's."""

    def write(line: str, **markup: bool) -> None:
        terminalreporter.write_line(actions_safe(one_line(_redacted(line))), **markup)

    terminalreporter.section("header drift")
    # The harness's own words and numbers (a mode, a seed, a count) hold nothing to redact: a run
    # that has nothing else to say never loads the secret scan.
    terminalreporter.write_line(
        f"harness: mode {s.mode}, seed {s.seed} (from {s.seed_source}), "
        f"{s.shuffle} orders per scenario"
    )
    if s.drifts:
        write(f"{len(s.drifts)} test(s) found header drift:")
        for drift in s.drifts:
            write(f"  {drift['nodeid']}: {drift['message']}")
    else:
        terminalreporter.write_line("no header drift")
    if s.moves:
        write(f"{len(s.moves)} test(s) marked moves_header:")
        for nodeid, reason in s.moves:
            write(f"  {moves_line(nodeid, reason, s)}")
    for line in summary_lines(s):
        write(line)
    for path in s.written:
        write(f"wrote {path}")
    for problem in s.unwritten:
        write(f"could not write {problem}", red=True)
    for location, variable in refused:
        write(
            f"kept header snapshot {location}: syrupy would delete it, and CI never deletes"
            f" ({variable}); run --snapshot-update locally",
            red=True,
        )
    _unused(verdict, done, asked, write)
    if on_github_actions():
        _github(s)


def _redacted(line: str) -> str:
    from harness._secrets import redact_text  # loaded only when a line carries the run's content

    return redact_text(line)


def _unused(verdict: Verdict, done: list[str], asked: bool, write: Callable[..., None]) -> None:
    if done:
        write(f"{len(done)} unused recording(s) deleted ({DELETE_FLAG}):")
        for line in done:
            write(f"  {line}")
        return
    if verdict.complete and verdict.unused:
        write(f"{len(verdict.unused)} recording(s) no test used in this run:")
        for path in verdict.unused:
            write(f"  {path}")
        if not asked:
            write(
                f"  (kept; to delete them: pytest --harness-mode=update {DELETE_FLAG}, on the"
                " whole project, once every test passes)"
            )
    if asked and verdict.kept_because:
        write(f"{DELETE_FLAG}: kept every recording, because:", yellow=True)
        for reason in verdict.kept_because:
            write(f"  - {reason}", yellow=True)
    elif asked and not verdict.unused:
        write(f"{DELETE_FLAG}: every recording was used; nothing to delete")


def _github(settings: Settings) -> None:
    for drift in settings.drifts:
        print(
            annotation(
                _redacted(drift["message"]),
                file=drift["file"],
                line=drift["line"],
                title="header drift",
            )
        )
    lines = [
        "## Header drift",
        "",
        f"Seed `{settings.seed}` ({settings.seed_source}), mode `{settings.mode}`.",
        "",
    ]
    if not settings.drifts:
        lines.append("No header drift.")
    for drift in settings.drifts:
        lines += [f"### `{one_line(drift['nodeid'])}`", "", drift["markdown"], ""]
    if settings.moves:
        lines += ["", "Tests marked `moves_header`:", ""]
        lines += [f"- {one_line(moves_line(node, why, settings))}" for node, why in settings.moves]
    lines += ["", *summary_lines(settings)] if settings.chain_tests else []
    write_step_summary(_redacted("\n".join(lines)))
