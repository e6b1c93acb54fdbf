"""Every install line a README shows works today, against the wheel this checkout builds.

Issue 34 (item 2): the examples' READMEs said `pip install harness` (an unrelated project on the
registry) and the CI section installed a distribution that is not published yet. Every
`pip install ...` in README.md and examples/*/README.md is read here and run: a line naming this
distribution or its wheel is resolved by pip (`--dry-run`, the built wheel as the only index), so
the name, the wheel's file name and every extra must be real; a line installing this clone
(`-e .`, `'.[test]'`) must name extras the project declares. Any other name fails: a README
installs nothing else by name.
"""

from __future__ import annotations

import email
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness._shared._distribution import DISTRIBUTION
from tests.project.test_wheel import build_wheel
from tests.support.paths import ROOT

READMES = [ROOT / "README.md", *sorted(ROOT.glob("examples/*/README.md"))]
_LINE = re.compile(r"pip install ([^`\n]+)")


def install_lines() -> list[tuple[str, str]]:
    """`(readme, what follows "pip install")` for every install line, up to `&&` or a comment."""
    found = []
    for readme in READMES:
        for match in _LINE.finditer(readme.read_text(encoding="utf-8")):
            line = match.group(1).split("&&")[0].split(" #")[0].strip()
            found.append((str(readme.relative_to(ROOT)), line))
    return found


def test_the_readmes_show_install_lines() -> None:
    lines = install_lines()
    assert len(lines) >= 5 and all(line for _, line in lines)
    assert {readme for readme, _ in lines} >= {
        "README.md",
        "examples/pydantic_ai_agent/README.md",
        "examples/openai_agents_agent/README.md",
    }


def _extras(spec: str) -> set[str]:
    found = re.search(r"\[([^\]]*)\]$", spec)
    return {extra.strip() for extra in found.group(1).split(",")} if found else set()


@pytest.mark.slow  # a wheel build and pip runs
def test_every_install_line_a_readme_shows_resolves_against_the_built_wheel(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        info = email.message_from_bytes(archive.read(name))
    provided = set(info.get_all("Provides-Extra") or [])
    assert provided >= {"pytest", "capture", "tokens", "test"}
    for readme, line in install_lines():
        check_line(readme, line, wheel, provided)


def check_line(readme: str, line: str, wheel: Path, provided: set[str]) -> None:
    """One README install line against the built `wheel` (see the module doc)."""
    for spec in (arg for arg in shlex.split(line) if not arg.startswith("-")):
        where = f"{readme}: pip install {line}"
        extras = _extras(spec)
        assert extras <= provided, f"{where}: no extra {sorted(extras - provided)}"
        if spec.split("[")[0] in (".", "./"):
            continue  # this clone, editable: the extras were the question
        if ".whl" in spec:
            named = Path(spec.split("[")[0]).name
            assert named == wheel.name, f"{where}: the wheel is {wheel.name}, not {named}"
            target = str(wheel) + (f"[{','.join(sorted(extras))}]" if extras else "")
        else:
            name = canonicalize_name(Requirement(spec).name)
            assert name == DISTRIBUTION, f"{where}: installs {name!r}, not {DISTRIBUTION}"
            target = spec
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
             "--no-deps", "--no-index", "--find-links", str(wheel.parent), target],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{where}: {done.stderr.strip()[-400:]}"
        assert "does not provide the extra" not in done.stderr, f"{where}: {done.stderr}"
        assert f"Would install {DISTRIBUTION}-0.1.0" in done.stdout, f"{where}: {done.stdout}"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("harness", "installs 'harness', not prompt-cache-harness"),  # the bug it is for
        ("'prompt-cache-harness[pytset]'", "no extra ['pytset']"),
        ("'/x/dist/prompt_cache_harness-9.9.9-py3-none-any.whl[pytest]'", "the wheel is"),
    ],
)
def test_a_line_for_another_project_a_missing_extra_or_another_wheel_is_refused(
    line: str, said: str, tmp_path: Path
) -> None:
    wheel = tmp_path / "prompt_cache_harness-0.1.0-py3-none-any.whl"
    with pytest.raises(AssertionError, match=re.escape(said)):
        check_line("README.md", line, wheel, {"pytest", "capture", "tokens", "test"})
