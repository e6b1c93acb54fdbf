"""`pytest_harness_configure`: a conftest registers the run's providers and matchers.

Called once collection has finished (a conftest in a test folder is loaded by then), before any
test runs; what it registered is gone when the run ends (an in-process run leaves nothing).
"""

from __future__ import annotations

import pytest

from harness.capture import matcher_named
from harness.providers import provider_hosts, provider_named
from tests.support.inner import inner_pytest

CONFTEST = """
from harness import CacheView, RequestSplit
from harness.providers import Provider


class Acme(Provider):
    name = "acme"
    hosts = ("api.acme.test",)

    def claims(self, body, url):
        return url is not None and "api.acme.test" in url

    def split(self, body, headers):
        return RequestSplit.whole(CacheView({}, {"body": dict(body)}, provider="acme"))


class Always:
    def matches(self, recorded, live, redaction):
        return True


def pytest_harness_configure(config, harness):
    harness.register_provider(Acme)
    harness.register_matcher("always", Always)
"""

TEST = """
from harness.capture import matcher_named
from harness.providers import detect_provider, provider_hosts


def test_the_run_sees_what_the_conftest_registered():
    assert detect_provider({"x": 1}, "https://api.acme.test/v1/chat") == "acme"
    assert "api.acme.test" in provider_hosts()
    assert type(matcher_named("always")).__name__ == "Always"
"""


@pytest.mark.slow
@pytest.mark.parametrize("folder", [".", "tests/agents"])
def test_a_conftest_registers_a_provider_and_a_matcher_for_the_run(
    pytester: pytest.Pytester, folder: str
) -> None:
    """At the root, or in a test folder's own conftest (loaded only during collection)."""
    where = pytester.path / folder
    where.mkdir(parents=True, exist_ok=True)
    (where / "conftest.py").write_text(CONFTEST)
    (where / "test_acme.py").write_text(TEST)
    result = inner_pytest(pytester, "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert provider_named("acme") is None, "unregistered when the run ended"
    assert "api.acme.test" not in provider_hosts()
    with pytest.raises(ValueError, match="unknown matcher 'always'"):
        matcher_named("always")


@pytest.mark.slow
def test_without_the_hook_the_run_does_not_know_the_provider(pytester: pytest.Pytester) -> None:
    """The near miss: the same conftest, its hook named otherwise, registers nothing."""
    pytester.makeconftest(CONFTEST.replace("def pytest_harness_configure", "def configure"))
    pytester.makepyfile(test_acme=TEST)
    result = inner_pytest(pytester, "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
