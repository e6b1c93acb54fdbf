"""A newcomer's first five minutes, from the built wheel: `harness demo` in an empty folder,
`harness init` in a new project, and `pytest` there.

The wheel is built from this checkout and installed into a fresh virtual environment (no system
site-packages) with exactly the distributions it declares, in two steps, as a user installs it:
first the bare distribution (its `dependencies`), then its `pytest` extra. Those distributions are
not downloaded: each is linked into the new environment from this suite's environment, which
already holds them (`pip install -e '.[test]'`). CI's only network is the package registry, and a
download of pytest and its dependencies would make this test slow and flaky; linking keeps it to
a few seconds and still proves the point, since the new environment holds nothing else (no httpx,
no pytest before the extra; httpx2 only as genai-prices' own dependency, its price updater's
client, which the harness never starts): an import of anything undeclared fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness._shared._distribution import DISTRIBUTION, install_command
from tests.support.paths import ROOT, SHIPPED

# A wheel build, a virtual environment, and the commands run in it.
pytestmark = pytest.mark.slow

PIP = (sys.executable, "-m", "pip", "-q")  # this suite's pip


class Environment:
    """A fresh virtual environment and the commands a user runs in it."""

    def __init__(self, folder: Path) -> None:
        venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
        self.bin = folder / ("Scripts" if sys.platform == "win32" else "bin")
        self.python = self.bin / "python"
        self.site = Path(self.run_python("import sysconfig; print(sysconfig.get_path('purelib'))"))
        self.linked: set[str] = set()

    def environ(self) -> dict[str, str]:
        drop = ("PYTEST_", "PYTHON", "VIRTUAL_ENV", "GITHUB_", "CI")
        environ = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        environ["PATH"] = str(self.bin) + os.pathsep + os.defpath
        # The environment's site-packages links to this suite's installed packages: a cache
        # written there (pytest's assertion rewrite of a plugin's package, anyio's) would land
        # beside those files naming this environment's path, and later runs would load it.
        environ["PYTHONDONTWRITEBYTECODE"] = "1"
        return environ

    def run(self, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=self.environ(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def run_python(self, code: str, cwd: Path | None = None) -> str:
        done = self.run([str(self.python), "-c", code], cwd or self.bin)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def install_wheel(self, wheel: Path) -> None:
        """pip (this suite's) installs into the new environment: its console script too."""
        done = subprocess.run(
            [*PIP, "--python", str(self.python), "install", "--no-deps", "--no-index", str(wheel)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    def link(self, requirements: Iterable[Requirement], extras: set[str]) -> list[str]:
        """Link the distributions `requirements` (under `extras`) need, recursively, from this
        suite's environment; return the names linked now."""
        now: list[str] = []
        pending = [(req, extras) for req in requirements]
        while pending:
            requirement, wanted = pending.pop()
            if requirement.marker and not any(
                requirement.marker.evaluate({"extra": extra}) for extra in wanted | {""}
            ):
                continue
            name = canonicalize_name(requirement.name)
            if name in self.linked:
                continue
            dist = metadata.distribution(name)
            if dist.files is None:
                pytest.fail(f"{name} has no RECORD in this environment: cannot link it")
            for top in sorted({file.parts[0] for file in dist.files}):
                if top in ("..", "__pycache__") or (self.site / top).exists():
                    continue
                (self.site / top).symlink_to(Path(dist.locate_file(top)))
            self.linked.add(name)
            now.append(name)
            pending += [(Requirement(r), set(requirement.extras)) for r in dist.requires or []]
        return sorted(now)


def build_wheel(out: Path) -> Path:
    """The wheel a release would upload, built from this checkout (hatchling, already installed
    by the test extra, so no isolated build environment is downloaded)."""
    done = subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def declared(wheel_dist: metadata.Distribution, extra: str) -> list[Requirement]:
    """The wheel's own Requires-Dist lines that `extra` ("" for none) brings."""
    found = []
    for line in wheel_dist.requires or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None:
            brought = extra == ""
        else:
            brought = extra != "" and marker.evaluate({"extra": extra})
        if brought:
            found.append(requirement)
    return found


CAPTURE_IN_THE_BARE_INSTALL = """
import importlib.util, harness, harness.capture
from harness.capture import CaptureSession
print(harness.__file__)
print([n for n in ("httpx", "httpx2", "pytest") if importlib.util.find_spec(n) is not None])
with CaptureSession().intercept():
    print("captures")
"""


def test_from_the_wheel_demo_init_and_pytest_work_in_a_fresh_environment(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    assert wheel.name.startswith(DISTRIBUTION.replace("-", "_") + "-")
    env = Environment(tmp_path / "venv")
    env.install_wheel(wheel)
    (info,) = env.site.glob("*.dist-info")
    wheel_dist = metadata.PathDistribution(info)
    assert wheel_dist.metadata["Name"] == DISTRIBUTION
    assert not (env.site / "fixtures").exists(), "the scenarios live inside the package"
    base = env.link(declared(wheel_dist, ""), set())
    assert {"msgspec", "deepdiff"} <= set(base)

    # harness demo, in an empty folder: the packaged scenarios, and it says so.
    empty = tmp_path / "empty"
    empty.mkdir()
    demo = env.run([str(env.bin / "harness"), "demo"], empty)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    packaged = env.site / "harness" / "_demo" / "fixtures"
    assert demo.stdout.splitlines()[0] == (
        f"harness demo: {len(SHIPPED)} shipped scenarios from {packaged}, "
        f"the copy packaged with {DISTRIBUTION} 0.1.0"
    )
    assert all(name in demo.stdout for name in SHIPPED)
    assert demo.stdout.rstrip().endswith(
        f"{len(SHIPPED)} of {len(SHIPPED)} scenarios behave as expected."
    )
    assert list(empty.iterdir()) == [], "the demo writes nothing"

    # The gate in that empty folder refuses; it never checks the demo's scenarios instead.
    check = env.run([str(env.bin / "harness"), "check"], empty)
    assert check.returncode == 2
    assert check.stderr.count("\n") == 1 and "fixtures: does not exist" in check.stderr
    assert not any(name in check.stdout for name in SHIPPED)

    # The bare install prices from genai-prices, which brings httpx2 (its updater's client, never
    # started): capture works there without the extra. (Without either client, capture is one
    # line naming the extra: tests/capture/test_capture_libraries.py.)
    where, present, said = env.run_python(CAPTURE_IN_THE_BARE_INSTALL, empty).splitlines()
    assert where.startswith(str(env.site / "harness")), "the wheel's copy, not this checkout"
    assert present == "['httpx2']"
    assert said == "captures"
    assert "genai-prices" in base and "pydantic" in base

    # harness cost prices from the bundled registry in the bare install
    costs = tmp_path / "costs"
    costs.mkdir()
    body = {
        "model": "claude-sonnet-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    line = {"url": "https://api.anthropic.com/v1/messages", "body": body}
    (costs / "s.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    priced = env.run([str(env.bin / "harness"), "cost", "s.jsonl", "--format", "json"], costs)
    assert priced.returncode == 0, priced.stdout + priced.stderr
    assert json.loads(priced.stdout)["prices"][0]["sources"][0]["source"] == "genai-prices"

    # harness init in a new project, before pytest is installed: it says what to install.
    project = tmp_path / "acme"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "acme"\nversion = "0.1"\n')
    init = env.run([str(env.bin / "harness"), "init"], project)
    assert init.returncode == 0, init.stdout + init.stderr
    assert f"the plugin needs it: {install_command('pytest')}" in init.stdout
    assert (
        init.stdout.split("\nnext:\n")[1]
        .splitlines()[0]
        .startswith("  pytest tests/test_prompt_cache.py")
    )

    # The pytest extra, then pytest in the project: the generated proof passes as generated.
    added = env.link(declared(wheel_dist, "pytest"), {"pytest"})
    assert {"pytest", "pytest-randomly", "syrupy"} <= set(added)
    assert "httpx" not in env.linked
    tests = env.run([str(env.python), "-m", "pytest", "-p", "no:cacheprovider"], project)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout
    assert "configfile: pytest.ini" in tests.stdout
    assert "harness: mode check" in tests.stdout and "no header drift" in tests.stdout
