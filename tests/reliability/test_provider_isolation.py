"""A provider plugin that raises is skipped, naming it; it never takes capture down (issue 24, 9).

Before, a provider that loaded but raised when used (in `claims`, `split`, `hosts` or `usage`)
made every captured request fail as the SDK's "Connection error", for every provider, and made
`harness check` print a traceback with exit 1, the drift code. Now each provider is isolated at
use: a broken one is skipped with a `ProviderWarning` naming it, the others go on; the CLI,
which cannot vouch for what the broken one would have judged, exits 2 with one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.inner import inner_pytest

BROKEN = """
from harness.providers import Provider


class Acme(Provider):
    name = "acme"
    hosts = ("llm.acme.test",)

    def claims(self, body, url):
        {claims}

    def split(self, body, headers):
        raise KeyError("acme_model")
"""

AGENT = """
import anthropic


def ask():
    client = anthropic.Anthropic(api_key="test-key-not-a-secret", max_retries=0)
    return client.messages.create(model="claude-test", max_tokens=64, system="You plan trips.",
                                  messages=[{"role": "user", "content": "Paris?"}])
"""

CONFTEST = """
import httpx2
import pytest

from acme_provider import Acme

ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
          "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 2}}


def pytest_harness_configure(config, harness):
    harness.register_provider(Acme())


@pytest.fixture
def harness_upstream():
    return httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))
"""

TESTS = """
import pytest

import agent


@pytest.mark.header_capture
def test_plan():
    assert agent.ask().content[0].text == "Sunny."
"""


@pytest.mark.parametrize(
    "claims",
    ['raise RuntimeError("acme is not configured")', "return True"],
    ids=["claims-raises", "split-raises"],
)
def test_a_provider_that_raises_is_skipped_and_capture_goes_on(
    pytester: pytest.Pytester, claims: str
) -> None:
    pytester.makepyfile(
        acme_provider=BROKEN.format(claims=claims), agent=AGENT, conftest=CONFTEST, test_plan=TESTS
    )
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "ProviderWarning" in out and "provider 'acme' raised" in out
    assert "is skipped" in out
    assert "requests per provider: anthropic 1" in out  # the built-in one still judged it
    assert (pytester.path / "fixtures/cassettes/test_plan/test_plan.json").is_file()


def test_a_provider_that_works_is_used(pytester: pytest.Pytester) -> None:
    """The near miss: a provider that claims nothing it cannot split warns about nothing."""
    pytester.makepyfile(
        acme_provider=BROKEN.format(claims="return False"),
        agent=AGENT,
        conftest=CONFTEST,
        test_plan=TESTS,
    )
    pytester.syspathinsert()
    result = inner_pytest(pytester, "-p", "no:randomly", "--harness-mode=record")
    result.assert_outcomes(passed=1)
    assert "ProviderWarning" not in result.stdout.str()


def installed_plugin(site: Path, claims: str) -> None:
    """A provider package installed with its `harness.providers` entry point."""
    (site / "acme_provider.py").write_text(BROKEN.format(claims=claims))
    info = site / "acme_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-provider\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[harness.providers]\nacme = acme_provider:Acme\n")


def harness(cwd: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("CI", None)
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_harness_check_exits_2_in_one_line_naming_the_broken_provider(tmp_path: Path) -> None:
    from tests.reliability.test_check_cassettes import record

    site = tmp_path / "site"
    site.mkdir()
    installed_plugin(site, 'raise RuntimeError("acme is not configured")')
    record(tmp_path / "fixtures" / "cassettes" / "tests" / "test_plan.json", tools=["geocode"])
    done = harness(tmp_path, site, "check")
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert "provider 'acme'" in line and "RuntimeError" in line and "acme is not configured" in line
    assert "Traceback" not in done.stdout + done.stderr

    (site / "acme_provider.py").write_text(BROKEN.format(claims="return False"))
    done = harness(tmp_path, site, "check")  # the near miss: the same plugin, working
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 cassettes, no finding" in done.stdout
