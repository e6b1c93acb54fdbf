"""Capture the requests real agents send, through whatever client they use, with no code change.

Most agents do not run the harness's reference runtime: they call a provider SDK or a framework,
which sends JSON over `httpx`/`httpx2`, `requests` (urllib3), botocore, `urllib`/`http.client`
or aiohttp. While a `CaptureSession` intercepts (`@pytest.mark.header_capture`), every request to
a provider's host goes through it: it records each request's exact body bytes and answers it from
a cassette (replay, no network) or from an upstream (record). Every request body is split into
the provider's cache order by `harness.providers`, and each request must extend the cached
prefix of the one it continues (the prefix-chain gate).

- `cassette`, `edits`: the file format (format 3 stores a request as what it adds to the one it
  extends) and where a test's cassette lives;
- `captured`: one request as the transport saw it, its body held once, shared along a
  conversation;
- `matching`: which recorded exchange answers a live request (a swappable `Matcher`);
- `config`: a project's settings (`harness_capture_config`): redaction, matcher, hosts;
- `session`: the modes, replay and record, redaction, the files to write;
- `proof`: prove_stable's bookkeeping (every order answered like the first);
- `transport`, `recording`: the `httpx2` and `httpx` transports, and an answer as it streams;
- `intercept`, `urllib3`, `stdlib`, `aiohttp`, `guard`: every client sends through the session,
  and a client the capture cannot see fails the test;
- `owner`: whose work sends a request (the test that started it), so a late one is refused;
- `timing`: when each exchange ran, and the deterministic order a cassette stores them in;
- `prefix`, `extends`: the prefix-chain gate; `audit`: what `harness check` reads in a cassette.

Importing this package imports nothing but itself: each name is imported from its module when
first asked for, and a transport is made on first use, from whichever HTTP library the project
has.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness._shared._errors import (
        CaptureError,
        CassetteMismatch,
        CassetteMissing,
        NetworkBlocked,
    )
    from harness._shared._errors import CassetteSecretLeak as SecretLeak
    from harness._shared._paths import cassette_path_for
    from harness._shared._secrets import REDACTED, Redaction, SecretFinding, scan_secrets
    from harness.capture._captured import Captured, split_exchange
    from harness.capture._cassette import (
        CaptureFile,
        Exchange,
        HttpRequest,
        HttpResponse,
        Proof,
        Timing,
        load_cassette,
    )
    from harness.capture._config import CaptureConfig
    from harness.capture._matching import (
        CacheViewMatcher,
        ExactBodyMatcher,
        Matcher,
        matcher_named,
        register_matcher,
    )
    from harness.capture._owner import LateRequestWarning
    from harness.capture._prefix import (
        PrefixBreak,
        PrefixBroken,
        PrefixChain,
        check_prefix_chain,
        prefix_chain,
    )
    from harness.capture._proof import ProofRun
    from harness.capture._session import CaptureSession, Finished, current_session

# Each public name and the module it lives in: imported when first asked for, so importing one
# part of the package (the cassette format, for `harness lint`) does not import the session,
# the transports and the gate.
_EXPORTS = {
    "CaptureError": "harness._shared._errors",
    "CassetteMismatch": "harness._shared._errors",
    "CassetteMissing": "harness._shared._errors",
    "NetworkBlocked": "harness._shared._errors",
    "SecretLeak": "harness._shared._errors:CassetteSecretLeak",
    "cassette_path_for": "harness._shared._paths",
    "REDACTED": "harness._shared._secrets",
    "Redaction": "harness._shared._secrets",
    "SecretFinding": "harness._shared._secrets",
    "scan_secrets": "harness._shared._secrets",
    "Captured": "harness.capture._captured",
    "split_exchange": "harness.capture._captured",
    "CaptureFile": "harness.capture._cassette",
    "Exchange": "harness.capture._cassette",
    "HttpRequest": "harness.capture._cassette",
    "HttpResponse": "harness.capture._cassette",
    "Proof": "harness.capture._cassette",
    "Timing": "harness.capture._cassette",
    "load_cassette": "harness.capture._cassette",
    "CaptureConfig": "harness.capture._config",
    "CacheViewMatcher": "harness.capture._matching",
    "ExactBodyMatcher": "harness.capture._matching",
    "Matcher": "harness.capture._matching",
    "matcher_named": "harness.capture._matching",
    "register_matcher": "harness.capture._matching",
    "LateRequestWarning": "harness.capture._owner",
    "PrefixBreak": "harness.capture._prefix",
    "PrefixBroken": "harness.capture._prefix",
    "PrefixChain": "harness.capture._prefix",
    "check_prefix_chain": "harness.capture._prefix",
    "prefix_chain": "harness.capture._prefix",
    "ProofRun": "harness.capture._proof",
    "current_session": "harness.capture._session",
    "CaptureSession": "harness.capture._session",
    "Finished": "harness.capture._session",
}

__all__ = [
    "REDACTED",
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
]


def __getattr__(name: str) -> Any:
    if name == "CaptureTransport":  # the httpx2 transport class, made when first asked for
        from harness.capture._transport import library, transport_class

        return transport_class(library("httpx2"))
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'harness.capture' has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    value = getattr(import_module(module), attribute or name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
