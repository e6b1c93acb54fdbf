"""OpenAI Chat Completions and Responses: exact-prefix caching of tools, instructions, then input.

- Chat Completions (`/chat/completions`): tools (or legacy `functions`), `response_format`, the
  leading system/developer messages, then the rest.
- Responses (`/responses`): tools, the `text` format, `instructions`, `input`. A request that
  continues a stored response (`previous_response_id`, `conversation`) has its prefix on the
  server; the prefix chain does not judge it.
OpenAI caches the exact prefix, so the whole request is the cacheable prefix. Routing also hashes
`prompt_cache_key`, and reasoning effort and service tier miss the cache: they are settings.
Which fields are settings and which are bookkeeping is the rules pack's (`_classify.classify`);
`prompt_cache_options` is judged member by member (its `comparison_response_id` only asks for
diagnostics). GPT-5.6 and later mark explicit breakpoints with `prompt_cache_breakpoint` on
content blocks: a marker, which the prefix chain lets move forward as Anthropic's.

A `prompt_cache_key` that a framework makes anew for every run (openai-agents' default,
`agents-sdk:run:<random hex>`) is put in the view as `PER_RUN_KEY`: it is not the project's code
that moves it, and a replay would otherwise never match. Such a run still misses the cache across
runs; `per_run_key` finds it so the plugin can warn (`PerRunCacheKeyWarning`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from harness._shared._reasons import Vocabulary
from harness._shared._views import CacheView, RequestSplit
from harness.providers._base import CacheUsage, Provider, integer, member, optional, role
from harness.providers._classify import classify

OPENAI_CHAT: Final = "openai-chat"
OPENAI_RESPONSES: Final = "openai-responses"

_CHAT_PROMPT: Final = frozenset({"tools", "functions", "response_format", "messages"})
_RESPONSES_PROMPT: Final = frozenset({"tools", "text", "instructions", "input"})
MARKERS: Final = ("prompt_cache_breakpoint",)
PER_RUN_KEY: Final = "agents-sdk:run:{{per-run}}"
_GENERATED_KEY: Final = re.compile(r"agents-sdk:run:[0-9a-f]{32}")


class PerRunCacheKeyWarning(UserWarning):
    """A framework sent a `prompt_cache_key` made anew for this run: every run misses the cache
    of the runs before it (openai-agents: pass `RunConfig(group_id=...)` or a key of your own)."""


def per_run_key(settings: Mapping[str, Any]) -> bool:
    """Whether a view's settings hold a framework's per-run `prompt_cache_key`."""
    return settings.get("prompt_cache_key") == PER_RUN_KEY


def _settings(
    provider: str, body: Mapping[str, Any], prompt: frozenset[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    settings, bookkeeping = classify(provider, body, prompt)
    key = settings.get("prompt_cache_key")
    if isinstance(key, str) and _GENERATED_KEY.fullmatch(key):
        settings["prompt_cache_key"] = PER_RUN_KEY
    return settings, bookkeeping


def chat_path(url: str) -> bool:
    return urlsplit(url).path.rstrip("/").endswith("/chat/completions")


def split_chat(body: Mapping[str, Any], provider: str, *, system_first: bool) -> RequestSplit:
    """A Chat Completions body in cache order: tools then system, or (`system_first`) the other
    way round; the remaining messages last. The whole request is the prefix."""
    settings, bookkeeping = _settings(provider, body, _CHAT_PROMPT)
    messages = body.get("messages")
    leading: list[Any] = []
    rest: list[Any] = []
    if isinstance(messages, list):
        count = 0
        while count < len(messages) and role(messages[count]) in {"system", "developer"}:
            count += 1
        leading, rest = messages[:count], messages[count:]
    tools: dict[str, Any] = {}
    if "tools" in body:
        tools["tools"] = body["tools"]
    elif "functions" in body:
        tools["tools"] = body["functions"]
    if "response_format" in body:
        tools["response_format"] = body["response_format"]
    system = {"system": leading} if leading else {}
    blocks = {**system, **tools} if system_first else {**tools, **system}
    if messages is not None:
        blocks["messages"] = rest if isinstance(messages, list) else messages
    view = CacheView(settings=settings, blocks=blocks, provider=provider)
    return RequestSplit(
        provider, view, view, "exact-prefix", markers=MARKERS, bookkeeping=bookkeeping
    )


def cached_usage(
    provider: str, response: Any, total: str, details: str, output: str = "completion_tokens"
) -> CacheUsage | None:
    """OpenAI's counters: `cached_tokens` read, the cache write tokens (5.6+: `cache_write_tokens`
    with their TTL split in `cache_write_tokens_details`), and `prompt_cache_diagnostics` (in the
    response or its usage) for the miss reason."""
    usage = member(response, "usage")
    if not isinstance(usage, dict):
        return None
    read = integer(member(usage, details, "cached_tokens"))
    written = integer(
        member(usage, details, "cache_write_tokens")
        or member(usage, details, "cache_creation_tokens")
    )
    ttl_details = member(usage, details, "cache_write_tokens_details")
    split: tuple[tuple[str, int], ...] = ()
    if isinstance(ttl_details, dict):
        split = tuple(
            (str(key).removeprefix("ttl_").removesuffix("_tokens"), integer(value))
            for key, value in ttl_details.items()
            if isinstance(value, int)
        )
    diagnostics = member(response, "prompt_cache_diagnostics") or member(
        usage, "prompt_cache_diagnostics"
    )
    reason = None
    missed = None
    if isinstance(diagnostics, dict):
        found = diagnostics.get("reason") or diagnostics.get("miss_reason")
        reason = found if isinstance(found, str) else None
        missed = optional(diagnostics.get("cache_missed_tokens"))
    return CacheUsage(
        provider,
        read_tokens=read,
        written_tokens=written,
        uncached_tokens=max(integer(usage.get(total)) - read - written, 0),
        miss_reason=reason,
        written_ttl=split,
        missed_tokens=missed,
        output_tokens=optional(usage.get(output)),
    )


class OpenAIChat(Provider):
    name = OPENAI_CHAT

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is not None:
            return chat_path(url)
        messages = body.get("messages")
        if not isinstance(messages, list):
            return False
        tools = body.get("tools")
        tool_list = tools if isinstance(tools, list) else []
        return (
            "functions" in body
            or "response_format" in body
            or "reasoning_effort" in body
            or "max_completion_tokens" in body
            or any(isinstance(tool, dict) and "function" in tool for tool in tool_list)
            or any(role(message) in {"system", "developer", "tool"} for message in messages)
        )

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        return split_chat(body, OPENAI_CHAT, system_first=False)

    def usage(self, response: Any) -> CacheUsage | None:
        return cached_usage(OPENAI_CHAT, response, "prompt_tokens", "prompt_tokens_details")


class OpenAIResponses(Provider):
    name = OPENAI_RESPONSES
    # `prompt_cache_diagnostics` words: the input and the text format have their own.
    reasons = Vocabulary(
        blocks={"input": "input_changed", "response_format": "text_format_changed"}
    )

    def claims(self, body: Mapping[str, Any], url: str | None) -> bool:
        if url is not None:
            return urlsplit(url).path.rstrip("/").endswith("/responses")
        return "input" in body or "instructions" in body

    def split(self, body: Mapping[str, Any], headers: Sequence[tuple[str, str]]) -> RequestSplit:
        settings, bookkeeping = _settings(OPENAI_RESPONSES, body, _RESPONSES_PROMPT)
        blocks: dict[str, Any] = {}
        if "tools" in body:
            blocks["tools"] = body["tools"]
        text = body.get("text")
        if isinstance(text, dict) and "verbosity" in text:  # a setting of its own in the text
            settings = {**settings, "verbosity": text["verbosity"]}
            text = {key: value for key, value in text.items() if key != "verbosity"}
        if "text" in body and text != {}:
            blocks["response_format"] = text
        for key in ("instructions", "input"):
            if key in body:
                blocks[key] = body[key]
        view = CacheView(settings=settings, blocks=blocks, provider=OPENAI_RESPONSES)
        stored = "previous_response_id" in body or "conversation" in body
        return RequestSplit(
            OPENAI_RESPONSES,
            view,
            view,
            "exact-prefix",
            markers=MARKERS,
            bookkeeping=bookkeeping,
            held="conversation" if stored else "",
        )

    def usage(self, response: Any) -> CacheUsage | None:
        return cached_usage(
            OPENAI_RESPONSES, response, "input_tokens", "input_tokens_details", "output_tokens"
        )
