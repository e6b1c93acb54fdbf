"""What a request or response body says once decoded: the texts the secret scan must see.

A cassette stores a body as JSON, text, server-sent-event lines or base64, and a key hidden by an
encoding is still a key. `decoded_texts` yields every view of a body that its stored bytes do not
show plainly: decompressed (`content-encoding` gzip, deflate or brotli, or gzip/zlib bytes however
labelled; brotli needs the `brotli` or `brotlicffi` package), decoded as UTF-16 or Latin-1 when it
is not UTF-8, JSON with its escapes resolved (`\\u0073k-ant-...` is `sk-ant-...`, and JSON held in
a JSON string is opened too), and the text a stream sent in small deltas, joined. A stream is
read in each format the providers use: server-sent events (an event's `data:` lines joined as
the format says), newline-delimited JSON, a JSON array of chunks (Gemini without `alt=sse`), and
AWS event-stream frames (Bedrock). Deltas are joined per channel, not in arrival order: per
choice (`n=2`), per content block, per tool call and per output item, each told apart by the
index or id its event carries (`index`, `contentBlockIndex`, `output_index`, `item_id`, ...), so
a key streamed in one choice while another choice interleaves is joined whole. The arrival-order
join is kept too. A body the harness cannot decode (brotli without the package, or more than
`MAX_DECODED` bytes once decompressed) is reported as unreadable, so it is refused rather than
written unscanned.

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

from harness._shared._secrets import Redaction, SecretFinding, findings_in

__all__ = ["MAX_DECODED", "Unreadable", "decoded_texts", "response_events", "scan_exchanges"]

MAX_DECODED: Final = 64 * 1024 * 1024
_MAX_DEPTH: Final = 4
# Keys whose string values a stream sends piece by piece (Anthropic, OpenAI Chat and Responses,
# Gemini, Bedrock): joined in order they give back the text the model wrote.
_DELTA_KEYS: Final = frozenset(
    {"text", "delta", "partial_json", "arguments", "content", "thinking", "refusal", "output_text"}
)
# Fields by which a stream's event names the channel its delta belongs to: the choice (OpenAI
# Chat `choices[].index`, Gemini `candidates[].index`), the content block (Anthropic `index`,
# Bedrock `contentBlockIndex`), the tool call (`tool_calls[].index`), the output item and part
# (OpenAI Responses `output_index`, `content_index`, `summary_index`, `item_id`).
_CHANNEL_KEYS: Final = (
    "index",
    "contentBlockIndex",
    "output_index",
    "content_index",
    "summary_index",
    "item_id",
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
    joined = _stream_text(text, value)
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
    """The JSON payloads of a server-sent event stream, in order.

    An event is the `data:` lines up to a blank line, joined by newlines (one optional space
    after the colon removed), as the format says: a payload may span several `data:` lines.
    Payloads that are not JSON (`data: [DONE]`) are skipped; an event whose joined lines are not
    JSON, but each of whose lines is, gives each line's payload (a stream without blank lines).
    """
    data: list[str] = []
    for line in (*lines, ""):
        if not line.strip():
            yield from _payloads(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
    # a last event without its blank line was dispatched by the "" above


def _payloads(data: list[str]) -> Iterator[Any]:
    if not data:
        return
    try:
        yield msgspec.json.decode("\n".join(data).strip())
        return
    except (msgspec.DecodeError, RecursionError):
        pass
    if len(data) > 1:
        for piece in data:
            try:
                yield msgspec.json.decode(piece.strip())
            except (msgspec.DecodeError, RecursionError):
                continue


def ndjson_events(text: str) -> list[Any]:
    """The objects of a newline-delimited JSON stream (Ollama, some gateways), or [] when `text`
    is not one: at least two lines, every non-empty line a JSON object."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or not all(line.lstrip().startswith("{") for line in lines):
        return []
    events = []
    for line in lines:
        try:
            events.append(msgspec.json.decode(line))
        except (msgspec.DecodeError, RecursionError):
            return []
    return events


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


def _stream_text(text: str, value: Any = None) -> str:
    """The delta strings of a stream, joined per channel and in arrival order ("" if `text` is
    not a stream): server-sent events, newline-delimited JSON, or a JSON array of chunks."""
    if "data:" in text:
        events = list(sse_events(text.splitlines()))
    elif isinstance(value, list) and len(value) > 1 and all(isinstance(v, dict) for v in value):
        events = value  # Gemini's streamGenerateContent without alt=sse: an array of chunks
    elif value is None:
        events = ndjson_events(text)
    else:
        events = []
    return _joined(events)


def _joined(events: Iterable[Any]) -> str:
    """Each channel's deltas joined, one channel a line, then every delta in arrival order."""
    channels: dict[tuple[Any, ...], list[str]] = {}
    arrival: list[str] = []
    for event in events:
        _collect_deltas(event, (), channels, arrival)
    if not arrival:
        return ""
    return "\n".join(["".join(pieces) for pieces in channels.values()] + ["".join(arrival)])


def _eventstream_text(raw: bytes) -> str:
    """The delta strings of an AWS event stream (Bedrock's `converse-stream` and
    `invoke-with-response-stream`: binary frames, each a JSON payload), joined ("" if the body
    is not one). A frame is its total length, its headers' length, a CRC-32 of those 8 bytes,
    the headers, the payload and a CRC-32 of it all; the prelude's CRC tells a stream apart."""
    events: list[Any] = []
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
        events.append(event)
    return _joined(events)


def _collect_deltas(
    value: Any,
    channel: tuple[Any, ...],
    channels: dict[tuple[Any, ...], list[str]],
    arrival: list[str],
) -> None:
    """Every delta string in `value`, by channel: the path of keys to it, where an object that
    names its place in the stream (`_CHANNEL_KEYS`) stands for its own place and a list item
    without one for its position."""
    if isinstance(value, dict):
        named = tuple(
            (key, value[key])
            for key in _CHANNEL_KEYS
            if isinstance(value.get(key), str | int) and not isinstance(value.get(key), bool)
        )
        here = (*channel, *named)
        for key, item in value.items():
            if isinstance(item, str) and key in _DELTA_KEYS:
                channels.setdefault((*here, key), []).append(item)
                arrival.append(item)
            elif isinstance(item, dict | list):
                _collect_deltas(item, (*here, key), channels, arrival)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            named_item = isinstance(item, dict) and any(key in item for key in _CHANNEL_KEYS)
            _collect_deltas(
                item, channel if named_item else (*channel, position), channels, arrival
            )
