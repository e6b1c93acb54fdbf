"""The plugin's run state: one object per pytest run, made from its options and ini values.

Seeding: each test's shuffle seed is `crc32("<run seed>:<node id>")`, computed without touching
the global `random`. The run seed is pytest-randomly's (`--randomly-seed`) when that plugin is
active; an explicit `--harness-seed` on the command line wins over it; with pytest-randomly absent
or disabled it is `--harness-seed` (or the `harness_seed` ini value), and otherwise a fresh one.
`--harness-seed=last` reuses the previous run's seed from the pytest cache.
"""

from __future__ import annotations

import os
import random
import shlex
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from harness._shared._ci import detect_ci
from harness._shared._errors import UsageError
from harness._shared._record_mode import RecordMode

__all__ = ["CACHE_KEY", "CALL_PASSED", "DEFAULT_SHUFFLE", "STATE", "RunState", "state_from"]

CACHE_KEY: Final = "harness/seed"
DEFAULT_SHUFFLE: Final = 8


@dataclass
class RunState:
    """The plugin's one run-state object: the run's settings, and what the controller learns
    from the tests' reports (plain data, so it crosses pytest-xdist).

    A worker holds only the settings; the controller (no xdist, or xdist's main process) fills
    the rest: drift and `moves_header` uses for the summary, files written or not, the prefix
    chain's coverage, and what decides which recordings the run proved unused.
    """

    mode: RecordMode
    shuffle: int
    seed: int
    seed_source: str  # "pytest-randomly", "--harness-seed", "last run", "random"
    fixtures: Path
    randomly_installed: bool
    drifts: list[dict[str, Any]] = field(default_factory=list)
    moves: list[tuple[str, str]] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    unwritten: list[str] = field(default_factory=list)  # writes the controller could not make
    digests: dict[Path, bytes] = field(default_factory=dict)  # what was written where
    chain_tests: int = 0  # captured tests the prefix-chain gate ran on
    chain_seen: Counter[str] = field(default_factory=Counter)  # provider requests, by provider
    chain_judged: Counter[str] = field(default_factory=Counter)  # of those, judged
    chain_unrecognised: int = 0  # captured requests no provider claimed
    chain_non_cache: Counter[str] = field(default_factory=Counter)  # token counting... by what
    chain_proofs: int = 0  # prove_stable calls captured (their requests are judged by the proof)
    stale: set[str] = field(default_factory=set)  # moves_header tests whose header did not move
    known_moves: dict[str, bool] = field(default_factory=dict)  # known_moves reason -> used
    no_requests: list[tuple[str, str]] = field(default_factory=list)  # (nodeid, "warn"/"fail")
    # what decides which recordings the run proved unused (`harness.pytest_plugin._unused`)
    used: set[str] = field(default_factory=set)  # resolved paths tests reported using
    collected: set[str] = field(default_factory=set)  # node ids of the collected tests
    ran: set[str] = field(default_factory=set)  # node ids whose teardown was reported
    not_passed: dict[str, str] = field(default_factory=dict)  # node id -> "skipped", "failed"
    collection_errors: int = 0
    left_out: list[str] = field(default_factory=list)  # test files pytest was told to ignore
    deselected: int = 0
    deselected_ids: set[str] = field(default_factory=set)
    skipped_modules: list[str] = field(default_factory=list)  # skipped at collection
    found: set[str] = field(default_factory=set)  # node ids the collectors reported
    unclean: set[str] = field(default_factory=set)  # tests with a phase that did not pass, so far
    withheld: list[str] = field(default_factory=list)  # files a test that did not pass asked for
    # the cache rules: the project's choices (ini values, read as given; parsed on first use)
    fail_on: str = ""  # harness_fail_on
    rules_file: str = ""  # harness_rules (default: harness-rules.json at the rootdir)
    budget: str = ""  # harness_cache_budget: the default cache budget ("max_usd=0.5 ...")
    rootdir: Path = field(default_factory=Path.cwd)
    rules: Any = None  # the project's rows and policy, once read (`_capture.project_rules`)
    findings: list[dict[str, Any]] = field(default_factory=list)  # what the rules found

    @property
    def project(self) -> Path:
        """What the run's writes stay in: the rootdir, or the folder holding the fixtures folder
        when it was configured outside the rootdir (`_paths.refuse_link_out`)."""
        fixtures = Path(os.path.abspath(self.fixtures))
        root = Path(os.path.abspath(self.rootdir))
        return root if root == fixtures or root in fixtures.parents else fixtures.parent

    def outcome(self, nodeid: str, when: str, outcome: str, xfail: bool) -> None:
        if when == "teardown":
            self.ran.add(nodeid)
        if outcome == "failed" or (outcome == "skipped" and nodeid not in self.not_passed):
            self.not_passed[nodeid] = "expected to fail" if xfail else outcome
        if outcome != "passed":
            self.unclean.add(nodeid)

    def writes_of(self, nodeid: str) -> bool:
        """Whether the test may write (asked at its teardown report): only a test whose setup,
        call and teardown all passed writes (a test stopped halfway holds a partial recording)."""
        clean = nodeid not in self.unclean
        self.unclean.discard(nodeid)
        return clean

    def seed_for(self, nodeid: str) -> int:
        return zlib.crc32(f"{self.seed}:{nodeid}".encode())

    def reproduce(self, nodeid: str) -> str:
        if self.seed_source == "pytest-randomly":
            flags = f"-p randomly --randomly-seed={self.seed}"
        elif self.randomly_installed:
            flags = f"-p no:randomly --harness-seed={self.seed}"
        else:
            flags = f"--harness-seed={self.seed}"
        if self.shuffle != DEFAULT_SHUFFLE:
            flags += f" --harness-shuffle={self.shuffle}"
        return f"pytest {shlex.quote(nodeid)} {flags}"


def state_from(config: pytest.Config) -> RunState:
    """The run's settings from its options and ini values; a UsageError for a bad one."""
    value = str(_option(config, "mode"))
    try:
        mode = RecordMode.parse(value)
    except UsageError:
        raise pytest.UsageError(
            f"harness: harness_mode must be one of {RecordMode.listed()}, not {value!r}"
        ) from None
    found = detect_ci()
    if mode.writes and found is not None:
        raise pytest.UsageError(
            f"harness: --harness-mode={mode} writes fixtures, and this is a CI run"
            f" ({found.describe()}). CI never writes: run `pytest --harness-mode=update` "
            "locally, review the diff, and commit the files."
        )
    try:
        shuffle = int(_option(config, "shuffle"))
    except ValueError:
        raise pytest.UsageError("harness: --harness-shuffle takes a whole number") from None
    if shuffle < 1:
        raise pytest.UsageError("harness: --harness-shuffle must be at least 1")
    seed, source = _resolve_seed(config)
    cache = getattr(config, "cache", None)
    if cache is not None and not hasattr(config, "workerinput"):
        cache.set(CACHE_KEY, seed)
    fixtures = Path(str(_option(config, "fixtures")))
    if not fixtures.is_absolute():
        fixtures = config.rootpath / fixtures
    return RunState(
        mode,
        shuffle,
        seed,
        source,
        fixtures,
        config.pluginmanager.hasplugin("randomly"),
        fail_on=" ".join(str(item) for item in config.getini("harness_fail_on")),
        rules_file=str(config.getini("harness_rules") or ""),
        budget=str(config.getini("harness_cache_budget") or ""),
        rootdir=config.rootpath,
    )


def _option(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"harness_{name}")
    return value if value is not None else config.getini(f"harness_{name}")


def _resolve_seed(config: pytest.Config) -> tuple[int, str]:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "harness_seed" in workerinput:
        return int(workerinput["harness_seed"]), str(workerinput["harness_seed_source"])
    explicit = config.getoption("harness_seed")
    randomly = getattr(config.option, "randomly_seed", None)
    if (
        explicit is None
        and config.pluginmanager.hasplugin("randomly")
        and isinstance(randomly, int)
    ):
        return randomly, "pytest-randomly"
    value = explicit if explicit is not None else config.getini("harness_seed")
    cache = getattr(config, "cache", None)
    if value == "last":
        previous = cache.get(CACHE_KEY, None) if cache is not None else None
        if isinstance(previous, int):
            return previous, "last run"
        return random.Random().getrandbits(32), "random (no previous run)"
    if value:
        try:
            return int(value), "--harness-seed"
        except ValueError:
            raise pytest.UsageError(
                f"harness: --harness-seed takes an integer or 'last', not {value!r}"
            ) from None
    return random.Random().getrandbits(32), "random"


STATE = pytest.StashKey[RunState]()  # on the config: the run's state
# On an item: its call phase passed. Absent when setup failed or skipped (the call never ran);
# False when the call failed, skipped or failed as expected (`xfail`): then nothing is written.
CALL_PASSED = pytest.StashKey[bool]()
