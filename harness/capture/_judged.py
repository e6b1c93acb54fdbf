"""What a cassette must hold to be judged: at least one request body.

A cassette none of whose requests stores a body (`json`, `text`, `base64`, or `extends` with its
edits) gives the gate, the rules and the cost model nothing to read; before unknown fields were
refused, a body under a misspelt key looked exactly like that, and `harness check` passed it.
The readers that judge (`harness check`, `lint`, `cost`, `report`) refuse such a file in one line;
the plugin, which reads a cassette to answer from it, does not ask (decision 0033). A cassette of
requests that send no body by their method (a test that only lists models: `GET /v1/models`)
is not refused: a body is what a `POST`, `PUT` or `PATCH` lost, never what a `GET` lacks.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from harness._shared._errors import FixtureError
from harness.capture._cassette import CaptureFile, HttpRequest, all_exchanges

__all__ = ["has_body", "refuse_bodiless"]

# The methods whose requests carry a body (RFC 9110: a GET, HEAD or DELETE body has no meaning).
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def has_body(request: HttpRequest) -> bool:
    """Whether the request stores a body (or the edits that rebuild one)."""
    return any(
        not isinstance(value, msgspec.UnsetType)
        for value in (request.json, request.text, request.base64, request.extends)
    )


def refuse_bodiless(path: Path | str, capture: CaptureFile) -> None:
    """A `FixtureError` for a cassette that holds no request body: nothing to judge is no pass."""
    requests = [exchange.request for exchange in all_exchanges(capture)]
    if any(has_body(request) for request in requests):
        return
    if any(request.method.upper() in BODY_METHODS for request in requests):
        raise FixtureError(
            path,
            "holds no request body (no request has json, text, base64 or extends): there is"
            " nothing to judge",
            "re-record it, or delete it if its test no longer sends a request",
        )
