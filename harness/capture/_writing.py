"""What a capture session writes: the cassette in format 3, redacted, and scanned for secrets.

Each request that extends an earlier request of its list is written as `extends` and `edits`
(`harness.capture._edits`) when that is smaller and rebuilds the exact body; the bytes are then
read back as the reader reads them (a file the reader would refuse is refused here, in one
line) and scanned: for key-shaped strings and the redacted headers' values in the bytes, then in
what each body says once decoded. Nothing is written by this module: it gives the bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import msgspec

from harness._shared._body_text import scan_exchanges
from harness._shared._errors import CassetteSecretLeak, FixtureError
from harness._shared._files import Versioned, decode, encode
from harness._shared._secrets import Redaction
from harness.capture._cassette import (
    CASSETTE_FORMAT,
    CaptureFile,
    Exchange,
    HttpRequest,
    all_exchanges,
    body_document,
    redacted,
    secret_values,
)
from harness.capture._edits import Edit, apply_edits, edits_between

__all__ = ["cassette_bytes", "encode_cassette"]


class _StoredProof(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """`Proof` as format 3 writes it: requests may be edits of earlier ones (never rebuilt)."""

    units: tuple[str, ...] = ()
    exchanges: tuple[Exchange, ...] = ()


class _StoredCapture(Versioned, frozen=True, kw_only=True, tag="harness/capture"):
    """`CaptureFile` as format 3 writes it (the same fields, in the same order)."""

    format: int = CASSETTE_FORMAT
    started: str | msgspec.UnsetType = msgspec.UNSET
    exchanges: tuple[Exchange, ...] = ()
    proofs: tuple[_StoredProof, ...] = ()
    moves_header: str | msgspec.UnsetType = msgspec.UNSET


def cassette_bytes(
    capture: CaptureFile, redaction: Redaction, secrets: Sequence[str], shown: str
) -> bytes:
    """The exact bytes the cassette file gets: redacted, written as format 3, then scanned for
    secrets (`secrets`: values known to be secret besides the redacted headers'); a hit raises
    `CassetteSecretLeak` naming `shown`, and nothing is written."""
    known = sorted({*secrets, *secret_values(capture, redaction)})
    clean = redacted(capture, redaction)
    data = encode_cassette(clean, shown)
    findings = redaction.scan(data, known)
    if not findings:  # what the bodies say once decompressed, unescaped, joined
        findings = scan_exchanges(all_exchanges(clean), redaction, known)
    if findings:
        raise CassetteSecretLeak(shown, findings)
    return data


# How many earlier requests to the same endpoint a request is tried against: the latest one, or
# (two conversations taking turns, an agent and its sub-agent) one or two before it.
_CANDIDATES: Final = 3


def encode_cassette(capture: CaptureFile, path: Path | str = "<cassette>") -> bytes:
    """The bytes of `capture` as format 3 writes it: each request that extends an earlier one of
    its list as `extends` and `edits`, where that is smaller and rebuilds the exact body.

    The bytes are read back as `load_cassette` reads them before anything is written: a file
    the reader would refuse (too large, nested too deeply) is refused here, in one line
    naming it, and nothing is written.
    """
    stored = _StoredCapture(
        started=capture.started,
        exchanges=_stored(capture.exchanges),
        proofs=tuple(
            _StoredProof(units=p.units, exchanges=_stored(p.exchanges)) for p in capture.proofs
        ),
        moves_header=capture.moves_header,
    )
    data = encode(stored)
    try:
        decode(data, CaptureFile, path)
    except FixtureError as error:
        raise FixtureError(
            path,
            f"would be refused when read back, so it is not written: {error.problem}",
            "split the test's conversation, or record fewer requests in one test",
        ) from None
    return data


def _stored(exchanges: tuple[Exchange, ...]) -> tuple[Exchange, ...]:
    """The exchanges with each request stored as edits of an earlier one where that is smaller."""
    stored: list[Exchange] = []
    for number, exchange in enumerate(exchanges, start=1):
        request = exchange.request
        edited = _as_edits(request, exchanges[: number - 1])
        stored.append(
            exchange if edited is None else msgspec.structs.replace(exchange, request=edited)
        )
    return tuple(stored)


def _as_edits(request: HttpRequest, earlier: tuple[Exchange, ...]) -> HttpRequest | None:
    document = body_document(request)
    if document is None:
        return None
    form, body = document
    whole = _encode_value(body) if form == "json" else body.encode("utf-8")
    best: tuple[int, int, tuple[Edit, ...]] | None = None  # (size, number, edits)
    tried = 0
    for index in range(len(earlier) - 1, -1, -1):
        base = earlier[index].request
        if (base.method, base.url) != (request.method, request.url):
            continue
        found = body_document(base)
        if found is None or found[0] != form:
            continue
        tried += 1
        edits = tuple(edits_between(found[1], body))
        rebuilt = apply_edits(found[1], edits)
        same = _encode_value(rebuilt) == whole if form == "json" else rebuilt == body
        size = len(_encode_value(edits))
        if same and size < len(whole) and (best is None or size < best[0]):
            best = (size, index + 1, edits)
        if tried == _CANDIDATES or (best is not None and best[0] * 4 < len(whole)):
            break  # a small edit of the latest is what a conversation gives: look no further
    if best is None:
        return None
    return msgspec.structs.replace(
        request, json=msgspec.UNSET, text=msgspec.UNSET, extends=best[1], edits=best[2]
    )


_encode_value = msgspec.json.Encoder().encode
