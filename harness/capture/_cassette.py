"""The cassette format: a test's HTTP exchanges as recorded, redacted, and where the file lives.

`fixtures/cassettes/<test file>/<test name>.json` holds `CaptureFile`: the test's own requests and
answers in order, then one `Proof` per `prove_stable` call (the answers its first order got). A
request keeps its exact body bytes (as parsed JSON when re-encoding it gives them back, which is
what the SDKs send: readable and diffable), its headers as ordered pairs with secrets redacted,
and none of the per-machine headers (host, user agent, retries). A response keeps its status,
headers and body; server-sent events are kept as lines.

Format 2 (format 1 files are read as they are) adds the real timing beside each recorded
exchange: `started`, the wall-clock time of the test's first request, and per exchange `timing`,
its start and end in milliseconds from then (which requests overlapped follows from them). The
order is deterministic (`stored_order`): requests one after the other keep the order they were
sent in; requests in flight together are stored by what they are, whatever order they arrived
and finished in, so re-recording unchanged concurrent code leaves the file as it was.

Format 3 stores a conversation in size linear in its length: a request that extends an earlier
request of the same list (the test's exchanges, or one `prove_stable` call's) is stored as that
exchange's number, `extends`, and the `edits` that turn its body into this one (new messages, a
moved cache marker, a grown message: `harness.capture._edits`). Reading rebuilds every body
byte for byte (a `CaptureFile` in memory always holds whole requests, sharing what they have in
common); `harness.capture._writing` writes the edits, only where rebuilding gives back the exact
bytes.
`harness show --requests` prints the whole requests; formats 1 and 2 still load, and `harness
refresh` rewrites them as format 3.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Final, NamedTuple

import msgspec

from harness._shared._files import Versioned, decode, read, read_checked, warn_if_secret
from harness._shared._secrets import Redaction
from harness.capture._edits import Edit, apply_edits

__all__ = [
    "CASSETTE_FORMAT",
    "FRAMING",
    "CaptureFile",
    "Exchange",
    "HttpRequest",
    "HttpResponse",
    "Proof",
    "ReadCassette",
    "Timing",
    "all_exchanges",
    "body_document",
    "load_cassette",
    "read_cassette",
    "redacted",
    "request_record",
    "response_record",
    "secret_values",
    "without_timing",
]


CASSETTE_FORMAT: Final = 3  # the format this harness writes
# An exchange's time from the recording's start: a re-record counts on from the first
# recording's zero, so years are possible, a thousand years are not.
Millis = Annotated[float, msgspec.Meta(ge=-1e12, le=1e12)]


class HttpRequest(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A request as stored: redacted headers as ordered pairs, and the exact body.

    The body is in exactly one of: `json` (the parsed body, when re-encoding it compactly gives
    back the exact bytes sent, which is what the SDKs send: readable and diffable), `text` (UTF-8
    that is not such JSON) or `base64`. In a format 3 file, a request may instead name the
    earlier exchange it `extends` and the `edits` to that one's body (`json` or `text`); reading
    the file rebuilds the body, so a request in memory always holds it whole.
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    json: Any | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET
    extends: int | msgspec.UnsetType = msgspec.UNSET
    edits: tuple[Edit, ...] | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        _check_base64(self.base64)

    @property
    def body(self) -> bytes:
        return _body_bytes(self.json, self.text, msgspec.UNSET, self.base64)

    @property
    def parsed(self) -> Any:
        """The body as a JSON value, whatever its spacing or escaping (a spaced body is kept as
        `text`); None when it is not JSON."""
        if not isinstance(self.json, msgspec.UnsetType):
            return self.json
        if isinstance(self.text, msgspec.UnsetType):
            return None
        try:
            return msgspec.json.decode(self.text)
        except (msgspec.DecodeError, RecursionError):
            return None


class HttpResponse(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """A response as stored. Server-sent events are kept as `lines` (joined by "\\n")."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    json: Any | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    lines: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    base64: str | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        _check_base64(self.base64)

    @property
    def body(self) -> bytes:
        return _body_bytes(self.json, self.text, self.lines, self.base64)


class Timing(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """When one exchange ran: milliseconds from the cassette's `started` to the request being
    sent and to its answer ending (the stream's last byte)."""

    start_ms: Millis
    end_ms: Millis


class Exchange(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    request: HttpRequest
    response: HttpResponse
    timing: Timing | msgspec.UnsetType = msgspec.UNSET  # absent in format 1


class Proof(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """The exchanges of the first build of one `prove_stable` call (identity order).

    Every other order of that call is answered from them by position, so a shuffled build gets
    the same answers and only its request bytes can differ.
    """

    units: tuple[str, ...] = ()
    exchanges: tuple[Exchange, ...] = ()

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(
            self, "exchanges", _rebuilt(self.exchanges, "a prove_stable call's exchange")
        )


class CaptureFile(Versioned, frozen=True, kw_only=True, tag="harness/capture"):
    """A cassette: the test's requests and answers in order, then one entry per prove_stable.

    `moves_header` is the reason of the test's `moves_header` marker, written so that
    `harness check` honours the exemption too (absent when the test has none). `started` is the
    wall-clock time (UTC, ISO 8601) the exchanges' `timing` counts from (format 2).
    """

    READS: ClassVar[frozenset[int]] = frozenset({1, 2, CASSETTE_FORMAT})
    format: int = CASSETTE_FORMAT
    started: str | msgspec.UnsetType = msgspec.UNSET
    exchanges: tuple[Exchange, ...] = ()
    proofs: tuple[Proof, ...] = ()
    moves_header: str | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if self.format < CASSETTE_FORMAT and any(
            not isinstance(e.request.extends, msgspec.UnsetType)
            for e in (*self.exchanges, *(e for p in self.proofs for e in p.exchanges))
        ):
            raise ValueError(f"format {self.format} has no requests that extend others (format 3)")
        msgspec.structs.force_setattr(self, "exchanges", _rebuilt(self.exchanges, "exchange"))


# Transport framing: the stored body is decoded, so these would lie on replay.
FRAMING: Final = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection"}
)
# Per-machine and per-attempt request headers: dropped so a re-record elsewhere is identical.
_VOLATILE_REQUEST: Final = frozenset(
    {"host", "user-agent", "accept-encoding", "connection", "content-length", "idempotency-key"}
    # AWS SigV4 (botocore): the signature's date, the session token, the SDK's per-attempt ids;
    # the signature itself (`authorization: AWS4-HMAC-SHA256 ...`) is dropped by its value.
    | {"x-amz-date", "x-amz-security-token", "amz-sdk-invocation-id", "amz-sdk-request"}
)
_SIGV4: Final = "aws4-hmac-sha256"


def request_record(
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    exact: Any = msgspec.UNSET,
) -> HttpRequest:
    """A request as the cassette stores it (not yet redacted: `redacted` does that). `exact` is
    the body already decoded, when it is known to encode to exactly `body`."""
    kept = tuple(
        (name, value)
        for name, value in headers
        if not _volatile_request_header(name) and not _signature(name, value)
    )
    fields = {"json": exact} if exact is not msgspec.UNSET else _body_fields(body, sse=False)
    return HttpRequest(method=method, url=url, headers=kept, **fields)


def response_record(status: int, headers: Sequence[tuple[str, str]], body: bytes) -> HttpResponse:
    kept = tuple((name.lower(), value) for name, value in headers if name.lower() not in FRAMING)
    content_type = next((value for key, value in kept if key == "content-type"), "")
    return HttpResponse(
        status=status,
        headers=kept,
        **_body_fields(body, sse=content_type.startswith("text/event-stream")),
    )


def all_exchanges(capture: CaptureFile) -> Iterator[Exchange]:
    yield from capture.exchanges
    for proof in capture.proofs:
        yield from proof.exchanges


def redacted(capture: CaptureFile, redaction: Redaction) -> CaptureFile:
    """The cassette with secret headers and query parameters replaced by `[redacted]`."""

    def one(exchange: Exchange) -> Exchange:
        request = msgspec.structs.replace(
            exchange.request,
            url=redaction.url(exchange.request.url),
            headers=redaction.header_pairs(exchange.request.headers),
        )
        response = msgspec.structs.replace(
            exchange.response, headers=redaction.header_pairs(exchange.response.headers)
        )
        return msgspec.structs.replace(exchange, request=request, response=response)

    return msgspec.structs.replace(
        capture,
        exchanges=tuple(one(e) for e in capture.exchanges),
        proofs=tuple(
            Proof(units=p.units, exchanges=tuple(one(e) for e in p.exchanges))
            for p in capture.proofs
        ),
    )


def without_timing(capture: CaptureFile) -> CaptureFile:
    """The cassette without its timing: what a re-record must change to be worth writing."""

    def bare(exchanges: tuple[Exchange, ...]) -> tuple[Exchange, ...]:
        return tuple(msgspec.structs.replace(e, timing=msgspec.UNSET) for e in exchanges)

    return msgspec.structs.replace(
        capture,
        started=msgspec.UNSET,
        exchanges=bare(capture.exchanges),
        proofs=tuple(
            msgspec.structs.replace(p, exchanges=bare(p.exchanges)) for p in capture.proofs
        ),
    )


def secret_values(capture: CaptureFile, redaction: Redaction) -> list[str]:
    """The values of the headers `redaction` hides, to look for anywhere else in the file."""
    values: list[str] = []
    for exchange in all_exchanges(capture):
        values += redaction.secret_values(exchange.request.headers)
        values += redaction.secret_values(exchange.response.headers)
    return values


def load_cassette(path: Path) -> CaptureFile:
    """Read a cassette strictly (a `FixtureError` names the file and the problem)."""
    return read(path, CaptureFile)


class ReadCassette(NamedTuple):
    """A cassette read once: its path, its bytes (the secret scan reads them) and its requests."""

    path: Path
    data: bytes
    capture: CaptureFile


def read_cassette(path: Path) -> ReadCassette:
    """`load_cassette`, keeping the bytes: what `harness check` reads once and shares between
    the audit, the rules and the cost model."""
    data = read_checked(path)
    capture = decode(data, CaptureFile, path)
    warn_if_secret(path, data)
    return ReadCassette(path, data, capture)


# -- format 3: a request as what it adds to the one it extends ----------------------------------


def body_document(request: HttpRequest) -> tuple[str, Any] | None:
    """The body an edit applies to: ("json", value) or ("text", string); None for base64."""
    if isinstance(request.extends, int):
        return None
    if not isinstance(request.json, msgspec.UnsetType):
        return "json", request.json
    if isinstance(request.text, str):
        return "text", request.text
    return None


def _rebuilt(exchanges: tuple[Exchange, ...], what: str) -> tuple[Exchange, ...]:
    """The exchanges with every request that extends another rebuilt whole (a `ValueError`,
    which msgspec reports as the file not matching its format, names the first that cannot)."""
    if not any(
        not isinstance(e.request.extends, msgspec.UnsetType)
        or not isinstance(e.request.edits, msgspec.UnsetType)
        for e in exchanges
    ):
        return exchanges
    rebuilt: list[Exchange] = []
    for number, exchange in enumerate(exchanges, start=1):
        request = exchange.request
        if isinstance(request.extends, int):
            request = _rebuilt_request(request, rebuilt, f"{what} {number}")
            exchange = msgspec.structs.replace(exchange, request=request)
        elif not isinstance(request.edits, msgspec.UnsetType):
            raise ValueError(f"{what} {number} has edits but extends no exchange")
        rebuilt.append(exchange)
    return tuple(rebuilt)


def _rebuilt_request(request: HttpRequest, earlier: list[Exchange], where: str) -> HttpRequest:
    extends = request.extends
    assert isinstance(extends, int)
    if not 1 <= extends <= len(earlier):
        raise ValueError(f"{where} extends exchange {extends}, which is not an earlier one")
    if any(
        not isinstance(value, msgspec.UnsetType)
        for value in (request.json, request.text, request.base64)
    ):
        raise ValueError(f"{where} both holds a body and extends exchange {extends}")
    document = body_document(earlier[extends - 1].request)
    if document is None:
        raise ValueError(f"{where} extends exchange {extends}, whose body is neither JSON nor text")
    form, base = document
    edits = request.edits if isinstance(request.edits, tuple) else ()
    try:
        body = apply_edits(base, edits)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if form == "text":
        if not isinstance(body, str):
            raise ValueError(f"{where}: its edits turn a text body into a JSON value")
        return msgspec.structs.replace(
            request, text=body, extends=msgspec.UNSET, edits=msgspec.UNSET
        )
    return msgspec.structs.replace(request, json=body, extends=msgspec.UNSET, edits=msgspec.UNSET)


def _signature(name: str, value: str) -> bool:
    """A SigV4 `authorization` header: new at every request, and a credential."""
    return name.lower() == "authorization" and value.strip().lower().startswith(_SIGV4)


def _volatile_request_header(name: str) -> bool:
    lower = name.lower()
    return lower in _VOLATILE_REQUEST or lower.startswith("x-stainless-")


def _body_fields(data: bytes, *, sse: bool) -> dict[str, Any]:
    if not data:
        return {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}
    if sse and "\r" not in text:
        return {"lines": tuple(text.split("\n"))}
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return {"text": text}
    if msgspec.json.encode(value) == data:
        return {"json": value}
    return {"text": text}


def _check_base64(value: Any) -> None:
    """A stored `base64` body must decode (a ValueError, which msgspec reports with the field's
    place in the file): a bad one would raise only when the body is first read."""
    if isinstance(value, str):
        try:
            base64.b64decode(value, validate=True)
        except ValueError:  # binascii.Error: bad padding, a character outside the alphabet
            raise ValueError("its base64 body is not valid base64 (bad padding?)") from None


def _body_bytes(json: Any, text: Any, lines: Any, b64: Any) -> bytes:
    if not isinstance(json, msgspec.UnsetType):
        return msgspec.json.encode(json)
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(lines, tuple | list):
        return "\n".join(lines).encode("utf-8")
    if isinstance(b64, str):
        return base64.b64decode(b64)
    return b""
