"""Run a case as a user would, through the `harness` command, and judge what it printed.

Each case's requests are written to a folder of their own, as a user keeps them: a pair as
`a.json` and `b.json`, a request as `request.json`, a session as `session.jsonl` (one
`{"url", "body"}` line per request). Then `harness diff a.json b.json --format json`, `harness
lint PATH --format json` or `harness cost PATH --format json` runs in-process
(`harness.cli.main`, output captured, the folder as the working directory so no project file of
this repository is read), and its JSON is held against the case's expectation. Tokens are the
harness's documented estimate (bytes / 4) on every machine: a tokenizer whose encoding happens to
be cached here (tiktoken, for OpenAI requests) is set aside for the run, as on a machine without
it (CI), so the figure does not depend on the machine. Whatever the CLI
lacks to judge a case (a key, a verdict, exit 2) is a disagreement that says so, never a pass.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cache import _counters
from harness.cli import main
from tests.rules.cases._build import build_requests
from tests.rules.cases._model import (
    BREAK,
    NO_BREAK,
    Case,
    CaseFile,
    CostExpect,
    DiffExpect,
    LintExpect,
    Source,
)

__all__ = ["Outcome", "run_case", "write_case"]


@dataclass
class Outcome:
    """A case's result: whether the CLI agrees, what was expected and what it said."""

    case: Case
    provider: str
    sources: list[Source]
    requests: int
    agrees: bool
    expected: str
    got: str
    problems: list[str] = field(default_factory=list)

    @property
    def shape(self) -> str:
        """`pair`, `request` or `session`: what the case feeds the CLI."""
        if self.case.diff is not None:
            return "pair"
        return "request" if self.requests == 1 else "session"

    def explain(self) -> str:
        """The failure message: the case, expected vs got, why, and the source with its quote."""
        lines = [
            f"{self.case.id} ({self.provider}, {self.case.check}): {self.case.title}",
            f"  expected: {self.expected}",
            f"  got:      {self.got}",
            *(f"  - {problem}" for problem in self.problems),
        ]
        for source in self.sources:
            lines += [f"  source:   {source.url}", f'  quote:    "{source.quote}"']
        if self.case.why:
            lines.append(f"  why:      {self.case.why}")
        return "\n".join(lines)


def write_case(case: Case, file: CaseFile, folder: Path) -> list[str]:
    """Write `case`'s requests into `folder` as a user keeps them; the paths to give the CLI."""
    default = case.url or file.url
    requests = [
        {"url": url or default, "body": body} if (url or default) else body
        for body, url in build_requests(case.requests, file.bodies)
    ]
    if case.diff is not None:
        names = ["a.json", "b.json"]
        for name, request in zip(names, requests, strict=True):
            (folder / name).write_text(json.dumps(request, indent=1), encoding="utf-8")
        return names
    if len(requests) == 1 and case.lint is not None:
        (folder / "request.json").write_text(json.dumps(requests[0], indent=1), encoding="utf-8")
        return ["request.json"]
    lines = "".join(json.dumps(request) + "\n" for request in requests)
    (folder / "session.jsonl").write_text(lines, encoding="utf-8")
    return ["session.jsonl"]


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """`folder` as the working directory, and no built-in tokenizer (bytes / 4), for the run."""
    before = Path.cwd()
    builtin = list(_counters._builtin)
    os.chdir(folder)
    _counters._builtin[:] = [None]  # looked up, and none: as where tiktoken has no cached file
    try:
        yield
    finally:
        _counters._builtin[:] = builtin
        os.chdir(before)


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def run_case(case: Case, file: CaseFile, sources: list[Source]) -> Outcome:
    """Run `case` through the CLI and judge it."""
    with tempfile.TemporaryDirectory(prefix="harness-case-") as tmp:
        folder = Path(tmp)
        paths = write_case(case, file, folder)
        with _inside(folder):
            if case.diff is not None:
                result = _cli("diff", *paths, "--format", "json")
            elif case.lint is not None:
                result = _cli("lint", *paths, "--format", "json")
            else:
                result = _cli("cost", *paths, "--format", "json")
    outcome = Outcome(case, file.provider, sources, len(case.requests), False, "", "")
    code, out, err = result
    try:
        printed: Any = json.loads(out)
    except ValueError:
        outcome.expected = _expected(case)
        outcome.got = f"exit {code}, no JSON: {(err or out).strip()[:300]}"
        outcome.problems.append("the CLI printed no JSON to judge")
        return outcome
    if case.diff is not None:
        _judge_diff(case.diff, printed, outcome)
    elif case.lint is not None:
        _judge_lint(case.lint, code, printed, outcome)
    elif case.cost is not None:
        _judge_cost(case.cost, code, printed, outcome)
    outcome.expected = _expected(case)
    outcome.agrees = not outcome.problems
    return outcome


def _expected(case: Case) -> str:
    if case.diff is not None:
        d = case.diff
        said = [f"verdict {d.verdict}"]
        if d.block is not None:
            said.append(f"block {d.block}")
        if d.invalidated is not None:
            said.append(f"invalidated {d.invalidated}")
        if d.invalidated_includes is not None:
            said.append(f"invalidated includes {d.invalidated_includes}")
        if d.tokens_lost is not None:
            said.append(f"tokens_lost {d.tokens_lost}")
        return ", ".join(said)
    if case.lint is not None:
        fires = [
            "/".join(
                str(x)
                for x in (f.rule or "(any rule)", f.severity, f"request {f.request}", f.message)
                if x is not None and x != "request None"
            )
            for f in case.lint.fires
        ]
        said = [f"fires {fires}" if fires else "no finding required"]
        if case.lint.silent:
            said.append(f"silent {case.lint.silent}")
        if case.lint.exit is not None:
            said.append(f"exit {case.lint.exit}")
        return ", ".join(said)
    assert case.cost is not None
    return ", ".join(
        f"{key} {value}" for key, value in _cost_fields(case.cost).items() if value is not None
    )


def _count_ok(expected: int | str, got: Any) -> bool:
    if not isinstance(got, int):
        return False
    return got > 0 if expected == ">0" else got == expected


def _names_a_change(verdict: Any) -> bool:
    """A verdict word that names a change (`tools_changed`, `unknown_setting_changed`...): a
    break, or a change of unknown effect; either way not the provider's "no break"."""
    return isinstance(verdict, str) and verdict.endswith("_changed")


def _judge_diff(expect: DiffExpect, printed: Any, outcome: Outcome) -> None:
    problems = outcome.problems
    if not isinstance(printed, dict):
        problems.append("the JSON is not an object")
        return
    identical = printed.get("identical")
    verdict = printed.get("verdict")
    invalidated = printed.get("invalidated") or []
    lost = printed.get("tokens_lost")
    outcome.got = (
        f"identical {identical}, verdict {verdict}, block {printed.get('block')}, "
        f"invalidated {invalidated}, tokens_lost {lost}"
    )
    word = expect.verdict
    if word == "identical":
        if identical is not True:
            problems.append("`identical` is not true for the same request")
    elif word == "extends":
        if identical is not False:
            problems.append("`identical` must be false for an extension (the bytes differ)")
        if verdict != "extends":
            problems.append(f"`verdict` is {verdict!r}, not 'extends'")
    elif word == "same":
        if identical is not True and (invalidated or _names_a_change(verdict)):
            problems.append(f"a change ({verdict}, {invalidated} lost) where the provider hits")
        if isinstance(lost, int) and lost > 0:
            problems.append(f"{lost} tokens claimed lost where the provider hits")
    else:
        if identical is not False:
            problems.append("`identical` must be false for a break")
        if word == BREAK:
            if not invalidated:
                problems.append("no level is said lost (`invalidated` is empty)")
        elif verdict != word:
            problems.append(f"`verdict` is {verdict!r}, not {word!r}")
    if word not in NO_BREAK:
        if expect.block is not None and printed.get("block") != expect.block:
            problems.append(f"`block` is {printed.get('block')!r}, not {expect.block!r}")
        if expect.invalidated is not None and set(invalidated) != set(expect.invalidated):
            problems.append(f"`invalidated` is {invalidated}, not {expect.invalidated}")
        if expect.invalidated_includes is not None:
            missing = [level for level in expect.invalidated_includes if level not in invalidated]
            if missing:
                problems.append(f"`invalidated` lacks {missing}")
        if expect.tokens_lost is not None:
            if lost is None:
                problems.append("the JSON has no `tokens_lost`")
            elif not _count_ok(expect.tokens_lost, lost):
                problems.append(f"`tokens_lost` is {lost}, not {expect.tokens_lost}")


def _judge_lint(expect: LintExpect, code: int, printed: Any, outcome: Outcome) -> None:
    problems = outcome.problems
    findings = printed.get("findings") if isinstance(printed, dict) else None
    if not isinstance(findings, list):
        outcome.got = f"exit {code}, no `findings`"
        problems.append("the JSON has no `findings` list")
        return
    said = [
        f"{f.get('rule')}/{f.get('severity')}@{f.get('request')}"
        for f in findings
        if isinstance(f, dict)
    ]
    outcome.got = f"exit {code}, findings {said}"
    # A request the CLI did not judge would make every `silent` expectation pass for nothing.
    if printed.get("unjudged"):
        problems.append(f"{printed['unjudged']} request(s) not judged: no provider recognised them")
    if printed.get("requests") != outcome.requests:
        problems.append(f"{printed.get('requests')} request(s) read, not {outcome.requests}")
    for wanted in expect.fires:
        if not any(
            isinstance(f, dict)
            and (wanted.rule is None or f.get("rule") == wanted.rule)
            and (wanted.severity is None or f.get("severity") == wanted.severity)
            and (wanted.request is None or f.get("request") == wanted.request)
            and (wanted.message is None or wanted.message in str(f.get("message", "")))
            for f in findings
        ):
            what = wanted.rule or f"a {wanted.severity or 'any'} finding"
            problems.append(f"no {what} as expected ({wanted.severity}, request {wanted.request})")
    for rule in expect.silent:
        extra = [f for f in findings if isinstance(f, dict) and f.get("rule") == rule]
        if extra:
            problems.append(f"{rule} fired: {extra[0].get('message', '')[:160]}")
    if expect.exit is not None and code != expect.exit:
        problems.append(f"exit {code}, not {expect.exit}")


def _cost_fields(expect: CostExpect) -> dict[str, Any]:
    return {
        "cache_read_tokens": expect.cache_read_tokens,
        "cache_write_tokens": expect.cache_write_tokens,
    }


def _judge_cost(expect: CostExpect, code: int, printed: Any, outcome: Outcome) -> None:
    totals = printed.get("totals") if isinstance(printed, dict) else None
    if not isinstance(totals, dict):
        outcome.got = f"exit {code}, no `totals`"
        outcome.problems.append("the JSON has no `totals`")
        return
    outcome.got = ", ".join(f"{key} {totals.get(key)}" for key in _cost_fields(expect))
    for key, wanted in _cost_fields(expect).items():
        if wanted is not None and not _count_ok(wanted, totals.get(key)):
            outcome.problems.append(f"`{key}` is {totals.get(key)}, not {wanted}")
