"""Every line the plugin prints at the end of a run: the `header drift` section, and GitHub's.

The terminal section (mode and seed, drift found, `moves_header` uses and stale exemptions, the
prefix chain's coverage per provider, the cache rules' findings, files written or not, unused
recordings) and, on GitHub Actions, the `::error` (and `::warning`) annotations and the step
summary. Every line goes through the printer
(`harness._shared._printer`): one line (control characters in a node id or a reason are escaped),
redacted, and safe to print on GitHub Actions; the step summary is cut to GitHub's limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from harness._shared import _actions
from harness._shared._errors import one_line
from harness.pytest_plugin._state import RunState
from harness.pytest_plugin._unused import DELETE_FLAG, Verdict

__all__ = ["chain_lines", "moves_line", "rules_lines", "write_summary"]

MAX_FINDINGS = 50  # finding lines the terminal shows (the step summary and annotations have all)


def write_summary(
    terminalreporter: Any,
    s: RunState,
    verdict: Verdict,
    done: list[str],
    *,
    asked: bool,
    refused: list[tuple[str, str]],
) -> None:
    """The `header drift` section: drift, markers, writes, unused recordings; then GitHub's."""

    def write(line: str, **markup: bool) -> None:
        terminalreporter.write_line(_actions.shown(one_line(line)), **markup)

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
            if drift.get("cost"):
                write(f"    cost: {drift['cost']}")
    else:
        terminalreporter.write_line("no header drift")
    if s.moves:
        write(f"{len(s.moves)} test(s) marked moves_header:")
        for nodeid, reason in s.moves:
            write(f"  {moves_line(nodeid, reason, s)}")
    for line in chain_lines(s):
        write(line)
    unused = [reason for reason, used in s.known_moves.items() if not used]
    if unused:
        write(f"{len(unused)} known move(s) of harness_capture_config waived nothing (stale):")
        for reason in unused:
            write(f"  {reason}")
    for line in rules_lines(s):
        write(line)
    if s.no_requests:
        write(
            f"{len(s.no_requests)} test(s) marked header_capture captured no request:", yellow=True
        )
        for nodeid, policy in s.no_requests:
            write(f"  {nodeid} ({'failed' if policy == 'fail' else 'warned'})", yellow=True)
    for path in s.written:
        write(f"wrote {path}")
    for problem in s.unwritten:
        write(f"could not write {problem}", red=True)
    for withheld in s.withheld:
        write(f"not written (only a test that passes writes): {withheld}", yellow=True)
    for location, variable in refused:
        write(
            f"kept header snapshot {location}: syrupy would delete it, and CI never deletes"
            f" ({variable}); run --snapshot-update locally",
            red=True,
        )
    _unused(verdict, done, asked, write)
    if _actions.on_github_actions():
        _github(s)


def chain_lines(settings: RunState) -> list[str]:
    """The gate's coverage, per provider, over every captured test of the run."""
    if not settings.chain_tests:
        return []
    parts = [
        f"{provider} {settings.chain_seen[provider]} (judged {settings.chain_judged[provider]})"
        for provider in sorted(settings.chain_seen)
    ]
    line = f"prefix chain: {settings.chain_tests} captured test(s); requests per provider: " + (
        ", ".join(parts) if parts else "none"
    )
    if settings.chain_unrecognised:
        line += f"; {settings.chain_unrecognised} other request(s) not checked"
    left_out = settings.chain_non_cache
    if left_out:
        kinds = ", ".join(f"{what} {count}" for what, count in sorted(left_out.items()))
        line += (
            f"; {sum(left_out.values())} request(s) to endpoints that cache nothing, left out"
            f" ({kinds})"
        )
    if settings.chain_proofs:
        # A proof's requests are judged by prove_stable (every order against the first), not by
        # the gate: without this, a run of proofs only read "requests per provider: none".
        line += f"; {settings.chain_proofs} prove_stable call(s), judged by the proof"
    return [line]


def _toy(finding: dict[str, Any]) -> bool:
    return finding.get("severity") == "info" and finding.get("rule") == "below-minimum"


def rules_lines(settings: RunState) -> list[str]:
    """The cache rules' findings over the run: a count, then one line each (a `below-minimum`
    info, a toy request under the minimum, is counted, not listed: `harness lint` lists them)."""
    count = Counter(str(f.get("severity")) for f in settings.findings)
    found = [f for f in settings.findings if not _toy(f)]
    if not settings.findings:
        return []
    head = (
        f"cache rules: {len(settings.findings)} finding(s) ({count['error']} error(s),"
        f" {count['warning']} warning(s), {count['info']} info)"
    )
    toys = len(settings.findings) - len(found)
    if toys:
        head += (
            f"; {toys} request(s) under the model's minimum not listed (harness lint lists them)"
        )
    if not found:
        return [head]
    lines = [f"{head}:"]
    lines += [
        f"  {f['nodeid']}: request {f['request']}: {f['severity']} {f['rule']}: {f['message']}"
        for f in found[:MAX_FINDINGS]
    ]
    if len(found) > MAX_FINDINGS:
        lines.append(f"  … {len(found) - MAX_FINDINGS} more")
    return lines


def moves_line(nodeid: str, reason: str, settings: RunState) -> str:
    stale = ""
    if nodeid in settings.stale:  # a marker with only= waived nothing it names (said in setup)
        waived = reason.endswith(")") and " (only " in reason
        stale = (
            " [stale: nothing it names moved]" if waived else " [stale: marked, yet nothing moved]"
        )
    return f"{nodeid}: {reason}{stale}"


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


def _github(settings: RunState) -> None:
    from harness._shared._formats import code, text  # msgspec: only when there is a summary

    for drift in settings.drifts:
        print(
            _actions.annotation(
                drift["message"], file=drift["file"], line=drift["line"], title="header drift"
            )
        )
    for found in settings.findings:
        if found.get("severity") in ("error", "warning"):
            print(
                _actions.annotation(
                    f"request {found['request']}: {found['message']}",
                    file=found["path"],
                    line=found["line"],
                    title=f"cache rule {found['rule']}",
                    level=str(found["severity"]),
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
    # A test id, a marker's reason, a finding's message may hold Markdown: each is shown inert
    # (no image, link, @-mention or table break renders: `harness._shared._formats`).
    for drift in settings.drifts:
        lines += [f"### {code(str(drift['nodeid']), 300)}", ""]
        if drift.get("cost"):
            lines += [f"**Cost:** {text(str(drift['cost']))}", ""]
        lines += [drift["markdown"], ""]
    if settings.moves:
        lines += ["", "Tests marked `moves_header`:", ""]
        lines += [f"- {text(moves_line(node, why, settings))}" for node, why in settings.moves]
    lines += ["", *map(text, chain_lines(settings))] if settings.chain_tests else []
    if settings.findings:
        lines += ["", "### Cache rules", "", "| test | request | rule | severity | message |"]
        lines.append("|---|---|---|---|---|")
        lines += [
            f"| {code(str(f['nodeid']), 300, cell=True)} | {text(str(f['request']), 20)}"
            f" | {code(str(f['rule']), cell=True)} | {text(str(f['severity']), 20)}"
            f" | {text(str(f['message']), 400)} |"
            for f in settings.findings
        ]
    _actions.write_step_summary("\n".join(lines))
