"""What a request or response body says once decoded: the texts the secret scan must see.

A cassette stores a body as JSON, text, server-sent-event lines or base64, and a key hidden by an
encoding is still a key. `decoded_texts` yields every view of a body that its stored bytes do not
show plainly: decompressed (`content-encoding` gzip, deflate or brotli, or gzip/zlib bytes however
labelled; brotli needs the `brotli` or `brotlicffi` package), decoded as UTF-16 or Latin-1 when it
is not UTF-8, JSON with its escapes resolved (`\\u0073k-ant-...` is `sk-ant-...`, and JSON held in
a JSON string is opened too), and the text a stream sent in small deltas, joined (server-sent
events, and AWS event-stream frames for Bedrock). A body the harness cannot decode (brotli
without the package, or more than `MAX_DECODED` bytes once decompressed) is reported as
unreadable, so it is refused rather than written unscanned.

`scan_exchanges` runs the scan over a cassette's exchanges; `harness.capture._session` calls it
before a cassette is written.
"""

from __future__ import annotations

import base64
import importlib
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, Protocol

import msgspec

from harness._secrets import Redaction, SecretFinding, findings_in

__all__ = ["MAX_DECODED", "Unreadable", "decoded_texts", "response_events", "scan_exchanges"]

MAX_DECODED: Final = 64 * 1024 * 1024
_MAX_DEPTH: Final = 4
# Keys whose string values a stream sends piece by piece (Anthropic, OpenAI Chat and Responses,
# Gemini, Bedrock): joined in order they give back the text the model wrote.
_DELTA_KEYS: Final = frozenset(
    {"text", "delta", "partial_json", "arguments", "content", "thinking", "refusal", "output_text"}
)


_UNICODE_ESCAPE: Final = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescaped(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16))


class Unreadable(Exception):
    """A body the scan cannot read; `str(error)` says why (a SecretFinding kind)."""


class _Message(Protocol):
    @property
    def body(self) -> bytes: ...

    @property
    def headers(self) -> tuple[tuple[str, str], ...]: ...


class _Exchange(Protocol):
    @property
    def request(self) -> _Message: ...

    @property
    def response(self) -> _Message: ...


def scan_exchanges(
    exchanges: Iterable[_Exchange], redaction: Redaction, secrets: Sequence[str] = ()
) -> list[SecretFinding]:
    """Findings in the decoded views of every body (the first exchange with any), else []."""
    for number, exchange in enumerate(exchanges, 1):
        for part, message in (("request", exchange.request), ("response", exchange.response)):
            where = f"exchange {number}'s {part} body"
            try:
                views = list(decoded_texts(message.body, message.headers))
            except Unreadable as error:
                return [SecretFinding(str(error), 1, 1, where)]
            for how, text in views:
                found = findings_in(
                    text,
                    redaction.patterns,
                    allow=redaction.allow,
                    secrets=secrets,
                    where=f"{where} ({how})",
                )
                if found:
                    return found
    return []


def decoded_texts(
    body: bytes, headers: Sequence[tuple[str, str]] = ()
) -> Iterator[tuple[str, str]]:
    """(how, text) for each decoded view of `body` that its plain UTF-8 bytes do not show."""
    if not body:
        return
    raw, how = _decompressed(body, _encodings(headers))
    texts = _texts(raw)
    for charset, view in texts:
        if how or charset:
            yield " and ".join(part for part in (how, charset) if part), view
    text = texts[0][1]
    try:
        value = msgspec.json.decode(text.encode("utf-8", "surrogatepass"))
    except (msgspec.DecodeError, RecursionError):
        value = None
    if value is not None and ("\\" in text):
        yield "JSON with escapes resolved", "\n".join(_strings(value, 0))
    elif value is None and "\\u" in text:  # not JSON, yet escaped: resolve them one by one
        yield "with \\u escapes resolved", _UNICODE_ESCAPE.sub(_unescaped, text)
    joined = _stream_text(text)
    if joined:
        yield "streamed text joined across events", joined
    framed = _eventstream_text(raw)
    if framed:
        yield "streamed text joined across event-stream frames", framed


def _encodings(headers: Sequence[tuple[str, str]]) -> list[str]:
    found = []
    for name, value in headers:
        if name.lower() == "content-encoding":
            found += [part.strip().lower() for part in value.split(",") if part.strip()]
    return [e for e in found if e not in ("identity", "")]


def _decompressed(body: bytes, encodings: list[str]) -> tuple[bytes, str]:
    """The body with its content encodings undone (last applied first), and how."""
    done = []
    for encoding in reversed(encodings):
        body = _undo(body, encoding)
        done.append(encoding)
    while len(done) < _MAX_DEPTH and (
        body[:2] == b"\x1f\x8b" or (body[:1] == b"\x78" and _zlib_header(body))
    ):
        kind = "gzip" if body[:2] == b"\x1f\x8b" else "deflate"
        try:
            body = _undo(body, kind)
        except Unreadable:
            break  # bytes that only look compressed: scan them as they are
        done.append(kind)
    return body, (f"{'+'.join(reversed(done))}-decoded" if done else "")


def _zlib_header(body: bytes) -> bool:
    return len(body) > 2 and (body[0] * 256 + body[1]) % 31 == 0


def _undo(body: bytes, encoding: str) -> bytes:
    if encoding in ("gzip", "x-gzip", "deflate"):
        wbits = 47 if encoding != "deflate" else (15 if _zlib_header(body) else -15)
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, MAX_DECODED + 1)
        except zlib.error:
            raise Unreadable(f"a {encoding} body that does not decompress") from None
        if len(out) > MAX_DECODED or inflater.unconsumed_tail:
            raise Unreadable(f"a {encoding} body over {MAX_DECODED:,} bytes once decompressed")
        return out
    if encoding == "br":
        module = _brotli()
        if module is None:
            raise Unreadable(
                "a brotli-compressed body the harness cannot read (pip install brotli to let it"
                " scan the body, or send it uncompressed)"
            )
        try:
            out = module.decompress(body)
        except Exception:
            raise Unreadable("a br body that does not decompress") from None
        if len(out) > MAX_DECODED:
            raise Unreadable(f"a br body over {MAX_DECODED:,} bytes once decompressed")
        return bytes(out)
    raise Unreadable(f"a body in content encoding {encoding!r}, which the harness cannot read")


def _brotli() -> Any:
    for name in ("brotli", "brotlicffi"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _texts(raw: bytes) -> list[tuple[str, str]]:
    """The body as text: UTF-8 when it is; else as Latin-1 (every byte, so an ASCII key shows)
    and, when it looks like UTF-16 (a byte order mark, or many NUL bytes), as UTF-16 too."""
    try:
        return [("", raw.decode("utf-8"))]
    except UnicodeDecodeError:
        pass
    found = [("read as Latin-1", raw.decode("latin-1"))]
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or raw.count(0) * 3 >= len(raw):
        for codec in ("utf-16", "utf-16-le", "utf-16-be"):
            try:
                found.append(("read as UTF-16", raw.decode(codec)))
                break
            except UnicodeDecodeError:
                continue
    return found


def _strings(value: Any, depth: int) -> Iterator[str]:
    """Every key and string in a JSON value, and those of JSON held inside its strings."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item, depth)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth)
    elif isinstance(value, str):
        yield value
        if depth < _MAX_DEPTH and value[:1] in ("{", "[") and len(value) > 1:
            try:
                inner = msgspec.json.decode(value)
            except (msgspec.DecodeError, RecursionError):
                return
            yield from _strings(inner, depth + 1)


def sse_events(lines: Iterable[str]) -> Iterator[Any]:
    """The JSON payloads of a server-sent event stream's `data:` lines, in order (lines that are
    not JSON, such as `data: [DONE]`, are skipped)."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        try:
            yield msgspec.json.decode(line[5:].strip())
        except (msgspec.DecodeError, RecursionError):
            continue


def response_events(json: Any, text: Any, lines: Any) -> list[Any]:
    """The JSON values a recorded response holds, in order: its JSON body (each item of a JSON
    array stream: Gemini's `streamGenerateContent`), its server-sent events (`alt=sse`), or its
    text decoded the same ways (a spaced or escaped body is kept as text)."""
    if not isinstance(json, msgspec.UnsetType):
        return list(json) if isinstance(json, list) else [json]
    if isinstance(lines, tuple | list):
        return list(sse_events(lines))
    if not isinstance(text, str):
        return []
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return list(sse_events(text.splitlines())) if "data:" in text else []
    return list(value) if isinstance(value, list) else [value]


def _stream_text(text: str) -> str:
    """The delta strings of a server-sent event stream, joined in order ("" if not a stream)."""
    if "data:" not in text:
        return ""
    pieces: list[str] = []
    for event in sse_events(text.splitlines()):
        _collect_deltas(event, pieces)
    return "".join(pieces)


def _eventstream_text(raw: bytes) -> str:
    """The delta strings of an AWS event stream (Bedrock's `converse-stream` and
    `invoke-with-response-stream`: binary frames, each a JSON payload), joined ("" if the body
    is not one). A frame is its total length, its headers' length, a CRC-32 of those 8 bytes,
    the headers, the payload and a CRC-32 of it all; the prelude's CRC tells a stream apart."""
    pieces: list[str] = []
    at = 0
    while at + 16 <= len(raw):
        total, headers = int.from_bytes(raw[at : at + 4]), int.from_bytes(raw[at + 4 : at + 8])
        prelude_ok = zlib.crc32(raw[at : at + 8]) == int.from_bytes(raw[at + 8 : at + 12])
        if not prelude_ok or total < 16 + headers or at + total > len(raw):
            break
        payload = raw[at + 12 + headers : at + total - 4]
        at += total
        try:
            event = msgspec.json.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            continue
        inner = event.get("bytes") if isinstance(event, dict) else None
        if isinstance(inner, str):  # invoke-with-response-stream: base64 of the model's JSON
            try:
                event = msgspec.json.decode(base64.b64decode(inner, validate=True))
            except (ValueError, msgspec.DecodeError, RecursionError):
                continue
        _collect_deltas(event, pieces)
    return "".join(pieces)


def _collect_deltas(value: Any, pieces: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and key in _DELTA_KEYS:
                pieces.append(item)
            else:
                _collect_deltas(item, pieces)
    elif isinstance(value, list):
        for item in value:
            _collect_deltas(item, pieces)
