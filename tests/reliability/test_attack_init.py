"""`harness init` beside fixtures a project already defines, the ways projects define them (issue
23's coexistence, attacked again).

Before, only `def harness_upstream` decorated as a fixture (or assigned from `pytest.fixture`)
counted: `@pytest.fixture(name="harness_upstream")`, a fixture imported into the root conftest,
and one in a module the conftest loads through `pytest_plugins` or a star import were not seen,
and the `tests/conftest.py` init wrote shadowed them (recording then went to the network).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

NAMED = """\
import pytest


@pytest.fixture(name="harness_upstream")
def upstream():
    return "the project's own stand-in"
"""

FIXTURES_MODULE = """\
import pytest


@pytest.fixture
def harness_upstream():
    return "the project's own stand-in"
"""

ROOT_CONFTESTS = {
    "named": {"conftest.py": NAMED},
    "imported": {
        "conftest.py": "from support.fixtures import harness_upstream  # noqa: F401\n",
        "support/__init__.py": "",
        "support/fixtures.py": FIXTURES_MODULE,
    },
    "plugins": {
        "conftest.py": 'pytest_plugins = ["support.fixtures"]\n',
        "support/__init__.py": "",
        "support/fixtures.py": FIXTURES_MODULE,
    },
    "star": {
        "conftest.py": "from support.fixtures import *  # noqa: F403\n",
        "support/__init__.py": "",
        "support/fixtures.py": FIXTURES_MODULE,
    },
}


def init(project: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["init", str(project)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("how", sorted(ROOT_CONFTESTS))
def test_a_fixture_the_project_defines_is_left_alone_however_it_is_defined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    for name, text in ROOT_CONFTESTS[how].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    code, out, err = init(tmp_path, capsys)
    assert (code, err) == (0, "")
    written = (tmp_path / "tests" / "conftest.py").read_text()
    assert "def harness_upstream" not in written
    assert "def harness_capture_config" in written
    assert "left alone: harness_upstream (defined in" in out


def test_the_near_miss_a_fixture_named_otherwise_is_not_taken_for_the_harness_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conftest.py").write_text(NAMED.replace('name="harness_upstream"', 'name="api"'))
    (tmp_path / "support").mkdir()
    (tmp_path / "support" / "fixtures.py").write_text("import pytest\n")
    code, out, _ = init(tmp_path, capsys)
    assert code == 0 and "left alone" not in out
    assert "def harness_upstream" in (tmp_path / "tests" / "conftest.py").read_text()
