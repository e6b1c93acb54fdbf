"""Verdicts that know the providers' rules: the rules pack, the rule engine, and `lint`.

A request is judged under a dated, sourced rules pack (`harness.providers._pack`: minimums per
model family, breakpoint limits and what counts toward them, lookback, TTLs and their order,
cache key levels, bookkeeping fields). Rules are registered parts (`Rule`, `register_rule`):

- on one request: `too-many-breakpoints`, `below-minimum`, `no-breakpoint`, `ttl-order`,
  `volatile-in-prefix`, `vertex-key-order`;
- along a conversation: `lookback-exceeded`, `write-never-read`, `prefix-broken` (the
  prefix-chain gate's verdict), and `unknown-model` (the rules that need the model abstain);
- under the cost model (`harness.cost`): `ttl-expired` (a recorded gap longer than the TTL) and
  `provider-disagrees` (the provider's recorded counters or miss reason contradict the verdict).

`harness lint PATH...` runs them on cassettes, request bodies and session files; `harness check`
and the pytest plugin on every captured request; `harness rules` prints the pack. A session is
the requests of one file (`Session`), each analysed (`Analysis`: what it caches, and why not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness._shared._lazy import LazyExports

if TYPE_CHECKING:
    from harness.cache._analysis import Analysis, LintRequest, analyse
    from harness.cache._counters import register_token_counter, unregister_token_counter
    from harness.providers._pack import RulesFile, load_rules_file, overlay, rules_pack
    from harness.rules._engine import Finding, Policy, Rule, Session
    from harness.rules._registry import lint, register_rule, registered_rules, unregister_rule

# Each public name and the module it lives in: imported when first asked for, so a reader of one
# part (the cost model reads sessions, never the rules) does not import every rule.
_EXPORTS = {
    "Analysis": "harness.cache._analysis",
    "Finding": "harness.rules._engine",
    "LintRequest": "harness.cache._analysis",
    "Policy": "harness.rules._engine",
    "Rule": "harness.rules._engine",
    "RulesFile": "harness.providers._pack",
    "Session": "harness.rules._engine",
    "analyse": "harness.cache._analysis",
    "lint": "harness.rules._registry",
    "load_rules_file": "harness.providers._pack",
    "overlay": "harness.providers._pack",
    "register_rule": "harness.rules._registry",
    "register_token_counter": "harness.cache._counters",
    "registered_rules": "harness.rules._registry",
    "rules_pack": "harness.providers._pack",
    "unregister_rule": "harness.rules._registry",
    "unregister_token_counter": "harness.cache._counters",
}

__all__ = [
    "Analysis",
    "Finding",
    "LintRequest",
    "Policy",
    "Rule",
    "RulesFile",
    "Session",
    "analyse",
    "lint",
    "load_rules_file",
    "overlay",
    "register_rule",
    "register_token_counter",
    "registered_rules",
    "rules_pack",
    "unregister_rule",
    "unregister_token_counter",
]


_LAZY = LazyExports("harness.rules", _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    return _LAZY.get(name)


def __dir__() -> list[str]:
    return _LAZY.dir()
