"""The provider registry: which provider a request belongs to.

Providers are registered parts, not `if` chains. Built in: OpenAI Responses, AWS Bedrock
Converse, Anthropic Messages, Cohere v2 chat, DeepSeek and the OpenAI-compatible hosts (Groq,
Mistral, OpenRouter, xAI, Together, Fireworks), OpenAI Chat Completions, Google Gemini (tried in
that order: a host's own provider before OpenAI Chat's path, and without a URL a Responses
body's `input` and Bedrock's one-key content blocks before the Messages shape). Which host is
whose is data (`harness/providers/hosts.json`). A third party adds
one without editing the harness, either in code:

    from harness.providers import register_provider
    register_provider(MyProvider())

or from its own package's metadata, in the entry-point group `harness.providers` (the entry point
names a `Provider` instance, or a class the registry instantiates). Registered providers are
asked before the built-in ones, in registration order (entry points by name), so one may take
over a host or a path from a built-in provider; registering a name again replaces it.

Each provider is isolated at use: one that raises in `claims`, `split`, `hosts` or `usage` is
skipped from then on (registering it again gives it another chance), with a `ProviderWarning`
naming it, and the request goes to the next provider that claims it, so a broken plugin cannot
take capture down for every provider. Where a skipped provider would make the answer unsure
(the CLI's `harness check`: a cassette the broken one should have judged), `strict_providers()`
turns the failure into `ProviderFailed`, one line and exit 2.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.metadata import entry_points
from typing import Any, Final, TypeVar

from harness._shared._errors import HarnessError, UsageError, one_line
from harness._shared._reasons import Vocabulary, complete, declare, vocabulary_for
from harness._shared._views import RequestSplit
from harness.providers._anthropic import AnthropicMessages
from harness.providers._base import Conforming, Provider, host_matches, hosts_of, reasons_of
from harness.providers._bedrock import BedrockConverse
from harness.providers._classify import vocabulary
from harness.providers._cohere import CohereChat
from harness.providers._compatible import compatible_providers
from harness.providers._deepseek import DeepSeek
from harness.providers._gemini import Gemini
from harness.providers._openai import OpenAIChat, OpenAIResponses
from harness.providers._pack import on_change, rules_pack

ENTRY_POINT_GROUP: Final = "harness.providers"

_BUILT_IN: Final[tuple[Provider, ...]] = (
    OpenAIResponses(),
    BedrockConverse(),
    AnthropicMessages(),
    CohereChat(),
    DeepSeek(),
    *compatible_providers(),
    OpenAIChat(),
    Gemini(),
)
_registered: dict[str, Provider] = {}
_entry_points_loaded = False


_NO_HOSTS: Final[tuple[str, ...]] = ()
_broken: dict[str, str] = {}  # provider name -> what it raised (skipped until registered again)
_strict: ContextVar[bool] = ContextVar("harness_strict_providers", default=False)
T = TypeVar("T")


class ProviderWarning(UserWarning):
    """A provider could not be loaded (an installed `harness.providers` entry point), or raised
    when used; it is skipped."""


class ProviderFailed(HarnessError):
    """A provider raised when used, where skipping it would make the answer unsure (the CLI)."""


@contextmanager
def strict_providers() -> Iterator[None]:
    """Inside, a provider that raises is a `ProviderFailed` (one line, exit 2), not a warning."""
    token = _strict.set(True)
    try:
        yield
    finally:
        _strict.reset(token)


def broken_providers() -> dict[str, str]:
    """The providers skipped because they raised, with what they raised."""
    return dict(_broken)


def guarded(provider: Provider, part: str, fallback: T, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)`, a part of `provider`; if it raises, the provider is skipped from then on (a
    `ProviderWarning`, or `ProviderFailed` under `strict_providers`) and `fallback` is returned."""
    try:
        return call(*args)
    except Exception as error:
        name = getattr(provider, "name", type(provider).__name__)
        message = one_line(
            f"provider {name!r} raised {type(error).__name__} in {part}: {error}; it is skipped"
            " (fix the plugin that registers it, or uninstall it)"
        )
        if _strict.get():
            raise ProviderFailed(message) from None
        if name not in _broken:
            _broken[name] = message
            warnings.warn(ProviderWarning(message), stacklevel=2)
        return fallback


def register_provider(provider: Provider | type[Any] | Any) -> Provider:
    """Add a provider (or a provider class, instantiated here); it is asked before built-ins.

    Returns the instance, so a class can be registered with `@register_provider` (the name then
    holds the instance). An object that is not a `Provider` subclass but has its required parts
    (a `name` string, `claims`, `split`) is adopted through `Conforming`, which is returned.
    """
    instance = provider() if isinstance(provider, type) else provider
    if not isinstance(instance, Provider):
        if not Conforming.conforms(instance):
            raise UsageError(
                f"{instance!r} is not a provider: subclass harness.providers.Provider (it needs a"
                " `name` string and the methods claims and split; usage, split_url, hosts and"
                " reasons have defaults)"
            )
        instance = Conforming(instance)
    if not isinstance(getattr(instance, "name", None), str):
        raise UsageError(f"{instance!r} is not a provider: its `name` must be a string")
    _registered.pop(instance.name, None)
    _registered[instance.name] = instance
    _broken.pop(instance.name, None)
    _declare(instance)
    return instance


def unregister_provider(name: str) -> None:
    """Remove a registered provider (built-in providers stay)."""
    _registered.pop(name, None)
    _broken.pop(name, None)
    for provider in _BUILT_IN:
        if provider.name == name:
            _declare(provider)


def registered_providers() -> tuple[Provider, ...]:
    """Every provider in the order they are asked: registered ones first, then the built-ins
    that no registered provider of the same name replaces (those that raised are skipped)."""
    global _asked
    _load_entry_points()
    key = (tuple(_registered.values()), tuple(_broken))
    if _asked is None or _asked[0] != key:  # the registry changed (or never answered)
        built_in = tuple(p for p in _BUILT_IN if p.name not in _registered)
        found = tuple(p for p in (*_registered.values(), *built_in) if p.name not in _broken)
        _asked = (key, found)
    return _asked[1]


# The last answer of `registered_providers`, with the registrations and failures it is of (every
# request asks it several times; the registry changes rarely).
_asked: tuple[tuple[tuple[Provider, ...], tuple[str, ...]], tuple[Provider, ...]] | None = None


def provider_named(name: str) -> Provider | None:
    return next((p for p in registered_providers() if p.name == name), None)


def provider_for(body: Mapping[str, Any], url: str | None = None) -> Provider | None:
    """The first provider that claims `body` (sent to `url`), or None."""
    return next(
        (p for p in registered_providers() if guarded(p, "claims", False, p.claims, body, url)),
        None,
    )


def split_with(
    provider: Provider,
    body: Mapping[str, Any],
    headers: Sequence[tuple[str, str]],
    url: str | None,
) -> RequestSplit:
    """`provider.split_url`: the split, with what the URL adds (the model, for some)."""
    return provider.split_url(body, headers, url)


def split_by_provider(
    body: Mapping[str, Any], headers: Sequence[tuple[str, str]], url: str | None
) -> RequestSplit | None:
    """The split of the first provider that claims `body` and splits it without raising."""
    for provider in registered_providers():
        if not guarded(provider, "claims", False, provider.claims, body, url):
            continue
        split = guarded(provider, "split", None, split_with, provider, body, headers, url)
        if split is not None:
            return split
    return None


def usage_of(provider: Provider, response: Any) -> Any:
    """`provider.usage(response)`, guarded."""
    return guarded(provider, "usage", None, provider.usage, response)


def provider_hosts() -> tuple[str, ...]:
    """Every host pattern some provider answers on, in the order providers are asked."""
    return tuple(
        dict.fromkeys(
            host
            for p in registered_providers()
            for host in guarded(p, "hosts", _NO_HOSTS, hosts_of, p)
        )
    )


def recognised_host(host: str) -> bool:
    """Whether some provider answers on `host` (a capture session intercepts it)."""
    return any(host_matches(pattern, host) for pattern in provider_hosts())


def _declare(provider: Provider) -> None:
    """The provider's own words over what the rules pack says of its settings."""
    declare(provider.name, reasons_of(provider).over(vocabulary(provider.name)))


def vocabulary_of(name: str, model: str | None, surface: str = "") -> Vocabulary:
    """The words a provider uses for what breaks its cache, for one model on one surface (its
    per-model setting rows first): what the cache model's verdict and layout read. Without a
    model, the provider's declared vocabulary."""
    if not model:
        return vocabulary_for(name)
    key = (name, model.lower(), surface, rules_pack().generation)
    found = _scoped.get(key)
    if found is None:
        provider = provider_named(name)
        own = reasons_of(provider) if provider is not None else Vocabulary()
        found = complete(own.over(vocabulary(name, model, surface)))
        if len(_scoped) > 4096:
            _scoped.clear()
        _scoped[key] = found
    return found


_scoped: dict[tuple[str, str, str, int], Vocabulary] = {}


def redeclare() -> None:
    """Every provider's vocabulary again (the rules in force changed)."""
    for provider in registered_providers():
        _declare(provider)


for _provider in _BUILT_IN:
    _declare(_provider)
on_change(redeclare)


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        try:
            register_provider(point.load())
        except Exception as error:  # a broken plugin must not take the harness down with it
            warnings.warn(
                ProviderWarning(
                    f"harness.providers entry point {point.name!r} ({point.value}) could not be"
                    f" loaded and is skipped: {error}"
                ),
                stacklevel=2,
            )
