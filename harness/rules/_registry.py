"""The rules in force: the built-in ones and those a project registers, and `lint`, which runs
them over a session.

Rules are registered parts, as providers are: `register_rule(rule)` adds one (or replaces the
one of the same name), `unregister_rule(name)` removes it; a `pytest_harness_configure` hook
registers its own through the `Registrar` (`harness.register_rule`), undone when the run ends.
`lint(session, policy)` runs every rule, applies the project's policy (which rules fail, their
severities) and returns the findings in file order, request by request.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from harness._shared._errors import UsageError
from harness.rules._conversation_rules import (
    LookbackExceeded,
    PrefixBroken,
    UnknownModel,
    WriteNeverRead,
)
from harness.rules._cost_rules import ProviderDisagrees, TtlExpired
from harness.rules._engine import Finding, Policy, Rule, Session
from harness.rules._refusal_rules import MisplacedBreakpoint, TtlUnsupported
from harness.rules._request_rules import (
    BelowMinimum,
    NoBreakpoint,
    TooManyBreakpoints,
    TtlOrder,
    VertexKeyOrder,
    VolatileInPrefix,
)

__all__ = ["lint", "register_rule", "registered_rules", "rule_names", "unregister_rule"]

_BUILT_IN: Final[tuple[Rule, ...]] = (
    TooManyBreakpoints(),
    BelowMinimum(),
    NoBreakpoint(),
    TtlOrder(),
    MisplacedBreakpoint(),
    TtlUnsupported(),
    LookbackExceeded(),
    VolatileInPrefix(),
    VertexKeyOrder(),
    WriteNeverRead(),
    UnknownModel(),
    PrefixBroken(),
    TtlExpired(),
    ProviderDisagrees(),
)
_registered: dict[str, Rule] = {}


def register_rule(rule: Rule | type[Rule] | Any) -> Rule:
    """Add a rule (or a rule class, instantiated here); a rule of the same name is replaced."""
    instance = rule() if isinstance(rule, type) else rule
    if not isinstance(instance, Rule) or not isinstance(getattr(instance, "name", None), str):
        raise UsageError(
            f"{instance!r} is not a rule: subclass harness.rules.Rule (a `name` string, a"
            " `severity`, and check(session) yielding findings)"
        )
    _registered.pop(instance.name, None)
    _registered[instance.name] = instance
    return instance


def unregister_rule(name: str) -> None:
    """Remove a registered rule (a built-in one comes back if it was replaced)."""
    _registered.pop(name, None)


def registered_rules() -> tuple[Rule, ...]:
    """Every rule in force: the built-in ones (or their replacements), then the others."""
    built_in = tuple(_registered.get(rule.name, rule) for rule in _BUILT_IN)
    names = {rule.name for rule in _BUILT_IN}
    return (*built_in, *(rule for rule in _registered.values() if rule.name not in names))


def rule_names() -> list[str]:
    return [rule.name for rule in registered_rules()]


def lint(
    session: Session,
    policy: Policy | None = None,
    *,
    skip: Iterable[str] = (),
    only: Sequence[str] | None = None,
) -> list[Finding]:
    """Every finding of the rules in force over `session`, the policy applied, in request order
    (`skip`: rules another part of the harness reports itself, such as the gate's)."""
    skipped = set(skip)
    found: list[Finding] = []
    for rule in registered_rules():
        if rule.name in skipped or (only is not None and rule.name not in only):
            continue
        found.extend(rule.check(session))
    if policy is not None:
        found = [policy.apply(finding) for finding in found]
    order = {name: place for place, name in enumerate(rule_names())}
    return sorted(found, key=lambda f: (f.file, f.request, order.get(f.rule, len(order))))
