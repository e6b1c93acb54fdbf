"""The plugin's own hook, `pytest_harness_configure`, beside the `harness_capture_config` fixture.

A conftest (or another plugin) registers what the run's captured tests use, as pytest-recording's
`pytest_recording_configure` does for VCR:

    def pytest_harness_configure(config, harness):
        harness.register_provider(AcmeProvider())   # a harness.providers.Provider
        harness.register_matcher("acme", AcmeMatcher)  # then harness_capture_config's "matcher"
        harness.register_rule(NoStreamingRule())    # a harness.rules.Rule

It is called once per pytest process when collection has finished (every conftest is loaded by
then) and before any test runs; what it registered is unregistered when pytest ends, so an
in-process run (pytester) leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.capture._matching import Matcher
    from harness.providers._base import Provider
    from harness.rules._engine import Rule

__all__ = ["Registrar", "pytest_harness_configure"]


@pytest.hookspec(historic=False)
def pytest_harness_configure(config: pytest.Config, harness: Registrar) -> None:
    """Register providers, matchers and cache rules for this run: `harness.register_provider`,
    `harness.register_matcher`, `harness.register_rule`."""


class Registrar:
    """What a `pytest_harness_configure` hook registers, and its undoing at the end of the run."""

    def __init__(self) -> None:
        self.providers: list[str] = []
        self.matchers: list[str] = []
        self.rules: list[str] = []

    def register_provider(self, provider: Provider | type[Any] | Any) -> Provider:
        from harness.providers._registry import register_provider

        registered = register_provider(provider)
        self.providers.append(registered.name)
        return registered

    def register_matcher(self, name: str, factory: Callable[[], Matcher]) -> None:
        from harness.capture._matching import register_matcher

        register_matcher(name, factory)
        self.matchers.append(name)

    def register_rule(self, rule: Rule | type[Any] | Any) -> Rule:
        """A cache rule (a `harness.rules.Rule`) for this run: `harness lint`'s, in every
        captured test; `harness_fail_on` may name it."""
        from harness.rules._registry import register_rule

        registered = register_rule(rule)
        self.rules.append(registered.name)
        return registered

    def undo(self) -> None:
        if self.providers:
            from harness.providers._registry import unregister_provider

            for name in reversed(self.providers):
                unregister_provider(name)
        if self.matchers:
            from harness.capture._matching import unregister_matcher

            for name in reversed(self.matchers):
                unregister_matcher(name)
        if self.rules:
            from harness.rules._registry import unregister_rule

            for name in reversed(self.rules):
                unregister_rule(name)
        self.providers.clear()
        self.matchers.clear()
        self.rules.clear()
