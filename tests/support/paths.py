"""The repository's folders the tests read (the root, the shipped scenarios and their pins, the
examples, and this support folder, which inner pytest projects put on their path), and a copy of
the shipped scenarios and pins for tests that edit or rewrite them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

SUPPORT: Final = Path(__file__).resolve().parent
ROOT: Final = SUPPORT.parents[1]
SHIPPED_FIXTURES: Final = ROOT / "fixtures"
SHIPPED_PINS: Final = ROOT / "snapshots" / "headers"
EXAMPLES: Final = ROOT / "examples"
# The shipped scenarios by folder name, as a glob finds them (not through the harness's own reader).
SHIPPED: Final = sorted(p.parent.name for p in SHIPPED_FIXTURES.glob("*/scenario.json"))


def copy_project(dest: Path) -> Path:
    """`dest/fixtures` and `dest/snapshots/headers`: the shipped scenarios and pins."""
    shutil.copytree(SHIPPED_FIXTURES, dest / "fixtures")
    shutil.copytree(SHIPPED_PINS, dest / "snapshots" / "headers")
    return dest


def compiled_from_beside(path: Path) -> bool:
    """Whether `path` is Python's bytecode of a source file the project holds (a `.pyc` in a
    `__pycache__` folder beside `NAME.py`): what the interpreter and pytest's assertion rewriting
    write when bytecode is on (PYTHONDONTWRITEBYTECODE unset), holding the same constants as the
    source the test wrote (a key split over `+` is one constant there). Not the harness's
    writing."""
    if path.suffix != ".pyc" or path.parent.name != "__pycache__":
        return False
    return (path.parent.parent / f"{path.name.split('.', 1)[0]}.py").is_file()
