"""Where `harness demo` reads its scenarios: the copy packaged inside `harness`, else the
repository's.

The shipped scenarios and their pins live at the repository root (`fixtures/`, `snapshots/`),
where the test suite and `harness_collect` use them. The wheel carries a copy inside the package,
`harness/_demo/fixtures` and `harness/_demo/snapshots`, so the pins keep their place beside the
fixtures (`<fixtures>/../snapshots/headers`). An editable install (`pip install -e .`) has no
packaged copy; it reads the repository's, recognised by the `pyproject.toml` that declares this
distribution beside it (a folder that merely happens to be called `fixtures` next to the
installed package is not the demo).

Only the demo reads these: `check`, `refresh` and the other commands work on the project's own
folders and never fall back to the shipped scenarios (decision 0015).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from harness._shared._distribution import DISTRIBUTION, install_command, installed_version
from harness._shared._errors import FixtureError
from harness._shared._paths import FIXTURES

__all__ = ["PACKAGED", "DemoSource", "demo_source"]

_PACKAGE: Final = Path(__file__).resolve().parents[1]  # harness/, beside harness/scenarios
PACKAGED: Final = _PACKAGE / "_demo" / FIXTURES
_REPOSITORY: Final = _PACKAGE.parent


@dataclass(frozen=True)
class DemoSource:
    """The folder of shipped scenarios and, in words, which copy it is."""

    folder: Path
    origin: str


def demo_source(packaged: Path = PACKAGED, repository: Path = _REPOSITORY) -> DemoSource:
    """The packaged scenarios when installed from a wheel, else the repository's; one line
    naming what to do when neither is there."""
    if packaged.is_dir():
        version = installed_version()
        named = f"{DISTRIBUTION} {version}" if version else DISTRIBUTION
        return DemoSource(packaged, f"the copy packaged with {named}")
    if (repository / FIXTURES).is_dir() and _declares_this_distribution(repository):
        return DemoSource(repository / FIXTURES, "the repository's copy (an editable install)")
    raise FixtureError(
        packaged,
        "is missing: this install of the harness has no demo scenarios",
        f"reinstall it with {install_command()}, or pass scenario folders: harness demo PATH",
    )


def _declares_this_distribution(root: Path) -> bool:
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    name = project.get("project", {}).get("name")
    return isinstance(name, str) and name.replace("_", "-").lower() == DISTRIBUTION
