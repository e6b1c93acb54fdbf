"""Capture the request headers real agents send through the `anthropic` and `openai` SDKs.

Most agents do not run the harness's reference runtime: they call a provider SDK, which sends
JSON over `httpx2` (or plain `httpx`). A `CaptureSession` hands out HTTP clients whose transport
records each request's exact body bytes and answers it from a cassette (replay, no network) or
from an upstream transport (record). Every request body is split into the provider's cache order
by `harness.providers`.

- `cassette`: the file format and where a test's cassette lives;
- `captured`: one request as the transport saw it;
- `matching`: which recorded exchange answers a live request (a swappable `Matcher`);
- `config`: a project's settings (`harness_capture_config`): redaction, matcher, hosts;
- `session`: the modes, replay and record, redaction, the files to write;
- `proof`: prove_stable's bookkeeping (every order answered like the first);
- `transport`: the `httpx2` and `httpx` transports;
- `intercept`: every client of both libraries sends through the session (`session.intercept()`).
- `owner`: whose work sends a request (the test that started it), so a late one is refused;
- `timing`: when each exchange ran, and the deterministic order a cassette stores them in.

Importing this package imports neither HTTP library: a transport is made on first use, from
whichever of the two the project has.
"""

from __future__ import annotations

from typing import Any

from harness._shared._errors import CaptureError, CassetteMismatch, CassetteMissing, NetworkBlocked
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
from harness.capture._proof import ProofRun, current_session
from harness.capture._session import CaptureSession, Finished

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
    raise AttributeError(f"module 'harness.capture' has no attribute {name!r}")
