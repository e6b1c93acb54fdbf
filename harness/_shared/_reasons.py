"""The cache-miss vocabulary: the word a drift report uses for the change that cost the cache.

Two providers say why a request missed, in their own words: Anthropic's
`diagnostics.cache_miss_reason.type` (`model_changed` for the model or speed, `system_changed`,
`tools_changed`, `messages_changed`) and OpenAI's Responses `prompt_cache_diagnostics`
(`model_changed`, `prompt_cache_key_changed`, `tools_changed`, `text_format_changed`,
`reasoning_effort_changed`, `verbosity_changed`, `context_compacted`, `input_changed`,
`service_tier_changed`). A report uses those words, so a reviewer can set it beside the
provider's own diagnostics.

A `Vocabulary` maps prompt blocks and setting keys to a `Reason`: the word, and for a setting the
first prompt block it invalidates (Anthropic keeps the tools and system caches when only
`tool_choice` or `thinking` changes; most settings move the whole cache key). `GENERIC` names the
cache-breaking settings every provider shares, in OpenAI's words where they exist; a provider
declares what it names differently (`declare`, done by `harness.providers._registry` for every
provider it knows), and `vocabulary_for(provider)` gives the merged vocabulary.

A provider the rules pack knows (`harness.providers._pack`) has an authoritative vocabulary: its
settings are the pack's rows, each with an `effect` (`breaks`: the cache key or a level moves;
`retention`: a time to live changed), and a setting no row names is its `unknown` reason, its
cache effect unknown. For any other provider (the harness's own views, a registered provider
without rows) a setting no vocabulary names is `model_changed`: the cache key moved, and
everything is lost. `compaction` names the conversation items whose appearance means the provider
compacted the context (OpenAI's `context_compacted`).

This module is at the bottom with `harness._shared._views`: it imports nothing from the harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

__all__ = [
    "GENERIC",
    "MODEL_CHANGED",
    "TTL_SETTING",
    "UNKNOWN_SETTING",
    "Effect",
    "Reason",
    "Vocabulary",
    "complete",
    "declare",
    "vocabulary_for",
]

MODEL_CHANGED: Final = "model_changed"
UNKNOWN_SETTING: Final = "unknown_setting_changed"
# The settings key a provider gives the time-to-live of its cache breakpoints (Anthropic's
# `cache_control.ttl`): a breakpoint written with another TTL is another cache entry.
TTL_SETTING: Final = "cache_control.ttl"


Effect = Literal["breaks", "retention", "unknown"]


@dataclass(frozen=True)
class Reason:
    """Why a cache missed: `word`, and for a setting the first block it invalidates (None: all).

    `effect`: `breaks` (certain), `retention` (a time to live changed; whether the cached prefix
    is read again is not documented) or `unknown` (no rule knows the setting)."""

    word: str
    level: str | None = None
    effect: Effect = "breaks"
    may_reach: str | None = None  # an earlier level some models lose too (Anthropic's thinking)
    by_design: bool = False  # a feature used on purpose loses it (the gate warns, never fails)


@dataclass(frozen=True)
class Vocabulary:
    """Block names and setting keys -> the reason a change there is reported under.

    With `unknown` set the vocabulary is authoritative: a setting it does not name is `unknown`,
    and the generic setting words are not consulted."""

    blocks: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Reason] = field(default_factory=dict)
    unknown: Reason | None = None
    compaction: frozenset[str] = frozenset()
    compaction_word: str = ""
    # the provider's cache levels in order, as its invalidation table names them (the rules
    # pack's `levels` row): a change invalidates its level and every one after it
    levels: tuple[str, ...] = ()

    def block(self, name: str) -> str:
        return self.blocks.get(name) or GENERIC.blocks.get(name) or f"{name}_changed"

    def setting(self, key: str) -> Reason:
        found = self.settings.get(key)
        if found is not None:
            return found
        if self.unknown is not None:
            return self.unknown
        return GENERIC.settings.get(key) or Reason(MODEL_CHANGED)

    def named(self, key: str) -> bool:
        """Whether the vocabulary has a word of its own for setting `key`."""
        return key in self.settings or (self.unknown is None and key in GENERIC.settings)

    def over(self, base: Vocabulary) -> Vocabulary:
        """This vocabulary, falling back to `base` for what it does not name (an authoritative
        one keeps its own unknown reason)."""
        return Vocabulary(
            blocks=MappingProxyType({**base.blocks, **self.blocks}),
            settings=MappingProxyType({**base.settings, **self.settings}),
            unknown=self.unknown or base.unknown,
            compaction=self.compaction | base.compaction,
            compaction_word=self.compaction_word or base.compaction_word,
            levels=self.levels or base.levels,
        )


GENERIC: Final = Vocabulary(
    blocks=MappingProxyType(
        {
            "settings": MODEL_CHANGED,
            "tools": "tools_changed",
            "system": "system_changed",
            "instructions": "system_changed",
            "system_instruction": "system_changed",
            "systemInstruction": "system_changed",
            "messages": "messages_changed",
            "input": "messages_changed",
            "contents": "messages_changed",
        }
    ),
    settings=MappingProxyType(
        {
            "model": Reason(MODEL_CHANGED),
            "modelId": Reason(MODEL_CHANGED),
            "speed": Reason(MODEL_CHANGED),
            "reasoning_effort": Reason("reasoning_effort_changed"),
            "reasoning": Reason("reasoning_effort_changed"),
            "service_tier": Reason("service_tier_changed"),
            "serviceTier": Reason("service_tier_changed"),
            "prompt_cache_key": Reason("prompt_cache_key_changed"),
            "anthropic-beta": Reason("beta_headers_changed"),
            TTL_SETTING: Reason("cache_ttl_changed"),
            "cachePoint.ttl": Reason("cache_ttl_changed"),
            "prompt_cache_breakpoint.ttl": Reason("cache_ttl_changed"),
            "tool_choice": Reason("tool_choice_changed"),
            "toolChoice": Reason("tool_choice_changed"),
            "toolConfig": Reason("tool_choice_changed"),
            "parallel_tool_calls": Reason("parallel_tool_calls_changed"),
            "thinking": Reason("thinking_changed"),
            "cachedContent": Reason("cached_content_changed"),
            "verbosity": Reason("verbosity_changed"),
        }
    ),
)

_DECLARED: dict[str, Vocabulary] = {}


def complete(vocabulary: Vocabulary) -> Vocabulary:
    """A provider's vocabulary over the generic one: an authoritative vocabulary (`unknown`
    set) takes only the generic block words."""
    if vocabulary.unknown is not None:
        return vocabulary.over(Vocabulary(blocks=GENERIC.blocks))
    return vocabulary.over(GENERIC)


def declare(provider: str, vocabulary: Vocabulary) -> None:
    """Say how `provider` names what breaks its cache (replaces an earlier declaration)."""
    _DECLARED[provider] = complete(vocabulary)


def vocabulary_for(provider: str) -> Vocabulary:
    """The vocabulary of `provider`, or the generic one when it declared none."""
    return _DECLARED.get(provider, GENERIC)
