"""What the pytest plugin does for a captured test: its session, its gate, and its report.

- `session_for`: the test's `CaptureSession`: its cassette, the run's mode, `harness_upstream`
  (out of vcrpy's sight: `harness.capture._unrecorded`), and `harness_capture_config` with a
  `@pytest.mark.header_capture(...)` marker's overrides.
- `rules_for`: the project's rules rows (its rules file, `harness_capture_config`'s `rules`) in
  force for the test; `rule_findings`: the cache rules on the test's requests (their findings go
  to the controller; an error, or a rule `harness_fail_on` names, fails the test).
- `finish`: at the end of the test, the prefix-chain gate (on by default, exempted by
  `moves_header(reason=...)`), replay errors the code under test swallowed, and the cassette to
  write; only a test that passed (setup, call and teardown) writes. Drift reaches the
  controller (the `header drift` summary, the GitHub step summary, `::error` annotations)
  through `queue_drift`.
- `drift_first`: the failure text of a capture error raised through an SDK: the drift report
  first, then only the frames of the project's own code (pytest's `--full-trace` shows all).
- `intercepting`: the marked test's interception, or one line on what to install.
"""

from __future__ import annotations

import functools
import sysconfig
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative

from harness._shared._ci import writes_allowed
from harness._shared._errors import CaptureError, CassetteMismatch, FixtureError, HarnessError
from harness.pytest_plugin._api import (
    PROP_EMPTY,
    PROP_FINDINGS,
    PROP_USED,
    fail,
    moves_header_reason,
    queue_drift,
    queue_write,
    send,
    shown,
)
from harness.pytest_plugin._budget import budget_of, check_budget, cost_delta
from harness.pytest_plugin._chain import marker_waivers, record_chain, waived_breaks
from harness.pytest_plugin._state import RunState

if TYPE_CHECKING:  # the capture package is imported when a test first uses it, not at startup
    from harness.capture._session import CaptureSession
    from harness.rules._engine import Finding, Policy
    from harness.rules._engine import Session as LintSession

__all__ = [
    "MARKER",
    "SESSION",
    "drift_first",
    "finish",
    "gate",
    "guard",
    "intercepting",
    "lint_sessions",
    "no_requests",
    "rule_findings",
    "rules_for",
    "session_for",
]

MARKER = "header_capture"
SESSION = pytest.StashKey["CaptureSession"]()  # the test's session, for the call-phase gate
_HARNESS_ROOT = str(Path(__file__).resolve().parent)


def session_for(
    item: pytest.Item, settings: RunState, *, upstream: Any, config: Any
) -> CaptureSession:
    """The capture session of `item` (a one-line test failure for a bad config or cassette)."""
    from harness._shared._paths import cassette_path_for, cassettes_folder, refuse_link_out
    from harness.capture._config import CaptureConfig
    from harness.capture._session import CaptureSession
    from harness.capture._unrecorded import unrecorded

    marker = item.get_closest_marker(MARKER)
    cassette = cassette_path_for(cassettes_folder(settings.fixtures), item.nodeid)
    problem = None
    try:
        budget_of(item, settings)  # a bad budget errors the test before it runs
        if settings.mode.writes:  # a cassettes folder linked out of the project: no write there
            refuse_link_out(cassette, settings.project)
        captured = CaptureConfig.of(config)
        if marker is not None and marker.kwargs:
            captured = captured.updated(marker.kwargs, where=f"@pytest.mark.{MARKER}")
        session = CaptureSession.for_test(
            cassette,
            settings.mode,
            writes_allowed=writes_allowed(),
            upstream=unrecorded(upstream),
            record_hint="record it locally: pytest --harness-mode=update-new-only",
            config=captured,
        )
        session.moves_header = moves_header_reason(item)
        session.waivers = [*marker_waivers(item, session), *captured.known_moves]
    except (FixtureError, HarnessError) as error:
        problem = str(error)
    if problem is not None:
        fail(f"harness: {problem}")  # outside the except: pytest would chain the error to it
    session.test = item.nodeid
    send(item, PROP_USED, str(session.cassette))
    item.stash[SESSION] = session
    return session


@contextmanager
def intercepting(session: CaptureSession) -> Iterator[None]:
    """`session.intercept()` around a marked test. With neither httpx2 nor httpx installed, the
    test fails with the one line naming the extra to install (failed outside the `except`, or
    pytest would chain the error's own report to it)."""
    with ExitStack() as stack:
        problem = None
        try:
            stack.enter_context(session.intercept())
            stack.enter_context(guard(session))
        except HarnessError as error:
            problem = str(error)
        if problem is not None:
            fail(f"harness: {problem}")
        yield


def guard(session: CaptureSession) -> Any:
    """No silent pass: a client the capture does not see fails the test (`_guard`)."""
    from harness._shared._ci import detect_ci
    from harness.capture._guard import guarding

    return guarding(session, session.config, ci=detect_ci() is not None)


def no_requests(item: pytest.Item, session: CaptureSession, settings: RunState) -> None:
    """A marked test that captured no request: a warning in record modes, a failure in check
    mode (`no_requests` in harness_capture_config); the summary lists it either way."""
    __tracebackhide__ = True
    from harness._shared._record_mode import RecordMode

    policy = session.config.no_requests
    if policy == "ignore" or item.get_closest_marker(MARKER) is None:
        return
    if session.hosts_seen or session.proving_calls:  # prove_stable may judge returned headers
        return
    if policy == "auto":
        policy = "fail" if settings.mode == RecordMode.CHECK else "warn"
    send(item, PROP_EMPTY, policy)
    passed = sorted(session.hosts_passed)
    where = (
        f"its requests went to {', '.join(passed[:5])}, which the capture does not capture: add"
        ' the host to harness_capture_config\'s hosts (e.g. {"hosts": ["' + passed[0] + '"]})'
        if passed
        else "no request reached a host the capture captures (the providers' hosts, and"
        " harness_capture_config's hosts and local_hosts: a base_url on another host needs it"
        " in hosts)"
    )
    text = (
        f"harness: the test is marked {MARKER} but captured no request: {where}; nothing was"
        ' recorded or gated (set no_requests="ignore" in harness_capture_config, or the marker,'
        " if that is expected)"
    )
    if policy == "fail":
        fail(text)
    path, line, _ = item.location
    warnings.warn_explicit(
        NoRequestsWarning(text.removeprefix("harness: ")),
        NoRequestsWarning,
        filename=str(item.config.rootpath / path),
        lineno=(line or 0) + 1,
    )


class NoRequestsWarning(UserWarning):
    """A test marked header_capture captured no request (record modes; check mode fails it)."""


def gate(item: pytest.Item, session: CaptureSession, settings: RunState) -> None:
    """After a test body passed: fail it on replay errors its code swallowed, and on a prefix-chain
    break (unless it is marked `moves_header`). Runs in the call phase, so the test fails."""
    __tracebackhide__ = True
    from harness.providers._openai import PerRunCacheKeyWarning, per_run_key

    if any(r.split is not None and per_run_key(r.split.view.settings) for r in session.requests):
        path, line, _ = item.location
        warnings.warn_explicit(
            PerRunCacheKeyWarning(
                "the requests carry a prompt_cache_key made anew for every run (openai-agents'"
                " default): each run misses the cache of the runs before it; give the run a"
                " stable key (RunConfig(group_id=...), or"
                ' ModelSettings(extra_args={"prompt_cache_key": ...}))'
            ),
            PerRunCacheKeyWarning,
            filename=str(item.config.rootpath / path),
            lineno=(line or 0) + 1,
        )
    if session.errors:  # replay errors (and blocked clients) the code under test may swallow
        fail("\n\n".join(map(str, _distinct(session.errors))))
    no_requests(item, session, settings)
    errors = [
        finding
        for finding in rule_findings(item, session, settings)
        if _fails(finding) or _refuses_recording(finding, session)
    ]
    gated = session.config.prefix_chain and session.moves_header is None
    breaks = waived_breaks(session, session.prefix_breaks()) if gated else []
    if not breaks:
        if errors:
            lines = "\n".join(f"  {finding.to_text()}" for finding in errors)
            volatile = any(_refuses_recording(finding, session) for finding in errors)
            why = (
                "; a volatile value in the cached prefix refuses the recording, nothing is"
                ' written (pin it, or set volatile_in_prefix="warn" in harness_capture_config)'
                if volatile
                else ""
            )
            fail(
                f"harness: {len(errors)} cache rule finding(s) fail this test (errors, or rules"
                f" harness_fail_on names{why}):\n{lines}"
            )
        check_budget(item, session, settings, lint_sessions(item, session, settings))
        return
    text = "\n\n".join(b.to_text() for b in breaks)
    first = breaks[0].to_text().splitlines()[0]
    markdown = "\n\n".join(
        f"**{b.to_text().splitlines()[0]}**\n\n{b.report.to_markdown()}" for b in breaks
    )
    cost = cost_delta(session, settings, lint_sessions(item, session, settings), breaks[0].report)
    queue_drift(item, first, markdown, settings.seed_for(item.nodeid), cost)
    fail(
        f"harness: the prefix-chain gate failed: {len(breaks)} request(s) do not extend the"
        " cached prefix of the request they continue (mark the test"
        ' @pytest.mark.moves_header(reason="...") if the move is deliberate; nothing is'
        f" written){f'; cost: {cost}' if cost else ''}\n\n{text}"
    )


def _fails(finding: Finding) -> bool:
    return finding.severity == "error"


def _refuses_recording(finding: Finding, session: CaptureSession) -> bool:
    """A volatile value in the cached prefix while recording: the cassette would hold bytes the
    next run cannot send again (`volatile_in_prefix` in harness_capture_config)."""
    return (
        finding.rule == "volatile-in-prefix"
        and session.mode.writes
        and session.config.volatile_in_prefix == "fail"
    )


def project_rules(settings: RunState) -> tuple[list[Any], Policy]:
    """The project's rules rows and policy (its rules file, `harness_fail_on`), read once."""
    if settings.rules is None:
        from harness.rules._project import policy_of, rows_of
        from harness.rules._project import project_rules as files_of

        files = files_of(settings.rootdir, [settings.rules_file] if settings.rules_file else [])
        policy = policy_of(files, settings.fail_on, where="harness_fail_on")
        settings.rules = (rows_of(files), policy)
    rows, policy = settings.rules
    return rows, policy


@contextmanager
def rules_for(settings: RunState, session: CaptureSession) -> Iterator[None]:
    """The project's rows in force for the test (`harness_capture_config`'s first); a bad rules
    file or rule name fails the test in one line."""
    from harness.providers._pack import overlay

    try:
        rows, _ = project_rules(settings)
    except HarnessError as error:
        fail(f"harness: {error}")
    found = [*session.config.rules, *rows]
    if not found:
        yield
        return
    with overlay(found):
        yield


def lint_sessions(
    item: pytest.Item, session: CaptureSession, settings: RunState, live: Any = None
) -> list[LintSession]:
    """The test's requests as the rules and the cost model read them: one session a segment
    (`live`: a request the replay refused, added to the last: what the code sent)."""
    from harness.cache._analysis import LintRequest
    from harness.rules._engine import Session

    where = str(session.cassette) if session.cassette is not None else item.nodeid
    with suppress(ValueError):
        where = str(Path(where).relative_to(settings.rootdir))
    found: list[LintSession] = []
    offset = 0
    segments = session.segments()
    if live is not None and getattr(live, "split", None) is not None:
        segments = [*segments[:-1], [*(segments[-1] if segments else []), live]]
    for segment in segments:
        requests = []
        for index, captured in enumerate(segment):
            body = captured.json()
            requests.append(
                LintRequest(
                    index,
                    body if isinstance(body, dict) else {},
                    url=captured.url,
                    headers=captured.headers,
                    method=captured.method,
                    split=captured.split,
                    presplit=True,
                )
            )
        found.append(Session(where, requests, offset=offset))
        offset += len(segment)
    return found


def rule_findings(item: pytest.Item, session: CaptureSession, settings: RunState) -> list[Finding]:
    """The cache rules on the test's requests, the project's policy applied; the controller is
    told (the `header drift` summary, GitHub's annotations). The gate reports its own certain
    breaks: only its warnings (an effect the rules do not know for certain) are findings."""
    import msgspec

    from harness.rules._registry import lint

    _, policy = project_rules(settings)
    found: list[Finding] = []
    for lint_session in lint_sessions(item, session, settings):
        for finding in lint(lint_session):
            if finding.rule == "prefix-broken" and (
                finding.severity == "error"
                or session.moves_header is not None
                or not session.config.prefix_chain
            ):
                continue
            found.append(policy.apply(finding))
    if found:
        path, line, _ = item.location
        send(
            item,
            PROP_FINDINGS,
            [
                {
                    **msgspec.to_builtins(finding),
                    "nodeid": item.nodeid,
                    "path": path,
                    "line": (line or 0) + 1,
                }
                for finding in found
            ],
        )
    return found


def finish(item: pytest.Item, session: CaptureSession, settings: RunState, *, passed: bool) -> None:
    """At teardown: report replay drift, count the gate's coverage, and hand over the cassette
    when the test's call passed (a test that failed, skipped or failed as expected holds a
    partial conversation: it writes nothing; the controller also withholds the write when the
    setup or the teardown did not pass)."""
    finished = session.finish()  # SecretLeak propagates: the test errors, no write
    seed = settings.seed_for(item.nodeid)
    mismatches = [e for e in _distinct(session.errors) if isinstance(e, CassetteMismatch)]
    for error in mismatches:
        markdown = error.report.to_markdown() if error.report is not None else ""
        sessions = lint_sessions(item, session, settings, error.live)
        cost = cost_delta(session, settings, sessions, error.report)
        queue_drift(item, str(error).splitlines()[0], markdown or str(error), seed, cost)
    moved = len(finished.prefix_breaks) if session.config.prefix_chain else 0
    if session.moves_header is None:  # a marker's only=: the moves it waived
        moved = sum(1 for _, w in session.waived if not w.source.endswith("known_moves"))
    record_chain(item, session, moved=moved)
    if passed:
        queue_write(item, finished.files)


@functools.cache
def _hidden_roots() -> tuple[str, ...]:
    """The installation's folders, whose frames a capture failure leaves out (asked on the first
    failure: `sysconfig` costs milliseconds a pytest run that captures nothing should not pay)."""
    paths = sysconfig.get_paths()
    return tuple({paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})


def drift_first(excinfo: pytest.ExceptionInfo[BaseException]) -> ReprExceptionInfo | None:
    """A capture error's failure: the report, then the project's own frames only (a native-style
    traceback repr, so the short summary and pytest-xdist treat it as any other failure)."""
    error = capture_error_in(excinfo.value)
    if error is None:
        return None
    kept: list[str] = []
    hidden = 0
    for entry in excinfo.traceback:
        path = str(entry.path)
        if path.startswith(_hidden_roots()) or path.startswith(_HARNESS_ROOT):
            hidden += 1
            continue
        statement = str(entry.statement).strip().splitlines()
        line = f"  {_relative(path)}:{entry.lineno + 1} in {entry.name}"
        kept.append(line + (f"\n      {statement[0]}" if statement else ""))
    name = type(error).__name__
    lines = [f"harness.{name}: {error}", "", "sent from (your code):", *kept]
    if hidden:
        lines.append(
            f"  ({hidden} frames of the SDK, the HTTP library and the harness hidden;"
            " pytest --full-trace shows them)"
        )
    last = excinfo.traceback[-1] if excinfo.traceback else None
    crash = ReprFileLocation(
        path=_relative(str(last.path)) if last is not None else "",
        lineno=last.lineno + 1 if last is not None else 0,
        message=shown(f"harness.{name}: {str(error).splitlines()[0]}"),
    )
    text = shown("\n".join(lines)) + "\n"  # redacted, and safe to print on GitHub Actions
    return ReprExceptionInfo(reprtraceback=ReprTracebackNative([text]), reprcrash=crash)


def capture_error_in(error: BaseException | None, depth: int = 0) -> CaptureError | None:
    """The capture error an exception is or wraps: frameworks re-raise it as their own error
    (`raise ... from`) or in an exception group (anyio task groups)."""
    if error is None or depth > 8:
        return None
    if isinstance(error, CaptureError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = capture_error_in(inner, depth + 1)
            if found is not None:
                return found
    return capture_error_in(error.__cause__ or error.__context__, depth + 1)


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def _distinct(errors: list[CaptureError]) -> list[CaptureError]:
    seen: dict[str, CaptureError] = {}
    for error in errors:
        seen.setdefault(str(error), error)
    return list(seen.values())
