"""The plugin's fixtures: what a test asks for by name.

`agent_harness`, `registration_shuffle` and `harness_settings` for the reference runtime's
scenarios; `harness_upstream` and `harness_capture_config` (a project overrides them in a
conftest, like pytest-recording's `vcr_config`), `header_capture` and the autouse interception
behind `@pytest.mark.header_capture`; `prove_stable`; `header_snapshot` (syrupy, one binary file
per snapshot). The plugin module imports them, so pytest registers them with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from harness._shared._ci import detect_ci
from harness._shared._distribution import install_command
from harness._shared._errors import HarnessError
from harness.pytest_plugin._api import AgentHarness, RegistrationShuffle, fail, report_drift
from harness.pytest_plugin._capture import MARKER, finish, intercepting, rules_for, session_for
from harness.pytest_plugin._state import CALL_PASSED, STATE, RunState

__all__ = [
    "agent_harness",
    "harness_capture_config",
    "harness_settings",
    "harness_upstream",
    "header_capture",
    "header_snapshot",
    "prove_stable",
    "registration_shuffle",
]


@pytest.fixture
def harness_settings(request: pytest.FixtureRequest) -> RunState:
    return request.config.stash[STATE]


@pytest.fixture
def agent_harness(request: pytest.FixtureRequest) -> AgentHarness:
    """Record, replay, rebuild, shuffle and pin-check scenarios on the reference runtime."""
    return AgentHarness(request.config.stash[STATE], request.node)


@pytest.fixture
def registration_shuffle(request: pytest.FixtureRequest) -> RegistrationShuffle:
    """This test's seeded registration orders, and `assert_stable(build, units)`."""
    return RegistrationShuffle(request.config.stash[STATE], request.node)


@pytest.fixture
def harness_upstream() -> Any:
    """Where `header_capture` forwards in record and update modes: None is the network.

    Override it in a conftest to record against a stand-in (an `httpx2.MockTransport`).
    """
    return None


@pytest.fixture
def harness_capture_config() -> Any:
    """The project's capture settings, like pytest-recording's `vcr_config`: override it in a
    conftest to return a dict (see `harness.capture.CaptureConfig` for the keys)."""
    return {}


@pytest.fixture
def header_capture(
    request: pytest.FixtureRequest, harness_upstream: Any, harness_capture_config: Any
) -> Iterator[Any]:
    """A capture session for SDK clients: replays the test's cassette, or records it.

    Every captured test is gated on the prefix chain: each request must extend the cached
    prefix of the request it continues, unless the test is marked `moves_header(reason=...)`.
    """
    settings = request.config.stash[STATE]
    item = request.node
    session = session_for(item, settings, upstream=harness_upstream, config=harness_capture_config)
    with rules_for(settings, session):  # the project's rules rows, for the whole test
        yield session
        finish(item, session, settings, passed=item.stash.get(CALL_PASSED, False))


@pytest.fixture(autouse=True)
def _harness_intercept(request: pytest.FixtureRequest) -> Iterator[None]:
    """`@pytest.mark.header_capture`: every client the test uses sends through its session."""
    if request.node.get_closest_marker(MARKER) is None:
        yield
        return
    with intercepting(request.getfixturevalue("header_capture")):
        yield


@pytest.fixture
def prove_stable(request: pytest.FixtureRequest, header_capture: Any) -> Callable[..., Any]:
    """`prove_stable(build, units=None, permutations=None, hash_seeds=None)`, seeded for this
    test: `build` runs under perturbed asyncio, thread, filesystem and entry-point orders (and
    the units in new orders, when given); a drift fails the test with its cause."""
    from harness.prove._run_diff import HeaderDrift
    from harness.prove._stable import make_prove_stable_fixture

    settings = request.config.stash[STATE]
    item = request.node
    seed = settings.seed_for(item.nodeid)
    inner = make_prove_stable_fixture(
        seed, settings.shuffle, settings.reproduce(item.nodeid), header_capture
    )

    def prove(
        build: Any,
        units: Sequence[Any] | None = None,
        permutations: int | None = None,
        hash_seeds: Sequence[int] | int | None = None,
        **options: Any,
    ) -> Any:
        __tracebackhide__ = True
        try:
            return inner(build, units, permutations, hash_seeds, **options)
        except HeaderDrift as drift:
            report_drift(item, drift, seed)
            raise
        except HarnessError as error:  # a build that returned no header, a bad argument...
            # before `except Exception` below: it is one line, with no traceback
            if isinstance(error, AssertionError):
                raise
            notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", ()))
            fail(f"harness: {error}{notes}")
        except Exception as error:
            if item.get_closest_marker(MARKER) is None and _reached_for_the_network(error):
                error.add_note(
                    "harness: this test is not marked @pytest.mark.header_capture, so the"
                    " clients the build makes were not captured and went to the network; mark"
                    " it, and record once (pytest --harness-mode=record, against the API or a"
                    " harness_upstream stand-in)"
                )
            raise

    return prove


def _reached_for_the_network(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is a failed connection: an SDK's connection error,
    httpx's ConnectError, a refused socket or an unknown host."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = type(current).__name__
        if isinstance(current, OSError) or "Connect" in name or "Connection" in name:
            return True
        current = current.__cause__ or current.__context__
    return False


@pytest.fixture
def header_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's `snapshot`, storing a header's exact bytes in one binary file per snapshot."""
    try:
        from harness.pytest_plugin._snapshot import HeaderSnapshotExtension
    except ImportError:  # pragma: no cover - syrupy is in the pytest extra
        pytest.fail(
            f"harness: header_snapshot needs syrupy: {install_command('pytest')}", pytrace=False
        )
    found = detect_ci()
    if found is not None and request.config.getoption("update_snapshots", False):
        pytest.fail(
            f"harness: --snapshot-update writes and deletes header snapshots, and this is a CI"
            f" run ({found.describe()}): CI never writes; update them locally and commit them",
            pytrace=False,
        )
    return request.getfixturevalue("snapshot").use_extension(HeaderSnapshotExtension)
