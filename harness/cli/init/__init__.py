"""`harness init`: what a project needs to use the harness, written without overwriting a file.

- `pytest_config`: the pytest configuration a project already has, found as pytest finds it;
- `templates`: the files written (a `pytest.ini`, a conftest, a first proof);
- `command`: the plan, the refusal when a file exists, the printing, the writing.
"""

from __future__ import annotations

from harness.cli.init._command import HELP, InitPlan, add_arguments, init_project, plan_init
from harness.cli.init._pytest_config import PytestConfig, find_pytest_config

__all__ = [
    "HELP",
    "InitPlan",
    "PytestConfig",
    "add_arguments",
    "find_pytest_config",
    "init_project",
    "plan_init",
]
