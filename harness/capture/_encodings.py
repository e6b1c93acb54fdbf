"""A request body sent compressed (`Content-Encoding` on the request): what the capture judges.

Some SDKs and proxies compress the bodies they send (`Content-Encoding: gzip`). The provider
reads the body decompressed, so the capture does too: matching, the cache split, the prefix-chain
gate and the cassette get the decoded bytes, without the `content-encoding` header (as a
recorded answer's body is stored decoded, less its framing: `_cassette.FRAMING`), while the
upstream is sent the original bytes. Compressed bytes change with the compressor's level and
gzip's timestamp while what they say does not: two runs compare what they say.

Decoded: `gzip` (`x-gzip`) and `deflate` (zlib-wrapped or raw) with the standard library;
`zstd` with `zstandard`, which the harness declares (its `scan` extra), when it is installed.
`br` has no decoder among the harness's declared dependencies. A body the capture cannot decode
(`br`, `zstd` without `zstandard`, an encoding it does not know, bytes that do not decompress,
more than `MAX_DECODED` bytes once decompressed) is kept as sent, header included, and judged
as opaque bytes, with a note on the session saying why. Several encodings (`gzip, br`) are
undone last first, or not at all.
"""

from __future__ import annotations

import importlib
import io
import zlib
from collections.abc import Callable, Sequence
from typing import Final

from harness._shared._body_text import MAX_DECODED

__all__ = ["decoded_request"]

_HEADER: Final = "content-encoding"


class _Undecodable(Exception):
    """Why a body is kept as sent (a note's words)."""


def _inflated(body: bytes, wbits: int, name: str) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, MAX_DECODED + 1)
    except zlib.error:
        raise _Undecodable(f"its {name} bytes do not decompress") from None
    if len(out) > MAX_DECODED or inflater.unconsumed_tail:
        raise _Undecodable(f"it is over {MAX_DECODED:,} bytes once decompressed")
    return out


def _gzip(body: bytes) -> bytes:
    return _inflated(body, 16 + zlib.MAX_WBITS, "gzip")


def _deflate(body: bytes) -> bytes:
    wrapped = len(body) > 1 and body[0] & 0x0F == 8 and (body[0] * 256 + body[1]) % 31 == 0
    return _inflated(body, zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS, "deflate")


def _zstd(body: bytes) -> bytes:
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        raise _Undecodable(
            "zstd needs the zstandard package (the harness's scan extra), not installed here"
        ) from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)) as reader:
            out = bytes(reader.read(MAX_DECODED + 1))
    except zstandard.ZstdError:
        raise _Undecodable("its zstd bytes do not decompress") from None
    if len(out) > MAX_DECODED:
        raise _Undecodable(f"it is over {MAX_DECODED:,} bytes once decompressed")
    return out


# Each content encoding the capture undoes, and how; another is kept as sent.
_DECODERS: Final[dict[str, Callable[[bytes], bytes]]] = {
    "gzip": _gzip,
    "x-gzip": _gzip,
    "deflate": _deflate,
    "zstd": _zstd,
}
_WHY_NOT: Final = {"br": "no dependency the harness declares decodes br (brotli)"}


def decoded_request(
    body: bytes, headers: Sequence[tuple[str, str]]
) -> tuple[bytes, list[tuple[str, str]], str | None]:
    """The body the capture judges and the headers it sees with it, and a note when a
    compressed body is kept as sent (see the module doc). `headers` are lower-cased pairs."""
    pairs = list(headers)
    encodings = [
        part.strip().lower()
        for name, value in pairs
        if name == _HEADER
        for part in value.split(",")
        if part.strip().lower() not in ("", "identity")
    ]
    if not encodings:
        return body, [(k, v) for k, v in pairs if k != _HEADER], None
    decoded = body
    try:
        for encoding in reversed(encodings):
            decoder = _DECODERS.get(encoding)
            if decoder is None:
                raise _Undecodable(
                    _WHY_NOT.get(encoding, f"the capture does not know the encoding {encoding!r}")
                )
            decoded = decoder(decoded)
    except _Undecodable as why:
        note = (
            f"a request body sent with content-encoding {', '.join(encodings)} is judged as"
            f" the bytes sent (opaque): {why}"
        )
        return body, pairs, note
    return decoded, [(k, v) for k, v in pairs if k != _HEADER], None
