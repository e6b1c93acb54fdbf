"""Token counters: a tokenizer where one is installed, and a project's own (decision 0021).

A counter turns a request's prompt text into a token count; the estimate (`harness.cache._tokens`)
then scales each prefix by the request's counted tokens-to-bytes ratio. Order of belief: the
provider's recorded usage, then the first counter that answers, then bytes / 4.

- A project registers its own (`harness.rules.register_token_counter(count, name=,
  uncertainty=)`, e.g. in its conftest; `unregister_token_counter(name)` undoes it):
  `count(text, provider, model)` returns the tokens, or None for a request it does not count.
- Built in: tiktoken's `o200k_base` for OpenAI requests, used ONLY when tiktoken is installed
  and its encoding file is already in tiktoken's cache. tiktoken downloads an encoding at its
  first use; CI has no network, so the harness never triggers that download: while it asks
  tiktoken for the encoding, tiktoken's fetch is replaced by one that refuses, and a refusal
  means "no tokenizer". Looked up once, lazily, and only for an OpenAI request (the plugin never
  imports tiktoken at startup).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "Counted",
    "count_tokens",
    "counting",
    "register_token_counter",
    "unregister_token_counter",
]

CountFunction = Callable[[str, str, "str | None"], "int | None"]

_OPENAI = frozenset({"openai-chat", "openai-responses"})


class Counted(NamedTuple):
    tokens: int
    how: str  # "counted by NAME (UNCERTAINTY)"


class _Counter(NamedTuple):
    name: str
    counts: CountFunction
    uncertainty: str


_lock = threading.Lock()
_registered: dict[str, _Counter] = {}
_builtin: list[_Counter | None] = []  # looked up once: [counter] or [None]


def register_token_counter(count: CountFunction, *, name: str, uncertainty: str = "") -> None:
    """Count tokens with `count(text, provider, model)` (None: not this request), asked before
    the built-in tokenizer. `uncertainty` is printed with every figure it makes ("exact for
    Claude 4", "about ±5%"). A second counter of the same `name` replaces the first."""
    from harness._shared._errors import UsageError

    if not callable(count):
        raise UsageError(f"register_token_counter: {count!r} is not callable")
    if not isinstance(name, str) or not name:
        raise UsageError("register_token_counter: give the counter a name (name='...')")
    with _lock:
        _registered[name] = _Counter(name, count, uncertainty)


def unregister_token_counter(name: str) -> None:
    with _lock:
        _registered.pop(name, None)


def counting(provider: str | None = None) -> bool:
    """Whether any counter may answer (a project's, or the built-in tokenizer; for `provider`,
    the tokenizer only where it counts that provider's requests: tiktoken is not even imported
    for another vendor's)."""
    with _lock:
        registered = bool(_registered)
    return registered or (_counts(provider) and _tiktoken() is not None)


def _counts(provider: str | None) -> bool:
    return provider is None or provider in _OPENAI


def count_tokens(text: bytes, provider: str, model: str | None) -> Counted | None:
    """The tokens of a request's prompt `text` by the first counter that answers, or None."""
    with _lock:
        counters = list(_registered.values())
    for counter in [*counters, _tiktoken() if _counts(provider) else None]:
        if counter is None:
            continue
        try:
            found = counter.counts(text.decode("utf-8", "replace"), provider, model)
        except Exception:  # a project's counter that fails is not asked again for this one
            continue
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            said = f" ({counter.uncertainty})" if counter.uncertainty else ""
            return Counted(found, f"counted by {counter.name}{said}")
    return None


def _tiktoken() -> _Counter | None:
    with _lock:
        if not _builtin:
            _builtin.append(_load_tiktoken())
        return _builtin[0]


class _NotCached(Exception):
    pass


def _load_tiktoken() -> _Counter | None:
    """tiktoken's `o200k_base` when it is installed and its file is cached, else None; never a
    download (see the module doc)."""
    try:
        import tiktoken
        import tiktoken.load as load
    except Exception:  # not installed, or broken: bytes / 4
        return None

    def refuse(blobpath: str) -> bytes:
        raise _NotCached(blobpath)

    fetch: Any = load.read_file
    load.read_file = refuse
    try:
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not cached (refused), or a cache tiktoken would fetch again
        return None
    finally:
        load.read_file = fetch

    def count(text: str, provider: str, model: str | None) -> int | None:
        if provider not in _OPENAI:
            return None  # another vendor's tokenizer: bytes / 4 says its uncertainty honestly
        return len(encoding.encode(text, disallowed_special=()))

    return _Counter("tiktoken o200k_base", count, "GPT-4o and later's encoding, JSON framing aside")
