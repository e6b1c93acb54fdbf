"""The public surface, pinned: the faces, each public name exported by exactly one of them.

A name added to or dropped from a face fails here first, so the change is deliberate (and goes
into CHANGELOG.md). Everything else under `harness/` is private: a module outside the faces and
the entry points (`harness.pytest_plugin`, `harness.cli`) is `_`-prefixed, or lives in a wing
package that exports nothing of its own.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest

import harness

FACES: dict[str, list[str]] = {
    "harness": [
        "CacheView",
        "CannotPerturb",
        "Drift",
        "FixtureError",
        "HarnessError",
        "HashSeedError",
        "HeaderDrift",
        "InvalidScenario",
        "PerturbationWarning",
        "RecordMode",
        "RequestSplit",
        "SecretLeak",
        "SecretWarning",
        "StabilityResult",
        "UnsafeName",
        "UsageError",
        "WriteFailed",
        "WriteRefused",
        "canonical_bytes",
        "canonical_tools",
        "prove_stable",
        "view_of_header",
        "view_of_request",
    ],
    "harness.capture": [
        "CacheViewMatcher",
        "CaptureConfig",
        "CaptureError",
        "CaptureFile",
        "CaptureSession",
        "CaptureTransport",
        "Captured",
        "CassetteMismatch",
        "CassetteMissing",
        "ExactBodyMatcher",
        "Exchange",
        "Finished",
        "HttpRequest",
        "HttpResponse",
        "LateRequestWarning",
        "Matcher",
        "NetworkBlocked",
        "PrefixBreak",
        "PrefixBroken",
        "PrefixChain",
        "Proof",
        "ProofRun",
        "REDACTED",
        "Redaction",
        "SecretFinding",
        "SecretLeak",
        "Timing",
        "cassette_path_for",
        "check_prefix_chain",
        "current_session",
        "load_cassette",
        "matcher_named",
        "prefix_chain",
        "register_matcher",
        "scan_secrets",
        "split_exchange",
    ],
    "harness.providers": [
        "ANTHROPIC",
        "BEDROCK",
        "CacheUsage",
        "DEEPSEEK",
        "ENTRY_POINT_GROUP",
        "GEMINI",
        "OPENAI_CHAT",
        "OPENAI_RESPONSES",
        "PerRunCacheKeyWarning",
        "Provider",
        "ProviderWarning",
        "cache_usage",
        "detect_provider",
        "host_matches",
        "provider_for",
        "provider_hosts",
        "provider_named",
        "recognised_host",
        "register_provider",
        "registered_providers",
        "split_request",
        "unregister_provider",
        "view_of_body",
    ],
    "harness.rules": [
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
    ],
    "harness.drift": [
        "DriftReport",
        "MARKER",
        "Reproduce",
        "compare",
        "compare_values",
        "first_byte_difference",
        "first_difference",
        "volatile_hints",
    ],
    "harness.agent": [
        "ASSEMBLE_EVENT",
        "Adapter",
        "AdapterError",
        "Agent",
        "AgentCoreConfig",
        "AgentError",
        "AgentLoop",
        "AssistantMessage",
        "Block",
        "CliAppConfig",
        "Context",
        "ContextError",
        "Conversation",
        "DISPATCH_EVENT",
        "FrozenDict",
        "FrozenError",
        "FrozenList",
        "Header",
        "InvariantError",
        "LlmConfig",
        "LlmRuntime",
        "LoadSchedule",
        "LogEvent",
        "Message",
        "Plugin",
        "PromptAssembly",
        "PromptAssemblyError",
        "PromptRenderError",
        "REPLY_EVENT",
        "REQUEST_EVENT",
        "Reply",
        "Request",
        "RequestHeader",
        "SESSION_EVENT",
        "ScriptedAdapter",
        "ScriptedReply",
        "ScriptedToolCall",
        "Section",
        "Session",
        "StepEnd",
        "StepStart",
        "SystemPrompt",
        "SystemPromptConfig",
        "TOOL_BEFORE_EVENT",
        "TOOL_ORDER_REST",
        "TextBlock",
        "ToolCall",
        "ToolOrderError",
        "ToolResult",
        "ToolResultBlock",
        "ToolRuntime",
        "ToolSchema",
        "ToolUseBlock",
        "TuiAppConfig",
        "TurnEnd",
        "TurnStart",
        "UserMessage",
        "boot_agent",
        "boot_app",
        "canonical_header",
        "check_rebuild_invariant",
        "deep_freeze",
        "derive_messages",
        "fold_header",
        "header_bytes",
        "header_equals",
        "is_deep_frozen",
        "load_plugins",
        "order_tools",
        "register_tool",
        "render_prompt",
        "validate_tool_order",
    ],
    "harness.upstream": ["Call", "Received", "StandIn", "Turn", "parallel", "text", "tool_call"],
}
FACES["harness.scan"] = [
    "BadRecord",
    "Counters",
    "Finding",
    "Options",
    "Reader",
    "ScanResult",
    "Settings",
    "TraceRecord",
    "Unit",
    "markdown",
    "reader_named",
    "readers",
    "register_reader",
    "render_html",
    "sarif",
    "scan",
    "text",
    "unregister_reader",
]
# Public modules that are not faces: the entry points, and wing packages that export nothing.
ENTRY_POINTS = {"harness.pytest_plugin", "harness.cli", "harness.cli.__main__"}
WINGS = {
    "harness.cache",
    "harness.scenarios",
    "harness.prove",
    "harness.prove.perturb",
    "harness.cli.init",
    "harness.cost",
}


@pytest.mark.parametrize("face", sorted(FACES))
def test_each_face_exports_exactly_its_pinned_names(face: str) -> None:
    module = importlib.import_module(face)
    assert sorted(module.__all__) == sorted(FACES[face])
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert missing == []


def test_every_public_name_has_one_home() -> None:
    homes: dict[int, list[str]] = {}
    keep: list[Any] = []  # hold the objects, so no id is reused while counting
    for face, names in FACES.items():
        module = importlib.import_module(face)
        for name in names:
            value = getattr(module, name)
            if isinstance(value, (str, int)):  # constants: equal values may be distinct names
                continue
            keep.append(value)
            homes.setdefault(id(value), []).append(f"{face}.{name}")
    assert [places for places in homes.values() if len(places) > 1] == []


def test_import_harness_is_cheap_and_resolves_names_on_first_use() -> None:
    assert harness.prove_stable.__module__ == "harness.prove._stable"
    assert set(dir(harness)) >= set(FACES["harness"])
    with pytest.raises(AttributeError, match="no attribute 'compare'"):
        harness.compare  # noqa: B018 - a name of harness.drift is not re-exported here


def test_every_other_module_is_private() -> None:
    public = set(FACES) | ENTRY_POINTS | WINGS
    found = [
        info.name
        for info in pkgutil.walk_packages(harness.__path__, "harness.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
        and info.name not in public
    ]
    assert found == []
