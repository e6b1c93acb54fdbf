"""Shared helpers of the race suite: an agent project written as a user writes one, run by pytest.

Each project is an `agent.py` whose `build()` assembles a request from tools its loaders
register, and a test that proves it stable with the `prove_stable` fixture. `FIX(...)` in a
loader's source marks where the fix goes: the racy project keeps the order it got (`list`),
the fixed one sorts.
"""

from __future__ import annotations

import re
import sys
import textwrap

import pytest

from tests.support.inner import inner_pytest

REQUEST = """
def request(tools):
    return {
        "model": "claude-x",
        "max_tokens": 64,
        "system": "You are an agent.",
        "tools": [
            {"name": name, "description": name, "input_schema": {"type": "object"}}
            for name in tools
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }
"""

PROVE = """
import agent

def test_header_is_stable(prove_stable):
    prove_stable(agent.build{options})
"""

CAUSE = re.compile(r"; cause: (.*)$", re.MULTILINE)  # the summary line of the drift


def make_agent(pytester: pytest.Pytester, source: str, *, fixed: bool, options: str = "") -> None:
    """`agent.py` (the loaders in `source`, racy or fixed) and a test proving it stable."""
    code = REQUEST + textwrap.dedent(source).replace("FIX(", "sorted(" if fixed else "list(")
    pytester.makepyfile(agent=code, test_agent=PROVE.format(options=options))
    pytester.syspathinsert()


def prove(pytester: pytest.Pytester, seed: int, *args: str) -> pytest.RunResult:
    """Run the project's tests in-process, with the harness seed `seed` (through `inner_pytest`,
    which leaves out the installed plugins no project uses: langsmith's alone took seconds of
    every run, imported again each time)."""
    return inner_pytest(pytester, "-p", "no:randomly", f"--harness-seed={seed}", *args)


def cause_of(result: pytest.RunResult) -> str:
    """The cause line of the failure (`asyncio completion order (...)`)."""
    found = CAUSE.search(result.stdout.str())
    assert found is not None, result.stdout.str()
    return found.group(1)


PYTHON = sys.executable
